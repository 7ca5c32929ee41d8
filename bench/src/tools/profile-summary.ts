// Summarises V8 .cpuprofile files (from `pnpm bench --cpu-prof`): self time by function and by
// area (Belay core, Belay postgres/sqlite, pg driver, peers, node internals, GC, idle).
//   pnpm --filter @belay/bench exec tsx src/tools/profile-summary.ts <file.cpuprofile|folder> [--top 30]
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const topIdx = args.indexOf("--top");
const TOP = topIdx >= 0 ? Number(args[topIdx + 1]) : 30;
const inputs = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--top");
const files = inputs.flatMap((p) => (statSync(p).isDirectory() ? readdirSync(p).filter((f) => f.endsWith(".cpuprofile")).map((f) => join(p, f)) : [p]));

function area(url: string, fn: string): string {
  if (fn === "(idle)") return "idle";
  if (fn === "(garbage collector)") return "GC";
  if (fn === "(program)") return "V8 (program)";
  if (url.includes("/packages/core/")) return "@belay/core";
  if (url.includes("/packages/contract/")) return "@belay/contract";
  if (url.includes("/packages/postgres/")) return "@belay/postgres";
  if (url.includes("/packages/sqlite/")) return "@belay/sqlite";
  const m = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.startsWith("node:")) return "node internals";
  if (url === "") return `native (${fn || "anonymous"})`;
  return url.replace(/^file:\/\//, "").split("/").slice(-2).join("/");
}

for (const file of files) {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const byFn = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    const short = url.replace(/^file:\/\//, "").replace(/.*node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?/, "").replace(/.*\/work\/main\//, "");
    const key = `${functionName || "(anonymous)"} ${short ? `${short}:${lineNumber + 1}` : ""}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
    const a = area(url, functionName);
    byArea.set(a, (byArea.get(a) ?? 0) + us);
  }
  const busy = total - (byArea.get("idle") ?? 0);
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1)}%`;
  console.log(`\n## ${file}\n\nwall ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s (percentages of busy time)\n`);
  console.log("| area | self ms | % |\n|---|---:|---:|");
  for (const [a, us] of [...byArea.entries()].filter(([a]) => a !== "idle").sort((x, y) => y[1] - x[1]).slice(0, 15)) console.log(`| ${a} | ${Math.round(us / 1000)} | ${pct(us)} |`);
  console.log(`\n| function (top ${TOP} by self time) | self ms | % |\n|---|---:|---:|`);
  for (const [k, us] of [...byFn.entries()].filter(([k]) => !k.startsWith("(idle)")).sort((x, y) => y[1] - x[1]).slice(0, TOP)) console.log(`| ${k.replaceAll("|", "\\|")} | ${Math.round(us / 1000)} | ${pct(us)} |`);
}
