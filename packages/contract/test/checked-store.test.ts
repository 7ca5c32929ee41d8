import { describe, expect, it } from "vitest";
import { CheckedJobStore, DEFAULT_BOUNDS, type JobStore, type JobStoreOperations, type StoreCapabilities } from "../src/index.js";

const NOW = Date.UTC(2026, 0, 1);

/** Operations that record every call and answer `undefined`: the front decides what reaches them. */
function recording(overrides: Partial<StoreCapabilities> = {}): { operations: JobStoreOperations; calls: string[] } {
  const calls: string[] = [];
  const capabilities: StoreCapabilities = {
    name: "fake",
    transactionalEnqueue: false,
    enqueueThrough: false,
    wakeUpHints: false,
    stepHook: false,
    bounds: DEFAULT_BOUNDS,
    historyPolicy: "transitions",
    ...overrides,
  };
  const operations = new Proxy({ capabilities } as JobStoreOperations, {
    get(target, key) {
      if (key === "capabilities") return target.capabilities;
      if (typeof key !== "string" || key === "then") return undefined;
      return (...args: unknown[]) => {
        calls.push(key);
        return key === "subscribeHints" ? () => {} : Promise.resolve(args[0] ?? null);
      };
    },
  });
  return { operations, calls };
}

type Call = [keyof JobStore, unknown, string];

// One malformed request per operation, and the field the front must name.
const MALFORMED: Call[] = [
  ["enqueue", { jobs: "x", now: NOW }, "jobs"],
  ["enqueueWorkflow", { workflow: null, now: NOW }, "workflow"],
  ["claim", { workerId: "", queues: [], max: 1, leaseMs: 1, now: NOW }, "workerId"],
  ["reportOutcomes", { reports: [{ jobId: "j", workerId: "w", attempt: 0, outcome: { type: "cancelled" } }], now: NOW }, "reports[0].attempt"],
  ["heartbeat", { workerId: "w", leases: [], leaseMs: 0, now: NOW }, "leaseMs"],
  ["release", { workerId: "w", leases: {}, now: NOW }, "leases"],
  ["expireLeases", { now: NOW, max: 1, retry: { maxAttempts: 0, delaysMs: [] } }, "retry.maxAttempts"],
  ["upsertSchedule", { schedule: { id: "s" }, now: NOW }, "schedule.cron"],
  ["removeSchedule", { scheduleId: 3 }, "scheduleId"],
  ["getSchedule", 3, "scheduleId"],
  ["mintDue", { decisions: [{ scheduleId: "s", expectedCursor: 5, newCursor: 4, mint: [], skip: [] }], now: NOW }, "decisions[0].newCursor"],
  ["triggerSchedule", { scheduleId: "s", jobId: "j", actor: "", now: NOW }, "actor"],
  ["cancelJob", { jobId: "j", actor: "a", now: 1.5 }, "now"],
  ["requeueJob", { jobId: "", actor: "a", now: NOW }, "jobId"],
  ["pauseQueue", { queue: "", actor: "a", now: NOW }, "queue"],
  ["resumeQueue", { queue: "q", actor: 7, now: NOW }, "actor"],
  ["setConcurrencyLimit", { queue: "q", actor: "a", limit: 0, now: NOW }, "limit"],
  ["listAuditRecords", { targetKind: "planet" }, "targetKind"],
  ["getJob", null, "jobId"],
  ["getJobOutput", 1, "jobId"],
  ["getJobHistory", {}, "jobId"],
  ["listJobs", { order: "sideways" }, "order"],
  ["getDependencies", undefined, "jobId"],
  ["facetTags", { key: 1 }, "key"],
  ["suggestTags", { prefix: "", max: 0 }, "max"],
  ["getWorkflow", 2, "workflowId"],
  ["listWorkflows", { limit: -1 }, "limit"],
  ["purgeTerminal", { retentionClass: "all", before: NOW, max: 1 }, "retentionClass"],
  ["acquireMaintainerLease", { holder: "m", leaseMs: 0, now: NOW }, "leaseMs"],
  ["acquireMaintainerLease", { holder: "", leaseMs: 1_000, now: NOW }, "holder"],
  ["acquireMaintainerLease", { holder: "m", leaseMs: 1_000, now: -1.5 }, "now"],
  ["releaseMaintainerLease", { holder: 3 }, "holder"],
  ["registerObserver", { subscription: { observerId: "o", states: [] }, now: NOW }, "subscription.states"],
  ["removeObserver", { observerId: "" }, "observerId"],
  ["claimObserverDeliveries", { observerId: "o", workerId: "w", max: 0, leaseMs: 1, now: NOW }, "max"],
  ["reportObserverDeliveries", { observerId: "o", workerId: "w", outcomes: [{ position: 1, outcome: "lost" }], now: NOW }, "outcomes[0].outcome"],
  ["getObserver", 5, "observerId"],
  ["listObserverDeadLetters", 5, "observerId"],
];

describe("the checked front", () => {
  it.each(MALFORMED)("%s refuses a malformed request naming %s, before the store sees it", async (method, request, field) => {
    const { operations, calls } = recording();
    const store = new CheckedJobStore(operations);
    const call = (store[method] as (r: unknown) => Promise<unknown>).bind(store);
    await expect(call(request)).rejects.toMatchObject({ code: "BELAY_INVALID_INPUT", field });
    expect(calls).toEqual([]);
  });

  it("hands a well-formed request to the store unchanged, and defaults an omitted page request to {}", async () => {
    const { operations, calls } = recording();
    const store = new CheckedJobStore(operations);
    const claim = { workerId: "w", queues: ["q"], max: 5, leaseMs: 1_000, now: NOW };
    expect(await store.claim(claim)).toBe(claim);
    expect(await store.listJobs()).toEqual({});
    expect(await store.getJob("any id")).toBe("any id");
    expect(calls).toEqual(["claim", "listJobs", "getJob"]);
  });

  it("refuses the methods of capabilities the store does not declare, loudly", async () => {
    const { operations, calls } = recording();
    const store = new CheckedJobStore(operations);
    expect(() => store.subscribeHints(() => {})).toThrow(expect.objectContaining({ code: "BELAY_CAPABILITY_NOT_SUPPORTED", capability: "wakeUpHints" }));
    expect(() => store.setStepHook(null)).toThrow(expect.objectContaining({ code: "BELAY_CAPABILITY_NOT_SUPPORTED", capability: "stepHook" }));
    const executor = { query: async () => [] };
    await expect(store.enqueueThrough(executor, { jobs: [], now: NOW })).rejects.toMatchObject({ code: "BELAY_TRANSACTION_NOT_SUPPORTED" });
    await expect(store.enqueueWorkflowThrough(executor, { workflow: { id: "w", name: "w", jobs: [] }, now: NOW })).rejects.toMatchObject({
      code: "BELAY_TRANSACTION_NOT_SUPPORTED",
    });
    expect(calls).toEqual([]);
  });

  it("forwards the methods of declared capabilities, checking their requests too", async () => {
    const { operations, calls } = recording({ wakeUpHints: true, stepHook: true, enqueueThrough: true });
    const store = new CheckedJobStore(operations);
    store.subscribeHints(() => {});
    store.setStepHook(null);
    const executor = { query: async () => [] };
    await store.enqueueThrough(executor, { jobs: [], now: NOW });
    await expect(store.enqueueThrough(executor, { jobs: [], now: Number.NaN })).rejects.toMatchObject({ code: "BELAY_INVALID_INPUT", field: "now" });
    expect(calls).toEqual(["subscribeHints", "setStepHook", "enqueueThrough"]);
  });

  it("lets a subclass override a forwarded operation with a method that calls super (a typecheck too)", async () => {
    const seen: string[] = [];
    class LoggingStore extends CheckedJobStore {
      override async claim(request: Parameters<JobStore["claim"]>[0]): ReturnType<JobStore["claim"]> {
        seen.push(request.workerId);
        return super.claim(request);
      }
    }
    const { operations, calls } = recording();
    const store = new LoggingStore(operations);
    await store.claim({ workerId: "w", queues: ["q"], max: 1, leaseMs: 1000, now: NOW });
    await expect(store.claim({ workerId: "", queues: ["q"], max: 1, leaseMs: 1000, now: NOW })).rejects.toMatchObject({ field: "workerId" });
    expect(seen).toEqual(["w", ""]);
    expect(calls).toEqual(["claim"]);
  });
});
