import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { JobStore } from "@belay/contract";
import { allAuditRecords, auditTorture } from "./audit.js";
import type { Violation } from "./audit-journals.js";
import { drainTorture } from "./drain.js";
import { type Journal, newJournal } from "./journal.js";
import { FIXED_LIMIT, RACED_LIMITS, SHARED_SCHEDULES, TORTURE_QUEUES, type TortureClientConfig, type TortureSettings, runQueues, tortureSchedule } from "./plan.js";
import type { TortureSabotage } from "./sabotage.js";
import { sampleLimits } from "./sampler.js";

/** A started client process. */
export interface TortureClientHandle {
  /** Settles when the process has exited; `stderr` is what it printed there. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null; readonly stderr: string }>;
  kill(): void;
}

export interface TortureRunOptions {
  /** The parent's own store on the same database, migrated. */
  readonly store: JobStore;
  readonly settings: TortureSettings;
  /** A folder for the clients' journals. */
  readonly dir: string;
  /** Starts one client process running `runTortureClient` with `config` on its own store. */
  startClient(config: TortureClientConfig): TortureClientHandle;
  /** How long the clients may take to start before the first barrier. Default 2 s. */
  readonly startDelayMs?: number;
  /** Per client, a contract violation its store commits on purpose (proving the audit sees it). */
  readonly sabotage?: readonly (TortureSabotage | null)[];
}

export interface TortureReport {
  readonly settings: TortureSettings;
  readonly violations: readonly Violation[];
  readonly stats: Readonly<Record<string, number>>;
  readonly timings: { readonly raceMs: number; readonly drainMs: number; readonly auditMs: number; readonly totalMs: number };
}

/**
 * A torture run: `settings.clients` seeded client processes race every operation on one store
 * for `settings.durationMs`, a final worker drains every job to a terminal state, and the end
 * state is audited against every client's journal. The report lists every violation found.
 */
export async function runTorture(options: TortureRunOptions): Promise<TortureReport> {
  const { store, settings } = options;
  const began = Date.now();
  const setup: Journal = newJournal("setup");
  const now = Date.now();
  await store.setConcurrencyLimit({ queue: TORTURE_QUEUES.fixed, limit: FIXED_LIMIT, actor: "setup", now });
  setup.entries.push({ kind: "queue", lane: "setup", now, ack: Date.now(), actor: "setup", action: "setConcurrencyLimit", queue: TORTURE_QUEUES.fixed, limit: FIXED_LIMIT });
  // `raced` starts at its largest limit: from the first claim on, it is never unlimited.
  const limit = Math.max(...RACED_LIMITS);
  await store.setConcurrencyLimit({ queue: TORTURE_QUEUES.raced, limit, actor: "setup", now });
  setup.entries.push({ kind: "queue", lane: "setup", now, ack: Date.now(), actor: "setup", action: "setConcurrencyLimit", queue: TORTURE_QUEUES.raced, limit });
  for (const scheduleId of SHARED_SCHEDULES) {
    const at = Date.now();
    const result = await store.upsertSchedule({ schedule: tortureSchedule(scheduleId), now: at });
    setup.entries.push({ kind: "upsertSchedule", lane: "setup", now: at, ack: Date.now(), scheduleId, result });
  }

  const startAt = Date.now() + (options.startDelayMs ?? 2_000);
  const configs = Array.from({ length: settings.clients }, (_, index): TortureClientConfig => ({
    index,
    clients: settings.clients,
    seed: settings.seed,
    startAt,
    durationMs: settings.durationMs,
    journalPath: join(options.dir, `journal-${index}.json`),
    sabotage: options.sabotage?.[index] ?? null,
  }));
  const clients = configs.map((config) => options.startClient(config));
  const sampler = sampleLimits(store);
  const violations: Violation[] = [];
  const timeout = setTimeout(() => {
    for (const client of clients) client.kill();
  }, startAt - Date.now() + settings.durationMs + 60_000);
  const exits = await Promise.all(clients.map((c) => c.exited));
  clearTimeout(timeout);
  const samples = await sampler.stop();
  for (const [index, exit] of exits.entries()) {
    if (exit.code !== 0) violations.push({ check: "client", message: `client ${index} exited ${exit.code ?? exit.signal}: ${exit.stderr.trim().split("\n").slice(-8).join(" | ")}` });
  }
  const afterRace = { settings: await store.listQueueSettings(), audit: await allAuditRecords(store) };
  const raced = Date.now();

  const drain = await drainTorture(store, runQueues(settings.clients));
  const drained = Date.now();

  const journals: Journal[] = [setup, drain.journal];
  for (const config of configs) {
    if (existsSync(config.journalPath)) journals.push(JSON.parse(readFileSync(config.journalPath, "utf8")) as Journal);
    else violations.push({ check: "client", message: `client ${config.index} wrote no journal` });
  }
  const audit = await auditTorture({ store, journals, samples, afterRace, stuck: drain.stuck, clients: settings.clients });
  const ended = Date.now();
  return {
    settings,
    violations: [...violations, ...audit.violations],
    stats: { ...audit.stats, drainRounds: drain.rounds },
    timings: { raceMs: raced - began, drainMs: drained - raced, auditMs: ended - drained, totalMs: ended - began },
  };
}

/** A report for a log: timings, counts, and the violations grouped by check (the first few of each). */
export function formatTortureReport(name: string, report: TortureReport): string {
  const { settings, timings, stats, violations } = report;
  const lines = [
    `torture on ${name}: seed ${settings.seed}, ${settings.clients} clients × ${settings.durationMs} ms — race ${timings.raceMs} ms, drain ${timings.drainMs} ms, audit ${timings.auditMs} ms`,
    `  ${Object.entries(stats).map(([k, v]) => `${k}=${v}`).join(" ")}`,
  ];
  const byCheck = new Map<string, string[]>();
  for (const v of violations) (byCheck.get(v.check) ?? byCheck.set(v.check, []).get(v.check)!).push(v.message);
  for (const [check, messages] of byCheck) {
    lines.push(`  ✗ ${check}: ${messages.length}`);
    for (const message of messages.slice(0, 5)) lines.push(`      ${message}`);
  }
  if (violations.length > 0) lines.push(`  replay the clients' choices with BELAY_TORTURE_SEED=${settings.seed}`);
  return lines.join("\n");
}
