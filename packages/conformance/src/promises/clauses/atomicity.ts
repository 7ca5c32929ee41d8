import type { PromiseStore } from "@belay/contract";
import { expect } from "vitest";
import { expectPromiseAtomic } from "../atomic.js";
import { promiseClauseNeedingStepHook } from "../clause.js";
import { LISTENER, MINUTE, T0, TARGET_TAGS, TTL, createPromise, createRequest, createTargeted, fencedCreate, holdTask, ok, suspend } from "../fixtures.js";
import type { PromiseSuiteContext } from "../suite-context.js";

// Each clause builds a store in which one request must write several records, faults it at
// every internal step it exposes (the store's step hook), and demands the snapshot read exactly
// as before — then that the request still succeeds.

/** `root` held at version 1 with children: `root:1` (targeted, acquired by w2) it is suspended on, and listeners. */
async function familyWithListeners(store: PromiseStore): Promise<void> {
  await holdTask(store, "root");
  await fencedCreate(store, "root", 1, createRequest("root:1", { tags: TARGET_TAGS }));
  await fencedCreate(store, "root", 1, createRequest("root:2"));
  expect((await suspend(store, "root", 1, ["root:1", "root:2"])).status).toBe(200);
  await ok(store, { kind: "task.acquire", id: "root:1", version: 0, pid: "w2", ttl: TTL });
  await ok(store, { kind: "promise.register_listener", awaited: "root:1", address: LISTENER });
  await ok(store, { kind: "promise.register_listener", awaited: "root:1", address: "poll://uni@clients/c2" });
  await createPromise(store, "root:1.1");
  await ok(store, { kind: "promise.register_callback", awaited: "root:1.1", awaiter: "root:1" });
}

export function promiseAtomicityClauses(ctx: PromiseSuiteContext): void {
  promiseClauseNeedingStepHook(ctx, "atomicity: task.fulfill — settling the promise, completing the task, resuming the awaiter, unblocking listeners and dropping callbacks is all or nothing", async () => {
    await expectPromiseAtomic(ctx, familyWithListeners, async (store) => {
      const answer = await store.handle({ kind: "task.fulfill", id: "root:1", version: 1, action: { kind: "promise.settle", id: "root:1", state: "resolved", value: { data: "eA==" } } }, T0 + 1);
      expect(answer.status).toBe(200);
    }, T0 + 1);
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: promise.settle with its whole chain is all or nothing", async () => {
    await expectPromiseAtomic(ctx, familyWithListeners, async (store) => {
      expect((await store.handle({ kind: "promise.settle", id: "root:1", state: "rejected_canceled" }, T0 + 1)).status).toBe(200);
    }, T0 + 1);
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: a timeout scan settling several deadlines, retrying a task and expiring a lease is all or nothing", async () => {
    await expectPromiseAtomic(
      ctx,
      async (store) => {
        await familyWithListeners(store);
        await createPromise(store, "lone", { timeoutAt: T0 + 10 });
        await createTargeted(store, "retry");
      },
      async (store) => {
        const result = await store.expireTimers({ now: T0 + 10 * MINUTE, max: 100 });
        expect(result.promisesTimedOut + result.tasksRetried + result.leasesExpired).toBeGreaterThan(0);
      },
      T0 + 10 * MINUTE,
    );
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: task.create of a new promise and its acquired task is all or nothing", async () => {
    await expectPromiseAtomic(ctx, async () => {}, async (store) => {
      expect((await store.handle({ kind: "task.create", pid: "w1", ttl: TTL, action: createRequest("root", { tags: TARGET_TAGS }) }, T0)).status).toBe(200);
    });
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: promise.create of a targeted promise with its task, timer and execute is all or nothing", async () => {
    await expectPromiseAtomic(ctx, async () => {}, async (store) => {
      expect((await store.handle(createRequest("p1", { tags: TARGET_TAGS }), T0)).status).toBe(200);
    });
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: task.suspend parking on several callbacks is all or nothing", async () => {
    await expectPromiseAtomic(
      ctx,
      async (store) => {
        await holdTask(store, "root");
        for (const id of ["root:1", "root:2", "root:3"]) await createPromise(store, id);
      },
      async (store) => {
        expect((await suspend(store, "root", 1, ["root:1", "root:2", "root:3"])).status).toBe(200);
      },
    );
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: a fenced create of a targeted child is all or nothing", async () => {
    await expectPromiseAtomic(ctx, (store) => holdTask(store, "root").then(() => undefined), async (store) => {
      expect((await store.handle({ kind: "task.fence", id: "root", version: 1, action: createRequest("root:1", { tags: TARGET_TAGS }) }, T0)).status).toBe(200);
    });
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: register_callback waking a suspended awaiter is all or nothing", async () => {
    await expectPromiseAtomic(
      ctx,
      async (store) => {
        await holdTask(store, "root");
        await createPromise(store, "root:1");
        await createPromise(store, "root:2");
        expect((await suspend(store, "root", 1, ["root:1"])).status).toBe(200);
        await ok(store, { kind: "promise.settle", id: "root:2", state: "resolved" });
      },
      async (store) => {
        expect((await store.handle({ kind: "promise.register_callback", awaited: "root:2", awaiter: "root" }, T0 + 1)).status).toBe(200);
      },
      T0 + 1,
    );
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: a read that makes a deadline permanent (promise.get past it) is all or nothing", async () => {
    await expectPromiseAtomic(ctx, familyWithListeners, async (store) => {
      expect((await store.handle({ kind: "promise.get", id: "root:2" }, T0 + 2 * 60 * MINUTE)).status).toBe(200);
    }, T0 + 2 * 60 * MINUTE);
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: fireSchedules of several schedules is all or nothing", async () => {
    const first = T0 + MINUTE;
    await expectPromiseAtomic(
      ctx,
      async (store) => {
        for (const id of ["a", "b"]) {
          await ok(store, { kind: "schedule.create", id, cron: "* * * * *", promiseId: "{{.id}}.{{.timestamp}}", promiseTimeout: MINUTE, promiseTags: TARGET_TAGS, nextRunAt: first });
        }
      },
      async (store) => {
        const results = await store.fireSchedules({
          firings: ["a", "b"].map((id) => ({ id, expectedNextRunAt: first, nextRunAt: first + MINUTE })),
          now: first,
        });
        expect(results.map((r) => r.status)).toEqual(["fired", "fired"]);
      },
      first,
    );
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: takeOutbox marking several messages is all or nothing", async () => {
    await expectPromiseAtomic(
      ctx,
      async (store) => {
        for (const id of ["a", "b", "c"]) await createTargeted(store, id);
      },
      async (store) => {
        expect(await store.takeOutbox({ now: T0, max: 10, leaseMs: MINUTE })).toHaveLength(3);
      },
      T0,
      1,
    );
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: acknowledgeOutbox of several messages is all or nothing", async () => {
    let deliveries: Awaited<ReturnType<PromiseStore["takeOutbox"]>> = [];
    await expectPromiseAtomic(
      ctx,
      async (store) => {
        for (const id of ["a", "b", "c"]) await createTargeted(store, id);
        deliveries = await store.takeOutbox({ now: T0, max: 10, leaseMs: MINUTE });
      },
      async (store) => {
        await store.acknowledgeOutbox({ deliveries });
        expect((await store.snapshot(T0)).outbox).toEqual([]);
      },
      T0,
      1,
    );
  });

  promiseClauseNeedingStepHook(ctx, "atomicity: task.release (pending, timer, execute) and task.halt (timer and execute dropped) are each all or nothing", async () => {
    await expectPromiseAtomic(ctx, (store) => holdTask(store, "p1").then(() => undefined), async (store) => {
      expect((await store.handle({ kind: "task.release", id: "p1", version: 1 }, T0 + 1)).status).toBe(200);
    }, T0 + 1);
    await expectPromiseAtomic(ctx, (store) => createTargeted(store, "p1").then(() => undefined), async (store) => {
      expect((await store.handle({ kind: "task.halt", id: "p1" }, T0 + 1)).status).toBe(200);
    }, T0 + 1);
  });
}
