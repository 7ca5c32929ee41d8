import type { JobStore, ObserverDelivery, ScheduleDefinition } from "@belay/contract";
import { expect } from "vitest";
import { clauseGranted, clauseNeeding } from "../clause.js";
import { LEASE, MINUTE, SECOND, T0, claimJobs, enqueueJobs, leaseJob, newJob, report } from "../fixtures.js";
import { expectAtomic } from "../interleaving.js";
import { snapshot } from "../snapshot.js";
import type { SuiteContext } from "../suite-context.js";

// Each clause builds a store in which one operation must write several records, then faults the
// operation at every internal step it exposes and demands the store read exactly as before.

const HOUR = 60 * MINUTE;

const SCHEDULE: ScheduleDefinition = {
  id: "nightly",
  cron: "* * * * *",
  timeZone: "UTC",
  jobName: "report.build",
  queue: "reports",
  payload: '{"kind":"nightly"}',
  tags: [{ key: "", value: "scheduled" }],
  catchUp: "skip",
  noOverlap: false,
};

async function upsertSchedule(store: JobStore): Promise<void> {
  expect(await store.upsertSchedule({ schedule: SCHEDULE, now: T0 })).toEqual({ status: "created", cursor: T0 });
}

/** Claims every due job of `queues` at `now` and asserts exactly `ids` were claimed. */
async function claimExactly(store: JobStore, ids: readonly string[], now = T0, queues: readonly string[] = ["default"]) {
  const claimed = await claimJobs(store, { queues, now });
  expect(claimed.map((j) => j.id).sort()).toEqual([...ids].sort());
  return claimed;
}

/** The leases {@link leaseThree} hands worker `w1`, each at its first attempt: a fresh list per call, so that nothing a store keeps or changes of one request reaches the next. */
const threeLeases = () => ["a", "b", "c"].map((jobId) => ({ jobId, attempt: 1 }));

/** Enqueues jobs `a`, `b` and `c` and claims all three for worker `w1` at T0. */
async function leaseThree(store: JobStore): Promise<void> {
  await enqueueJobs(store, [newJob("a"), newJob("b"), newJob("c")]);
  await claimExactly(store, ["a", "b", "c"]);
}

export function atomicityClauses(ctx: SuiteContext): void {
  clauseNeeding(ctx, "stepHook", "atomicity: enqueue of several jobs with parents, tags and awaiting children is all or nothing", async () => {
    await expectAtomic(
      ctx,
      async (store) => {
        await enqueueJobs(store, [newJob("old-parent")]);
      },
      async (store) => {
        const results = await store.enqueue({
          jobs: [
            newJob("a", { tags: [{ key: "", value: "urgent" }, { key: "tenant", value: "acme" }] }),
            newJob("b", { parentIds: ["a"], tags: [{ key: "tenant", value: "acme" }] }),
            newJob("c", { parentIds: ["old-parent", "a"], dependencyMode: "onAnyTerminal" }),
          ],
          now: T0,
        });
        expect(results.map((r) => (r.status === "created" ? r.state : r.status))).toEqual([
          "scheduled",
          "awaitingParents",
          "awaitingParents",
        ]);
      },
    );
  });

  clauseNeeding(ctx, "stepHook", "atomicity: enqueueWorkflow of a three-job graph is all or nothing", async () => {
    await expectAtomic(
      ctx,
      async () => {},
      async (store) => {
        const result = await store.enqueueWorkflow({
          workflow: {
            id: "wf",
            name: "etl",
            jobs: [
              newJob("load", { parentIds: ["extract", "transform"] }),
              newJob("transform", { parentIds: ["extract"], tags: [{ key: "step", value: "t" }] }),
              newJob("extract", { tags: [{ key: "step", value: "e" }] }),
            ],
          },
          now: T0,
        });
        expect(result).toMatchObject({ status: "created" });
      },
    );
  });

  clauseNeeding(ctx, "stepHook", "atomicity: a claim of several jobs across two queues is all or nothing", async () => {
    await expectAtomic(
      ctx,
      async (store) => {
        await enqueueJobs(store, [
          newJob("q1a", { queue: "q1" }),
          newJob("q1b", { queue: "q1" }),
          newJob("q2a", { queue: "q2" }),
          newJob("q2b", { queue: "q2" }),
        ]);
      },
      async (store) => {
        const { jobs } = await store.claim({ workerId: "w1", queues: ["q1", "q2"], max: 32, leaseMs: LEASE, now: T0 });
        expect(jobs.map((j) => j.id).sort()).toEqual(["q1a", "q1b", "q2a", "q2b"]);
      },
    );
  });

  clauseNeeding(
    ctx,
    "stepHook",
    "atomicity: a batch of outcomes releasing a child, cascading a dead letter and adding tags and output is all or nothing",
    async () => {
      const steps = await expectAtomic(
        ctx,
        async (store) => {
          await enqueueJobs(store, [
            newJob("p1"),
            newJob("p2"),
            newJob("c1", { parentIds: ["p1"] }),
            newJob("c2", { parentIds: ["p2"] }),
            newJob("g2", { parentIds: ["c2"] }),
          ]);
          await claimExactly(store, ["p1", "p2"]);
        },
        async (store) => {
          const results = await store.reportOutcomes({
            reports: [
              {
                jobId: "p1",
                workerId: "w1",
                attempt: 1,
                outcome: { type: "succeeded", output: '{"rows":42}' },
                addTags: [{ key: "result", value: "ok" }],
              },
              {
                jobId: "p2",
                workerId: "w1",
                attempt: 1,
                outcome: { type: "failed", retryAt: null, failureDetail: "Error: boom" },
                addTags: [{ key: "", value: "exploded" }],
              },
            ],
            now: T0 + SECOND,
          });
          expect(results).toEqual([
            { jobId: "p1", attempt: expect.any(Number), status: "applied", state: "succeeded" },
            { jobId: "p2", attempt: expect.any(Number), status: "applied", state: "deadLettered" },
          ]);
        },
      );
      expect(steps, "internal steps of a two-outcome batch with cascades").toBeGreaterThanOrEqual(3);
    },
  );

  clauseNeeding(ctx, "stepHook", "atomicity: expireLeases disposing of several leases, one at the ceiling with children, is all or nothing", async () => {
    const retry = { maxAttempts: 2, delaysMs: [10 * SECOND] };
    await expectAtomic(
      ctx,
      async (store) => {
        await enqueueJobs(store, [newJob("x"), newJob("y"), newJob("z"), newJob("zc", { parentIds: ["z"] })]);
        const claimed = await claimExactly(store, ["x", "y", "z"]);
        // z fails once and is claimed again: its second lease is at the ceiling.
        const z = claimed.find((j) => j.id === "z")!;
        expect(await report(store, z, { type: "failed", retryAt: T0 + 1 }, T0)).toMatchObject({ status: "applied" });
        await claimExactly(store, ["z"], T0 + 1);
      },
      async (store) => {
        const { expired } = await store.expireLeases({ now: T0 + 2 * LEASE, max: 32, retry });
        expect(Object.fromEntries(expired.map((e) => [e.jobId, e.state]))).toEqual({
          x: "scheduled",
          y: "scheduled",
          z: "deadLettered",
        });
      },
    );
  });

  clauseNeeding(ctx, "stepHook", "atomicity: a release of several leases is all or nothing", async () => {
    await expectAtomic(ctx, leaseThree, async (store) => {
      const results = await store.release({ workerId: "w1", leases: threeLeases(), now: T0 + SECOND });
      expect(results.map((r) => r.status)).toEqual(["released", "released", "released"]);
    });
  });

  clauseNeeding(ctx, "stepHook", "atomicity: a heartbeat renewing several leases is all or nothing", async () => {
    await expectAtomic(ctx, leaseThree, async (store) => {
      const results = await store.heartbeat({ workerId: "w1", leases: threeLeases(), leaseMs: LEASE, now: T0 + 10 * SECOND });
      expect(results.map((r) => r.status)).toEqual(["renewed", "renewed", "renewed"]);
    });
  });

  clauseNeeding(ctx, "stepHook", "atomicity: mintDue minting several ticks and recording skipped ticks is all or nothing", async () => {
    await expectAtomic(ctx, upsertSchedule, async (store) => {
      const [result] = await store.mintDue({
        decisions: [
          {
            scheduleId: SCHEDULE.id,
            expectedCursor: T0,
            newCursor: T0 + 5 * MINUTE,
            mint: [T0 + 3 * MINUTE, T0 + 4 * MINUTE, T0 + 5 * MINUTE],
            skip: [T0 + MINUTE, T0 + 2 * MINUTE],
          },
        ],
        now: T0 + 5 * MINUTE,
      });
      expect(result).toMatchObject({ status: "minted" });
      expect(result?.status === "minted" ? result.jobIds : []).toHaveLength(3);
    });
  });

  // An operator's write changes what it names and appends its audit record, in one transaction.
  const audited: readonly (readonly [string, (store: JobStore) => Promise<void>, (store: JobStore) => Promise<void>])[] = [
    [
      "an operator's enqueue writes its jobs and their audit records together",
      async () => {},
      async (store) => {
        const results = await store.enqueue({ jobs: [newJob("a"), newJob("b")], now: T0, actor: "alice" });
        expect(results.map((r) => r.status)).toEqual(["created", "created"]);
      },
    ],
    [
      "an audited schedule redefinition writes the schedule and its audit record together",
      upsertSchedule,
      async (store) => {
        const result = await store.upsertSchedule({ schedule: { ...SCHEDULE, queue: "elsewhere" }, now: T0 + MINUTE, actor: "alice" });
        expect(result).toEqual({ status: "updated", cursor: T0 });
      },
    ],
    [
      "triggerSchedule writes its job and its audit record together",
      upsertSchedule,
      async (store) => {
        const result = await store.triggerSchedule({ scheduleId: SCHEDULE.id, jobId: "nightly-manual-1", actor: "alice", now: T0 + MINUTE });
        expect(result).toEqual({ status: "triggered", jobId: "nightly-manual-1" });
      },
    ],
    [
      "cancelling a parent writes the job, its cascade and the audit record together",
      async (store) => {
        await enqueueJobs(store, [
          newJob("p"),
          newJob("c1", { parentIds: ["p"] }),
          newJob("c2", { parentIds: ["p"] }),
          newJob("g", { parentIds: ["c1"] }),
        ]);
      },
      async (store) => expect(await store.cancelJob({ jobId: "p", actor: "alice", now: T0 + SECOND })).toEqual({ status: "cancelled" }),
    ],
    [
      "requeueJob writes the job and its audit record together",
      async (store) => {
        const job = await leaseJob(store, "dead");
        expect(await report(store, job, { type: "failed", retryAt: null, failureDetail: "boom" })).toMatchObject({ state: "deadLettered" });
      },
      async (store) => expect(await store.requeueJob({ jobId: "dead", actor: "alice", now: T0 + MINUTE })).toEqual({ status: "requeued" }),
    ],
    [
      "setConcurrencyLimit writes the queue settings and the audit record together",
      async (store) => void (await enqueueJobs(store, [newJob("a", { queue: "mail" })])),
      async (store) => {
        expect(await store.setConcurrencyLimit({ queue: "mail", limit: 3, actor: "ops", now: T0 + SECOND })).toEqual({ status: "applied" });
      },
    ],
    [
      "pauseQueue writes the queue settings and the audit record together",
      async (store) => {
        expect(await store.setConcurrencyLimit({ queue: "mail", limit: 2, actor: "ops", now: T0 })).toEqual({ status: "applied" });
      },
      async (store) => expect(await store.pauseQueue({ queue: "mail", actor: "ops", now: T0 + SECOND })).toEqual({ status: "applied" }),
    ],
  ];
  for (const [title, setup, operation] of audited) {
    clauseNeeding(ctx, "stepHook", `atomicity: ${title}`, async () => void (await expectAtomic(ctx, setup, operation)));
  }

  clauseNeeding(
    ctx,
    "stepHook",
    "atomicity: purgeTerminal of several jobs with tags, transitions, output and a drained workflow is all or nothing",
    async () => {
      await expectAtomic(
        ctx,
        async (store) => {
          await enqueueJobs(store, [
            newJob("j1", { tags: [{ key: "", value: "nightly" }] }),
            newJob("j2", { tags: [{ key: "tenant", value: "acme" }] }),
          ]);
          const workflow = await store.enqueueWorkflow({
            workflow: { id: "wf", name: "pair", jobs: [newJob("wa"), newJob("wb", { parentIds: ["wa"], tags: [{ key: "step", value: "b" }] })] },
            now: T0,
          });
          expect(workflow).toMatchObject({ status: "created" });
          for (const job of await claimExactly(store, ["j1", "j2", "wa"])) {
            const outcome = job.id === "j2" ? { type: "cancelled" as const } : { type: "succeeded" as const, output: `{"id":"${job.id}"}` };
            expect(await report(store, job, outcome, T0 + SECOND)).toMatchObject({ status: "applied" });
          }
          const [wb] = await claimExactly(store, ["wb"], T0 + 2 * SECOND);
          expect(await report(store, wb!, { type: "succeeded", output: "[1,2]" }, T0 + 2 * SECOND)).toMatchObject({ status: "applied" });
        },
        async (store) => {
          expect(await store.purgeTerminal({ retentionClass: "succeededOrCancelled", before: T0 + HOUR, max: 100 })).toEqual({
            purged: 4,
          });
        },
      );
    },
  );

  clauseNeeding(
    ctx,
    "stepHook",
    "atomicity: reportObserverDeliveries moving the cursor and recording a dead letter is all or nothing",
    async () => {
      const handedOut = new Map<JobStore, readonly ObserverDelivery[]>();
      await expectAtomic(
        ctx,
        async (store) => {
          await store.registerObserver({ subscription: { observerId: "o", states: ["succeeded"] }, startAt: "beginning", now: T0 });
          for (const id of ["a", "b", "c"]) {
            const job = await leaseJob(store, id);
            await report(store, job, { type: "succeeded" });
          }
          const claimed = await store.claimObserverDeliveries({ observerId: "o", workerId: "ow", max: 32, leaseMs: LEASE, now: T0 + SECOND });
          expect(claimed).toMatchObject({ status: "acquired" });
          const deliveries = claimed.status === "acquired" ? claimed.deliveries : [];
          expect(deliveries.map((d) => d.jobId)).toEqual(["a", "b", "c"]);
          handedOut.set(store, deliveries);
        },
        async (store) => {
          const deliveries = handedOut.get(store)!;
          const result = await store.reportObserverDeliveries({
            observerId: "o",
            workerId: "ow",
            outcomes: deliveries.map((d, i) =>
              i === 0
                ? { position: d.position, outcome: "deadLettered" as const, error: "callback refused" }
                : { position: d.position, outcome: "delivered" as const },
            ),
            now: T0 + 2 * SECOND,
          });
          expect(result).toEqual({ status: "applied", cursor: deliveries.at(-1)!.position });
        },
      );
    },
  );

  clauseGranted(ctx, ["provokeTransient"], "atomicity: a write that fails with a provoked TransientStoreError has committed nothing, and applies once retried", async () => {
    const cases: [string, (store: JobStore) => Promise<void>, (store: JobStore) => Promise<void>][] = [
      [
        "enqueue",
        async (store) => void (await enqueueJobs(store, [newJob("old")])),
        async (store) => {
          const results = await store.enqueue({
            jobs: [newJob("a", { tags: [{ key: "", value: "urgent" }] }), newJob("b", { parentIds: ["a", "old"] })],
            now: T0,
          });
          expect(results.map((r) => r.status)).toEqual(["created", "created"]);
        },
      ],
      [
        "enqueueWorkflow",
        async () => {},
        async (store) => {
          const result = await store.enqueueWorkflow({ workflow: { id: "wf", name: "wf", jobs: [newJob("x"), newJob("y", { parentIds: ["x"] })] }, now: T0 });
          expect(result).toMatchObject({ status: "created" });
        },
      ],
      [
        "claim",
        async (store) => void (await enqueueJobs(store, [newJob("c1"), newJob("c2")])),
        async (store) => void (await claimExactly(store, ["c1", "c2"])),
      ],
      [
        "reportOutcomes",
        async (store) => {
          await enqueueJobs(store, [newJob("p"), newJob("kid", { parentIds: ["p"] })]);
          await claimExactly(store, ["p"]);
        },
        async (store) => {
          const [result] = await store.reportOutcomes({
            reports: [{ jobId: "p", workerId: "w1", attempt: 1, outcome: { type: "failed", retryAt: null, failureDetail: "boom" } }],
            now: T0 + SECOND,
          });
          expect(result).toMatchObject({ status: "applied", state: "deadLettered" });
        },
      ],
      [
        "cancelJob",
        async (store) => void (await enqueueJobs(store, [newJob("p"), newJob("kid", { parentIds: ["p"] })])),
        async (store) => expect(await store.cancelJob({ jobId: "p", actor: "alice", now: T0 + SECOND })).toEqual({ status: "cancelled" }),
      ],
      [
        "expireLeases",
        async (store) => {
          await enqueueJobs(store, [newJob("e1"), newJob("e2")]);
          await claimExactly(store, ["e1", "e2"]);
        },
        async (store) => {
          const { expired } = await store.expireLeases({ now: T0 + LEASE, max: 10, retry: { maxAttempts: 3, delaysMs: [SECOND] } });
          expect(expired).toHaveLength(2);
        },
      ],
    ];
    for (const [what, setup, operation] of cases) {
      const store = await ctx.store();
      await setup(store);
      const before = await snapshot(store);
      const provoked = await ctx.hooks.provokeTransient!(store);
      try {
        await expect(operation(provoked.store), what).rejects.toMatchObject({ code: "BELAY_TRANSIENT_STORE" });
      } finally {
        await provoked.end();
      }
      expect(await snapshot(store), `${what}: nothing committed`).toEqual(before);
      await operation(store);
    }
  });
}
