import { type Instant, type JobStore, TransientStoreError } from "@belay/contract";
import { MemoryStore } from "@belay/memory";
import { afterEach, describe, expect, it } from "vitest";
import { type Clock, Client, type Logger, type ObserverOptions, type TimerHandle, Worker, defineJob } from "../src/index.js";

// The observer dispatcher under the pumps' fault policy, on the memory store and virtual time.
// Time only moves when a test moves it; nothing here measures real time.

const T0 = Date.UTC(2026, 0, 1);

/** A clock that moves only when told to; timers fire in (due time, creation) order. */
class ManualClock implements Clock {
  #now: Instant = T0;
  #seq = 0;
  #timers: { at: Instant; seq: number; callback: () => void; cancelled: boolean }[] = [];

  now(): Instant {
    return this.#now;
  }

  setTimer(at: Instant, callback: () => void): TimerHandle {
    const timer = { at, seq: this.#seq++, callback, cancelled: false };
    this.#timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  nextTimerAt(): Instant | null {
    const live = this.#timers.filter((t) => !t.cancelled).map((t) => t.at);
    return live.length === 0 ? null : Math.min(...live);
  }

  set(at: Instant): void {
    this.#now = Math.max(this.#now, at);
  }

  fireDue(): number {
    const due = this.#timers.filter((t) => !t.cancelled && t.at <= this.#now).sort((a, b) => a.at - b.at || a.seq - b.seq);
    this.#timers = this.#timers.filter((t) => !t.cancelled && t.at > this.#now);
    for (const timer of due) timer.callback();
    return due.length;
  }
}

/** Log lines kept for assertions. */
function recordingLogger(lines: { level: string; message: string; fields: Record<string, unknown> }[]): Logger {
  const at = (level: string) => (message: string, fields: Record<string, unknown> = {}) => void lines.push({ level, message, fields });
  const logger: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => logger };
  return logger;
}

const job = defineJob({ name: "steady", handler: () => {} });

type Rig = Awaited<ReturnType<typeof rig>>;
let current: Rig | undefined;
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

/** A worker on the memory store and a manual clock, whose store calls a test may replace. */
async function rig(observers: readonly ObserverOptions[]) {
  const store = new MemoryStore();
  await store.migrate();
  const clock = new ManualClock();
  const logs: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const worker = new Worker({
    store,
    clock,
    jobs: [job],
    name: "t",
    pollIntervalMs: 1_000,
    maintenanceIntervalMs: 1_000,
    retention: { succeededOrCancelledMs: null, deadLetteredOrQuarantinedMs: null },
    logger: recordingLogger(logs),
    observers,
  });
  const client = new Client({ store, clock, actor: "test" });

  /** Lets every promise chain run and fires due timers until the worker is quiet. */
  const settle = async () => {
    for (let calm = 0, turns = 0; calm < 3; turns++) {
      if (turns > 10_000) throw new Error("the worker did not settle");
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (clock.fireDue() > 0 || worker.health().inflight > 0) calm = 0;
      else calm++;
    }
  };
  /** Moves virtual time forward by `ms`, stopping at every timer on the way. */
  const advance = async (ms: number) => {
    const target = clock.now() + ms;
    await settle();
    for (let next = clock.nextTimerAt(); next !== null && next <= target; next = clock.nextTimerAt()) {
      clock.set(next);
      await settle();
    }
    clock.set(target);
    await settle();
  };
  /** Advances in small steps until `done()` holds; fails past `limitMs` of virtual time. */
  const until = async (done: () => boolean, limitMs: number) => {
    const limit = clock.now() + limitMs;
    while (!done()) {
      if (clock.now() >= limit) throw new Error(`not reached within ${limitMs} ms of virtual time`);
      await advance(100);
    }
  };
  let stopped: Promise<void> | undefined;
  const stop = async () => {
    stopped ??= worker.stop({ timeoutMs: 1_000 });
    await advance(1_000);
    await stopped;
  };

  await worker.start();
  await settle();
  const result = { store: store as JobStore, clock, worker, client, logs, advance, until, stop };
  current = result;
  return result;
}

/** Replaces one store method; returns how often it was called. */
function replace<K extends "claimObserverDeliveries" | "reportObserverDeliveries">(
  store: JobStore,
  method: K,
  make: (real: JobStore[K], call: number) => JobStore[K],
): { calls: number } {
  const real = store[method].bind(store) as JobStore[K];
  const counter = { calls: 0 };
  (store as Record<K, JobStore[K]>)[method] = ((request: never) => {
    counter.calls++;
    return (make(real, counter.calls) as (request: never) => unknown)(request);
  }) as JobStore[K];
  return counter;
}

describe("observer dispatcher: the pumps' fault policy", () => {
  it("observers: a transient store fault marks the dispatcher degraded, backs off doubling, and recovers", async () => {
    const seen: string[] = [];
    let failures = 2;
    const r = await rig([{ id: "audit", states: ["succeeded"], handle: (d) => void seen.push(d.jobId) }]);
    const counter = replace(r.store, "claimObserverDeliveries", (real) => async (request) => {
      if (failures-- > 0) throw new TransientStoreError("database is busy");
      return real(request);
    });
    await r.advance(1_000); // the next round: its claim fails
    expect(counter.calls).toBe(1);
    let health = r.worker.health();
    expect(health.observers).toMatchObject({ status: "degraded", halted: null, ids: ["audit"] });
    expect(health.observers.lastError).toContain("database is busy");
    expect(health.status).toBe("degraded");
    expect(health.ready).toBe(true); // jobs are still taken
    expect(r.logs.some((l) => l.level === "warn" && l.message === "transient store fault" && l.fields["observerId"] === "audit")).toBe(true);

    // Backoff: 1 s (the pumps' minimum), then 2 s; no retry before it ends.
    await r.advance(999);
    expect(counter.calls).toBe(1);
    await r.advance(1);
    expect(counter.calls).toBe(2);
    expect(r.worker.health().observers.status).toBe("degraded");
    await r.advance(1_999);
    expect(counter.calls).toBe(2);
    await r.advance(1);
    expect(counter.calls).toBe(3);
    health = r.worker.health();
    expect(health.observers.status).toBe("running");
    expect(health.observers.lastError).toContain("database is busy"); // kept after recovery
    expect(health.status).toBe("running");

    const { id } = await r.client.enqueue(job, undefined);
    await r.advance(3_000);
    expect(seen).toEqual([id]);
    expect((await r.store.getObserver("audit"))?.pending).toBe(0);
  });

  it("observers: a transient fault while reporting retries the round; the transition is delivered at least once", async () => {
    const seen: string[] = [];
    const r = await rig([{ id: "audit", states: ["succeeded"], handle: (d) => void seen.push(d.jobId) }]);
    const reports = replace(r.store, "reportObserverDeliveries", (real, call) => async (request) => {
      if (call === 1) throw new TransientStoreError("connection reset");
      return real(request);
    });
    const { id } = await r.client.enqueue(job, undefined);
    await r.until(() => reports.calls >= 1, 10_000);
    expect(r.worker.health().observers.status).toBe("degraded");
    await r.until(() => reports.calls >= 2, 10_000);
    expect(reports.calls).toBeGreaterThanOrEqual(2);
    expect(r.worker.health().observers.status).toBe("running");
    expect(new Set(seen)).toEqual(new Set([id]));
    expect((await r.store.getObserver("audit"))?.pending).toBe(0);
  });

  it("observers: any other store fault stops the dispatcher, logged and in health, while the pumps keep running", async () => {
    const audit: string[] = [];
    const pager: string[] = [];
    const r = await rig([
      { id: "audit", states: ["succeeded"], handle: (d) => void audit.push(d.jobId) },
      { id: "pager", states: ["succeeded"], handle: (d) => void pager.push(d.jobId) },
    ]);
    const byObserver = new Map<string, number>();
    replace(r.store, "claimObserverDeliveries", (real) => async (request) => {
      byObserver.set(request.observerId, (byObserver.get(request.observerId) ?? 0) + 1);
      if (request.observerId === "audit") throw new Error("relation belay_observers does not exist");
      return real(request);
    });
    await r.advance(1_000);
    const health = r.worker.health();
    expect(health.observers.status).toBe("stopped");
    expect(health.observers.halted).toContain("does not exist");
    expect(health.observers.lastError).toContain("does not exist");
    expect(health.status).toBe("degraded");
    expect(health.ready).toBe(true);
    expect(health.groups.every((g) => g.status === "running")).toBe(true);
    const logged = r.logs.find((l) => l.level === "error" && l.message === "store fault: the observer dispatcher stops");
    expect(logged?.fields).toMatchObject({ operation: "claimObserverDeliveries", observerId: "audit" });

    // Fail-stop: neither observer claims again, however long the worker runs; jobs still do.
    const claimed = new Map(byObserver);
    const { id } = await r.client.enqueue(job, undefined);
    await r.advance(120_000);
    expect((await r.store.getJob(id))?.state).toBe("succeeded");
    expect(byObserver).toEqual(claimed);
    expect(audit).toEqual([]);
    expect(pager).toEqual([]);

    await r.stop();
    expect(r.worker.health().observers).toMatchObject({ status: "stopped", halted: expect.stringContaining("does not exist") });
  });

  it("observers: a failing callback is not a store fault: it is retried, then dead-lettered, and the dispatcher stays running", async () => {
    let calls = 0;
    const r = await rig([
      {
        id: "audit",
        states: ["succeeded"],
        retry: { maxAttempts: 2, delaysMs: [1_000] },
        handle: () => {
          calls++;
          throw new Error("webhook answered 500");
        },
      },
    ]);
    await r.client.enqueue(job, undefined);
    await r.advance(10_000);
    expect(calls).toBe(2);
    const deadLetters = await r.store.listObserverDeadLetters("audit");
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]!.error).toContain("webhook answered 500");
    expect(r.worker.health().observers).toMatchObject({ status: "running", halted: null, lastError: null });
    expect(r.worker.health().status).toBe("running");
  });
});
