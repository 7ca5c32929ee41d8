import type {
  ClaimObserverDeliveriesResult, Instant, JobState, JobStore, NewJob, ObserverDelivery, Outcome, RegisterObserverRequest,
} from "@belay/contract";
import { expect } from "vitest";
import { MINUTE, T0, leaseJob, report } from "./fixtures.js";

// What the observer clauses share: finishing jobs, registering, claiming and delivering.

/** The delivery lease the observer clauses claim with. */
export const OBSERVER_LEASE = MINUTE;

/** Enqueues a job due `now`, claims it and reports `outcome`, all at `now`: three transitions. */
export async function finishJob(
  store: JobStore,
  id: string,
  outcome: Outcome = { type: "succeeded" },
  fields: Partial<NewJob> = {},
  now: Instant = T0,
): Promise<void> {
  const job = await leaseJob(store, id, { dueAt: now, ...fields }, { now });
  expect(await report(store, job, outcome, now), `outcome of ${id}`).toMatchObject({ status: "applied" });
}

export const DEAD: Outcome = { type: "failed", retryAt: null };

/** The store-wide position of the latest transition of `jobId` into `state`. */
export async function positionOf(store: JobStore, jobId: string, state: JobState): Promise<number> {
  const history = await store.getJobHistory(jobId);
  const entry = history.filter((t) => t.state === state).at(-1);
  expect(entry, `a ${state} transition of ${jobId}`).toBeDefined();
  return entry!.position;
}

/** The highest position of any transition of these jobs. */
export async function lastPosition(store: JobStore, jobIds: readonly string[]): Promise<number> {
  let last = -Infinity;
  for (const id of jobIds) for (const t of await store.getJobHistory(id)) last = Math.max(last, t.position);
  return last;
}

export interface RegisterOptions {
  readonly jobNames?: readonly string[];
  readonly queues?: readonly string[];
  readonly startAt?: "beginning" | "end";
  readonly now?: Instant;
}

export function register(store: JobStore, observerId: string, states: readonly JobState[], options: RegisterOptions = {}) {
  const request: RegisterObserverRequest = {
    subscription: {
      observerId,
      states,
      ...(options.jobNames ? { jobNames: options.jobNames } : {}),
      ...(options.queues ? { queues: options.queues } : {}),
    },
    ...(options.startAt ? { startAt: options.startAt } : {}),
    now: options.now ?? T0,
  };
  return store.registerObserver(request);
}

/** Observer `o` watching successes from the beginning, then job `a` succeeded: one delivery pending. */
export async function oneSuccessObserved(store: JobStore): Promise<void> {
  await register(store, "o", ["succeeded"], { startAt: "beginning" });
  await finishJob(store, "a");
}

export function claimFor(
  store: JobStore,
  observerId: string,
  workerId: string,
  now: Instant,
  max = 32,
): Promise<ClaimObserverDeliveriesResult> {
  return store.claimObserverDeliveries({ observerId, workerId, max, leaseMs: OBSERVER_LEASE, now });
}

/** Claims and asserts the lease was acquired; returns the deliveries. */
export async function acquire(store: JobStore, observerId: string, workerId: string, now: Instant, max = 32): Promise<ObserverDelivery[]> {
  const result = await claimFor(store, observerId, workerId, now, max);
  expect(result, `claim of ${observerId} by ${workerId}`).toMatchObject({ status: "acquired" });
  return result.status === "acquired" ? [...result.deliveries] : [];
}

/** Reports every delivery as delivered; asserts the report applied and returns the new cursor. */
export async function deliver(
  store: JobStore,
  observerId: string,
  workerId: string,
  deliveries: readonly ObserverDelivery[],
  now: Instant,
): Promise<number> {
  const result = await store.reportObserverDeliveries({
    observerId,
    workerId,
    outcomes: deliveries.map((d) => ({ position: d.position, outcome: "delivered" as const })),
    now,
  });
  expect(result, `report of ${observerId} by ${workerId}`).toMatchObject({ status: "applied" });
  return result.status === "applied" ? result.cursor : NaN;
}

export const summary = (deliveries: readonly ObserverDelivery[]) => deliveries.map((d) => `${d.jobId}:${d.state}`);
