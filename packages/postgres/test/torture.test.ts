import { fork } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import {
  SABOTAGE_CHECKS, type TortureClientConfig, type TortureClientHandle, type TortureSabotage, formatTortureReport, runTorture,
  tortureSettings,
} from "@belay/conformance";
import { describe, expect, it } from "vitest";
import { pgTarget, testDatabase } from "./pg-target.js";
import { fixtureScript } from "./support/bundle.js";
import { testDir } from "../../../tests/support/fixtures.mjs";

// The torture suite on a real PostgreSQL: seeded client processes (8 by default), each with its
// own pool and LISTEN connection, race every operation — duplicate-id pools on a barrier,
// batches, workflows, claims and outcomes (some stale on purpose), heartbeats (some stray),
// releases, abandoned leases, expiry sweeps, pause and limit races, cancels, requeues, schedule
// minting and triggers, each client's probes of a queue of its own — then a drain and an audit of
// the end state against every client's journal. A second run sabotages each client's store a
// different way and requires the audit to notice every sabotage. BELAY_TORTURE_SEED replays a
// seed's choices, BELAY_TORTURE_MS races longer (default 8 s).

const target = await pgTarget("torture.test.ts");
const url = target.url;
const settings = tortureSettings();
const dir = testDir("belay-postgres-torture-");

/** Starts a torture client process on `schema`. */
function startClient(script: string, schema: string, config: TortureClientConfig): TortureClientHandle {
  const child = fork(script, [url!, schema, JSON.stringify(config)], { execArgv: [], stdio: ["ignore", "inherit", "pipe", "ipc"] });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: string | null; stderr: string }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal, stderr })),
  );
  return { exited, kill: () => child.kill("SIGKILL") };
}

describe.skipIf(url === undefined)(`postgres: torture (${target.reason})`, () => {
  const fixture = fixtureScript("torture-client");
  const { migratedStore } = testDatabase(target);

  it("seeded clients race every operation on one schema; the drained end state passes the audit", async () => {
    const { store, schema } = await migratedStore("torture");
    console.info(`[torture] postgres seed ${settings.seed} (replay with BELAY_TORTURE_SEED=${settings.seed})`);
    const report = await runTorture({ store, settings, dir: mkdtempSync(join(dir, "run-")), startClient: (config) => startClient(fixture.script, schema, config) });
    console.info(formatTortureReport("postgres", report));
    await store.close();
    expect(report.violations, `torture seed ${settings.seed}: replay with BELAY_TORTURE_SEED=${settings.seed}`).toEqual([]);
  }, settings.durationMs + 180_000);

  it("the audit notices a store that breaks the contract (each client's store sabotaged a different way)", async () => {
    const { store, schema } = await migratedStore("sabotaged");
    const sabotage = Object.keys(SABOTAGE_CHECKS) as TortureSabotage[];
    const short = { ...settings, durationMs: 3_000, clients: sabotage.length };
    const report = await runTorture({
      store,
      settings: short,
      dir: mkdtempSync(join(dir, "sabotaged-")),
      sabotage,
      startClient: (config) => startClient(fixture.script, schema, config),
    });
    await store.close();
    const found = new Set(report.violations.map((v) => v.check));
    const missed = sabotage.filter((s) => !found.has(SABOTAGE_CHECKS[s]));
    expect(missed, `sabotages the audit did not notice (seed ${settings.seed}); it found: ${[...found].join(", ")}`).toEqual([]);
  }, 120_000);
});
