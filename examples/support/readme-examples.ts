import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";

// The README convention: an HTML comment right before a fenced block marks it as a complete
// program that runs as written (see "Examples" in the repository README):
//
//   <!-- example: sqlite; prints "welcome u1"; runs until stopped -->
//   <!-- example: host; prints "welcoming"; runs until stopped; env BELAY_STORE=memory: | sqlite:./belay.db | postgres -->
//   <!-- example: testing; vitest -->
//
// Clauses, separated by ";": `prints "<text>"` (a line the example writes once its jobs ran; several
// `prints` clauses: each must appear, in any order),
// `runs until stopped` (a worker: it must keep running until SIGTERM, then exit 0; otherwise it
// must exit 0 on its own), `env NAME=value | value…` (one run per value; the value `postgres`
// stands for a fresh PostgreSQL database's URL, `sqlserver` for BELAY_TEST_MSSQL_URL: without it that
// run is left out with a warning), `vitest` (a test file, run with `vitest run`).

/** One marked example of a README. */
export interface ReadmeExample {
  readonly name: string;
  /** The README, relative to the repository root, and the line of its marker. */
  readonly readme: string;
  readonly line: number;
  readonly language: "ts" | "js";
  readonly code: string;
  /** What it writes once its jobs ran (stdout or stderr), each text somewhere in its output. */
  readonly prints: readonly string[];
  readonly runsUntilStopped: boolean;
  readonly runner: "node" | "vitest";
  /** `undefined`: one run without extra environment. */
  readonly env: { readonly name: string; readonly values: readonly string[] } | undefined;
}

/** A public (not private) package of `packages/*` or `apps/*`. */
export interface PublicPackage {
  readonly name: string;
  readonly dir: string;
  readonly json: Record<string, unknown>;
}

/** The public packages of `packages/*` (the libraries, each of whose READMEs marks an example). */
export function publicPackages(root: string, folder: "packages" | "apps" = "packages"): PublicPackage[] {
  return readdirSync(join(root, folder))
    .map((entry) => join(root, folder, entry))
    .filter((dir) => existsSync(join(dir, "package.json")))
    .map((dir) => ({ dir, json: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown> }))
    .filter(({ json }) => json["private"] !== true)
    .map(({ dir, json }) => ({ name: json["name"] as string, dir, json }));
}

const MARKER = /^<!--\s*example:\s*(.*?)\s*-->\s*$/;
const FENCE = /^```(ts|typescript|js|javascript|mjs)\s*$/;

function parseMarker(text: string, where: string): Omit<ReadmeExample, "readme" | "line" | "language" | "code"> {
  const [name, ...clauses] = text.split(";").map((c) => c.trim());
  if (!name || !/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new Error(`${where}: the example needs a kebab-case name first, got "${name}"`);
  const prints: string[] = [];
  let runsUntilStopped = false;
  let runner: "node" | "vitest" = "node";
  let env: ReadmeExample["env"];
  for (const clause of clauses) {
    const printed = /^prints\s+"(.+)"$/.exec(clause);
    const environment = /^env\s+([A-Z_][A-Z0-9_]*)=(.+)$/.exec(clause);
    if (printed) prints.push(printed[1]!);
    else if (clause === "runs until stopped") runsUntilStopped = true;
    else if (clause === "vitest") runner = "vitest";
    else if (environment) env = { name: environment[1]!, values: environment[2]!.split("|").map((v) => v.trim()) };
    else throw new Error(`${where}: unknown clause "${clause}" (known: prints "…", runs until stopped, env NAME=a | b, vitest)`);
  }
  if (runsUntilStopped && prints.length === 0) throw new Error(`${where}: an example that runs until stopped needs prints "…" (how to tell its jobs ran)`);
  return { name, prints, runsUntilStopped, runner, env };
}

/** The marked examples of one README (`path` relative to `root`). A marker without a fence right after it throws. */
export function examplesOf(root: string, path: string): ReadmeExample[] {
  const lines = readFileSync(join(root, path), "utf8").split("\n");
  const found: ReadmeExample[] = [];
  let inFence = false; // a marker quoted inside another code block is text, not a marker
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.startsWith("```")) inFence = !inFence;
    const marker = inFence ? null : MARKER.exec(lines[i]!);
    if (!marker) continue;
    const where = `${path}:${i + 1}`;
    const fence = FENCE.exec(lines[i + 1] ?? "");
    if (!fence) throw new Error(`${where}: an example marker must sit right before a \`\`\`ts or \`\`\`js fence`);
    const end = lines.findIndex((line, at) => at > i + 1 && line.startsWith("```"));
    if (end < 0) throw new Error(`${where}: the example's fence is never closed`);
    const language = fence[1]!.startsWith("t") ? "ts" : "js";
    found.push({ ...parseMarker(marker[1]!, where), readme: path, line: i + 1, language, code: `${lines.slice(i + 2, end).join("\n")}\n` });
    i = end;
  }
  return found;
}

/** The examples of the repository README and of every public package's README. */
export function readmeExamples(root: string): { examples: ReadmeExample[]; readmes: string[] } {
  const readmes = ["README.md", ...publicPackages(root).map((p) => join(relative(root, p.dir), "README.md"))];
  const examples = readmes.filter((r) => existsSync(join(root, r))).flatMap((r) => examplesOf(root, r));
  return { examples, readmes };
}

/** Every package this repository publishes: the public packages of `packages/*` and `apps/*` (the CLIs). */
export function publishedPackages(root: string): PublicPackage[] {
  return [...publicPackages(root, "packages"), ...publicPackages(root, "apps")];
}

/**
 * The packages a README's install lines name (`pnpm add`, `npm install`, `npm i`, `yarn add` in a
 * shell block, also after a `# or:`), without versions and flags, in order.
 */
export function installedByReadme(root: string, path: string): string[] {
  const names: string[] = [];
  let inShell = false;
  for (const line of readFileSync(join(root, path), "utf8").split("\n")) {
    if (line.startsWith("```")) {
      inShell = !inShell && /^```(sh|bash|shell|console)\s*$/.test(line);
      continue;
    }
    if (!inShell) continue;
    for (const command of line.matchAll(/(?:pnpm add|npm install|npm i|yarn add)((?:\s+[^\s#]+)+)/g)) {
      for (const arg of command[1]!.trim().split(/\s+/)) {
        if (arg.startsWith("-")) continue;
        const name = arg.replace(/^(@?[^@]+)@.*$/, "$1");
        if (!names.includes(name)) names.push(name);
      }
    }
  }
  return names;
}

/** The packages an example imports (bare specifiers, as package names; `node:` builtins left out). */
export function importedByExample(example: ReadmeExample): string[] {
  const code = example.code.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[\s;{}])\/\/.*$/gm, "$1");
  const names = new Set<string>();
  for (const match of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)["']([^"'.][^"']*)["']/g)) {
    const specifier = match[1]!;
    if (specifier.startsWith("node:")) continue;
    names.add(specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!);
  }
  return [...names];
}
