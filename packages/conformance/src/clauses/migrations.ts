import type { JobStore } from "@belay/contract";
import { expect } from "vitest";
import { clause, clauseGranted } from "../clause.js";
import { LEASE, SECOND, T0, allJobIds, claimJobs, enqueueJobs, expectBelayError, newJob, report } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

// The schema's life: created by migrate() (once, whoever calls it at the same time), refused
// before it exists and when it is newer than the store, untouched by configuration changes.
// Only an adapter with a real database can grant the hooks most of these clauses need.

/** The states and failure details of a job's history. */
async function story(store: JobStore, id: string): Promise<[string, string | null][]> {
  return (await store.getJobHistory(id)).map((t) => [t.state, t.failureDetail]);
}

export function migrationClauses(ctx: SuiteContext): void {
  clause("migrations: concurrent migrate() calls on an up-to-date schema, through two handles, change nothing and lose no job", async () => {
    const store = await ctx.store();
    const peer = await ctx.peer(store);
    await enqueueJobs(store, [newJob("kept")]);
    const results = await Promise.all([store.migrate(), peer.migrate(), store.migrate()]);
    for (const result of results) expect(result.fromVersion).toBe(result.toVersion);
    expect(new Set(results.map((r) => r.toVersion)).size).toBe(1);
    expect(await allJobIds(peer)).toEqual(["kept"]);
    const [claimed] = await claimJobs(store, { now: T0 });
    expect(claimed?.id).toBe("kept");
  });

  clauseGranted(ctx, ["reopen"], "migrations: a store reopened with another history policy on the same data needs no migration, and the new policy applies", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1"), newJob("j2", { dueAt: T0 + 3 * SECOND })]);
    const first = await claimJobs(store, { max: 1 });
    await report(store, first[0]!, { type: "failed", retryAt: T0 + SECOND, failureDetail: "Error: once" }, T0 + 1);
    const kept = await story(store, "j1");
    expect(kept).toEqual([["scheduled", null], ["leased", null], ["scheduled", "Error: once"]]);

    // Off: used at once (no migrate() call), the old history stays readable and nothing is added.
    const off = await ctx.reopen(store, { historyPolicy: "off" });
    expect(off.capabilities.historyPolicy).toBe("off");
    const [again] = await claimJobs(off, { now: T0 + SECOND, max: 1 });
    expect(again).toMatchObject({ id: "j1", attempt: 2 });
    expect(await report(off, again!, { type: "succeeded", output: '"ok"' }, T0 + 2 * SECOND)).toMatchObject({ status: "applied" });
    await enqueueJobs(off, [newJob("j3", { dueAt: T0 + 5 * SECOND })], T0 + 2 * SECOND);
    expect(await story(off, "j1")).toEqual(kept);
    expect(await off.getJobHistory("j3")).toEqual([]);
    expect(await off.getJobOutput("j1")).toBe('"ok"');
    const offMigrate = await off.migrate();
    expect(offMigrate.fromVersion, "nothing to migrate").toBe(offMigrate.toVersion);

    // Transitions: records again, without failure detail.
    const transitions = await ctx.reopen(store, { historyPolicy: "transitions" });
    const [j2] = await claimJobs(transitions, { now: T0 + 3 * SECOND, max: 1 });
    expect(j2?.id).toBe("j2");
    await report(transitions, j2!, { type: "failed", retryAt: null, failureDetail: "Error: dropped" }, T0 + 4 * SECOND);
    expect(await story(transitions, "j2")).toEqual([["scheduled", null], ["leased", null], ["deadLettered", null]]);

    // Back to the default: failure detail is recorded again, and every handle reads the same data.
    const full = await ctx.reopen(store, { historyPolicy: "transitionsAndFailureDetail" });
    const [j3] = await claimJobs(full, { now: T0 + 5 * SECOND, max: 1 });
    expect(j3?.id).toBe("j3");
    await report(full, j3!, { type: "failed", retryAt: null, failureDetail: "Error: kept" }, T0 + 6 * SECOND);
    expect(await story(full, "j3")).toEqual([["leased", null], ["deadLettered", "Error: kept"]]);
    expect(await allJobIds(store)).toEqual(["j1", "j2", "j3"]);
    expect(await store.getJob("j3")).toMatchObject({ state: "deadLettered" });
  });

  clauseGranted(ctx, ["openUnmigrated"], "migrations: a store on a database never migrated refuses every operation with SchemaNotMigratedError, writing nothing, until migrate() creates the schema", async () => {
    const store = await ctx.unmigrated();
    const refusals: [string, () => Promise<unknown>][] = [
      ["enqueue", () => store.enqueue({ jobs: [newJob("j1")], now: T0 })],
      ["claim", () => store.claim({ workerId: "w1", queues: ["default"], max: 1, leaseMs: LEASE, now: T0 })],
      ["getJob", () => store.getJob("j1")],
      ["listJobs", () => store.listJobs()],
      ["pauseQueue", () => store.pauseQueue({ queue: "default", actor: "ops", now: T0 })],
      ["registerObserver", () => store.registerObserver({ subscription: { observerId: "o", states: ["succeeded"] }, now: T0 })],
    ];
    for (const [what, call] of refusals) await expectBelayError(call, "BELAY_SCHEMA_NOT_MIGRATED", {}, what);
    const migrated = await store.migrate();
    expect(migrated.fromVersion).toBe(0);
    expect(migrated.toVersion).toBeGreaterThan(0);
    expect(await allJobIds(store), "the refused calls wrote nothing").toEqual([]);
    expect(await store.listQueueSettings()).toEqual([]);
    expect(await store.listObservers()).toEqual([]);
    await enqueueJobs(store, [newJob("j1")]);
    expect(await store.getJob("j1")).toMatchObject({ state: "scheduled" });
    expect(await store.migrate()).toEqual({ fromVersion: migrated.toVersion, toVersion: migrated.toVersion });
  });

  clauseGranted(ctx, ["openUnmigrated"], "migrations: concurrent migrate() calls on a fresh database create the schema once, and every handle then works", async () => {
    const store = await ctx.unmigrated();
    const handles = [store, await ctx.peer(store), await ctx.peer(store), await ctx.peer(store)];
    const results = await Promise.all([...handles, ...handles].map((handle) => handle.migrate()));
    const version = results[0]!.toVersion;
    expect(version).toBeGreaterThan(0);
    for (const result of results) expect(result.toVersion).toBe(version);
    expect(results.filter((r) => r.fromVersion === 0), "exactly one call applied the migrations").toHaveLength(1);
    for (const result of results) if (result.fromVersion !== 0) expect(result.fromVersion).toBe(version);
    for (const [i, handle] of handles.entries()) await enqueueJobs(handle, [newJob(`j${i}`)]);
    for (const handle of handles) expect(await allJobIds(handle)).toEqual(["j0", "j1", "j2", "j3"]);
  });

  clauseGranted(ctx, ["recordSchemaVersion", "openPeer"], "migrations: a database at a newer schema version that requires a newer store is refused with SchemaVersionError, by operations and by migrate(), writing nothing", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1")]);
    const { toVersion: known } = await store.migrate();
    await ctx.hooks.recordSchemaVersion!(store, known + 1);
    const later = await ctx.peer(store);
    const facts = { found: known + 1, supported: known };
    await expectBelayError(() => later.getJob("j1"), "BELAY_SCHEMA_VERSION_UNKNOWN", facts, "getJob");
    await expectBelayError(() => later.enqueue({ jobs: [newJob("j2")], now: T0 }), "BELAY_SCHEMA_VERSION_UNKNOWN", facts, "enqueue");
    await expectBelayError(() => later.claim({ workerId: "w1", queues: ["default"], max: 1, leaseMs: LEASE, now: T0 }), "BELAY_SCHEMA_VERSION_UNKNOWN", facts, "claim");
    await expectBelayError(() => later.migrate(), "BELAY_SCHEMA_VERSION_UNKNOWN", facts, "migrate");
    // The handle that checked the schema before the change still reads: nothing was written.
    expect(await allJobIds(store)).toEqual(["j1"]);
    expect(await store.getJob("j1")).toMatchObject({ state: "scheduled", attempt: 0 });
  });
}
