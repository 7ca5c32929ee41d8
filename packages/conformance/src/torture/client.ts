import { writeFileSync } from "node:fs";
import { type ClaimRequest, type ClaimedJob, type JobStore, SeededRandom, isBelayError } from "@belay/contract";
import { barrierLane, producerLane } from "./client-producer.js";
import { maintenanceLane, operatorLane } from "./client-operator.js";
import { workerLane } from "./client-worker.js";
import { type Journal, type JournalEntry, newJournal } from "./journal.js";
import type { TortureClientConfig } from "./plan.js";
import { sabotaged } from "./sabotage.js";

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** A call's answer with the instant it was made with and the wall clock when it came back. */
export interface Answered<T> {
  readonly value: T;
  readonly now: number;
  readonly ack: number;
}

/** Ids one client knows to exist (for parents, cancels and stray writes), the newest few hundred. */
export class KnownIds {
  readonly #ids: string[] = [];
  readonly #limit: number;

  constructor(limit = 400) {
    this.#limit = limit;
  }

  add(...ids: string[]): void {
    this.#ids.push(...ids);
    if (this.#ids.length > this.#limit) this.#ids.splice(0, this.#ids.length - this.#limit);
  }

  pick(rng: SeededRandom): string | null {
    return this.#ids.length === 0 ? null : rng.pick(this.#ids);
  }

  /** Up to `n` distinct known ids. */
  some(rng: SeededRandom, n: number): string[] {
    const picked = new Set<string>();
    for (let i = 0; i < n * 3 && picked.size < n; i++) {
      const id = this.pick(rng);
      if (id !== null) picked.add(id);
    }
    return [...picked];
  }
}

/** What every lane of one client shares. */
export class ClientContext {
  readonly store: JobStore;
  readonly config: TortureClientConfig;
  readonly journal: Journal;
  readonly deadline: number;
  readonly known = new KnownIds();
  /** Ids this client created (only it requeues them, at most once each). */
  readonly createdByMe = new Set<string>();
  /** Workflows this client created. */
  readonly workflows: string[] = [];
  readonly #counters = new Map<string, number>();

  constructor(store: JobStore, config: TortureClientConfig) {
    this.store = store;
    this.config = config;
    this.journal = newJournal(`c${config.index}`);
    this.deadline = config.startAt + config.durationMs;
  }

  get index(): number {
    return this.config.index;
  }

  /** The actor this client's operator actions are audited under. */
  get actor(): string {
    return `c${this.config.index}`;
  }

  running(): boolean {
    return Date.now() < this.deadline;
  }

  /** A seeded source for one lane: the same seed gives each lane the same choices. */
  random(lane: number): SeededRandom {
    return SeededRandom.derive(this.config.seed, this.config.index * 64 + lane);
  }

  /** A fresh id in this client's namespace, e.g. `c3-j17`. */
  ownId(kind: string): string {
    const n = this.#counters.get(kind) ?? 0;
    this.#counters.set(kind, n + 1);
    return `c${this.config.index}-${kind}${n}`;
  }

  record(entry: JournalEntry): void {
    this.journal.entries.push(entry);
  }

  anomaly(lane: string, op: string, message: string): void {
    const now = Date.now();
    this.record({ kind: "anomaly", lane, op, message, now, ack: now });
  }

  /**
   * Runs one store call, timed. A `TransientStoreError` (nothing committed) is retried with a
   * fresh `now`; any other error is journaled as an anomaly (the contract types every error a
   * valid request can meet) and answers `null`.
   */
  async call<T>(lane: string, op: string, action: (now: number) => Promise<T>, clock: () => number = Date.now): Promise<Answered<T> | null> {
    const { journal } = this;
    journal.calls[op] = (journal.calls[op] ?? 0) + 1;
    const started = Date.now();
    const timed = () => {
      const ms = Date.now() - started;
      journal.millis[op] = (journal.millis[op] ?? 0) + ms;
      journal.slowest[op] = Math.max(journal.slowest[op] ?? 0, ms);
    };
    for (let tries = 0; ; tries++) {
      const now = clock();
      try {
        const value = await action(now);
        timed();
        return { value, now, ack: Date.now() };
      } catch (error) {
        if (isBelayError(error, "BELAY_TRANSIENT_STORE") && tries < 200) {
          journal.transient[op] = (journal.transient[op] ?? 0) + 1;
          await sleep(2 + (tries % 10));
          continue;
        }
        timed();
        const code = (error as { code?: unknown }).code;
        this.anomaly(lane, op, `${String(code ?? (error as Error).name)}: ${(error as Error).message}`);
        return null;
      }
    }
  }

  /** A claim for `lane` made as {@link call} makes it, its handed-out leases journaled; `null` as there. */
  async claim(lane: string, request: Omit<ClaimRequest, "now">): Promise<Answered<readonly ClaimedJob[]> | null> {
    const claimed = await this.call(lane, "claim", (now) => this.store.claim({ ...request, now }));
    if (claimed === null) return null;
    const { workerId, queues, leaseMs } = request;
    const { jobs } = claimed.value;
    this.record({
      kind: "claim",
      lane,
      workerId,
      queues,
      leaseMs,
      now: claimed.now,
      ack: claimed.ack,
      jobs: jobs.map((j) => ({ id: j.id, attempt: j.attempt, queue: j.queue, releases: j.releases, leaseExpiresAt: j.leaseExpiresAt })),
    });
    return { ...claimed, value: jobs };
  }
}

/**
 * One torture client: migrates (racing its siblings), waits for the common start instant, then
 * runs its lanes — producer, duplicate-pool barrier, two workers, operator, maintenance — until
 * the deadline, and writes its journal. Throws (after writing the journal) if a lane crashed.
 */
export async function runTortureClient(store: JobStore, config: TortureClientConfig): Promise<Journal> {
  const ctx = new ClientContext(config.sabotage === null ? store : sabotaged(store, config.sabotage), config);
  try {
    await ctx.call("setup", "migrate", () => store.migrate());
    await sleep(config.startAt - Date.now());
    await Promise.all([producerLane(ctx), barrierLane(ctx), workerLane(ctx, 0), workerLane(ctx, 1), operatorLane(ctx), maintenanceLane(ctx)]);
  } catch (error) {
    ctx.journal.failure = (error as Error).stack ?? String(error);
  }
  writeFileSync(config.journalPath, JSON.stringify(ctx.journal));
  if (ctx.journal.failure !== null) throw new Error(`torture client ${config.index} crashed:\n${ctx.journal.failure}`);
  return ctx.journal;
}
