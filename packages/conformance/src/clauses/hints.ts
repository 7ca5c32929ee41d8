import type { JobStore } from "@belay/contract";
import { expect } from "vitest";
import { clauseNeeding } from "../clause.js";
import { T0, enqueueJobs, expectBelayError, newJob } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

// Hints are lossy by contract, so no clause asserts that one is absent at a given moment. What a
// store declaring them must do: tell its own listeners, after its own commit, that a job became
// due on a queue; stop calling a listener once it unsubscribed; never let a listener fail a write.

/**
 * How long the suite waits for a hint before it calls it lost (PostgreSQL delivers NOTIFY over a
 * socket): a deadline, generous so that a loaded machine is not mistaken for a loss.
 */
const HINT_DEADLINE_MS = 30_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Listener {
  readonly heard: string[];
  readonly unsubscribe: () => void;
  /** Resolves `true` once `queue` was heard, `false` at the deadline. */
  until(queue: string): Promise<boolean>;
}

function listen(store: JobStore, onHint: (queue: string) => void = () => {}): Listener {
  const heard: string[] = [];
  const unsubscribe = store.subscribeHints!((queue) => {
    heard.push(queue);
    onHint(queue);
  });
  return {
    heard,
    unsubscribe,
    async until(queue) {
      const deadline = Date.now() + HINT_DEADLINE_MS;
      while (!heard.includes(queue)) {
        if (Date.now() > deadline) return false;
        await sleep(10);
      }
      return true;
    },
  };
}

/** A store without the capability refuses (or lacks) `subscribeHints`, loudly. */
async function refused(ctx: SuiteContext): Promise<void> {
  const store = await ctx.store();
  if (store.subscribeHints === undefined) return;
  await expectBelayError(async () => store.subscribeHints!(() => {}), "BELAY_CAPABILITY_NOT_SUPPORTED");
}

/**
 * A hints clause: `body` gets a fresh store and `subscribe`, which adds a listener to it; every
 * listener is unsubscribed once the body ends, however it ends. A store without the capability
 * must refuse (or lack) `subscribeHints` instead.
 */
function hintClause(
  ctx: SuiteContext,
  title: string,
  body: (store: JobStore, subscribe: (onHint?: (queue: string) => void) => Listener) => Promise<void>,
): void {
  clauseNeeding(
    ctx,
    "wakeUpHints",
    title,
    async () => {
      const store = await ctx.store();
      const listeners: Listener[] = [];
      try {
        await body(store, (onHint) => {
          const listener = listen(store, onHint);
          listeners.push(listener);
          return listener;
        });
      } finally {
        for (const listener of listeners) listener.unsubscribe();
      }
    },
    () => refused(ctx),
  );
}

export function hintClauses(ctx: SuiteContext): void {
  hintClause(ctx, "hints: a job enqueued due now is hinted to every listener of the store, naming its queue", async (store, subscribe) => {
    const first = subscribe();
    const second = subscribe();
    await enqueueJobs(store, [newJob("j1", { queue: "hinted" })]);
    expect(await first.until("hinted"), "the first listener hears the queue").toBe(true);
    expect(await second.until("hinted"), "the second listener hears the queue").toBe(true);
    expect(first.heard.every((q) => q === "hinted"), "only queues that received work").toBe(true);
  });

  hintClause(
    ctx,
    "hints: an unsubscribed listener is never called again, a second unsubscribe is harmless, and other listeners still hear",
    async (store, subscribe) => {
      const gone = subscribe();
      const kept = subscribe();
      await enqueueJobs(store, [newJob("j1", { queue: "before" })]);
      expect(await gone.until("before")).toBe(true);
      expect(await kept.until("before")).toBe(true);
      gone.unsubscribe();
      gone.unsubscribe();
      const heardBefore = gone.heard.length;
      await enqueueJobs(store, [newJob("j2", { queue: "after" })], T0 + 1);
      // Once the kept listener heard the later hint, the removed one would have heard it too.
      expect(await kept.until("after")).toBe(true);
      expect(gone.heard.slice(heardBefore), "nothing reaches a removed listener").toEqual([]);
    },
  );

  hintClause(ctx, "hints: a listener that throws fails no write and keeps no other listener from hearing", async (store, subscribe) => {
    const throwing = subscribe(() => {
      throw new Error("listener bug");
    });
    const kept = subscribe();
    const [result] = await store.enqueue({ jobs: [newJob("j1", { queue: "hinted" })], now: T0 });
    expect(result).toMatchObject({ status: "created" });
    expect(await kept.until("hinted")).toBe(true);
    expect(await throwing.until("hinted")).toBe(true);
    await enqueueJobs(store, [newJob("j2", { queue: "again" })], T0 + 1);
    expect(await kept.until("again"), "the store still sends hints after a listener threw").toBe(true);
    expect(await store.getJob("j1")).toMatchObject({ state: "scheduled" });
  });
}
