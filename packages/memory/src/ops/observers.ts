import {
  type ClaimObserverDeliveriesRequest, type ClaimObserverDeliveriesResult, type Instant, type ObserverDeadLetter,
  type ObserverDelivery, type ObserverStatus, type ObserverSubscription, type RegisterObserverRequest,
  type RegisterObserverResult, type ReportObserverDeliveriesRequest, type ReportObserverDeliveriesResult, clampToBound,
  compareCodePoints,
} from "@belay/contract";
import type { LogEntry, MemoryState, ObserverRow } from "../state.js";
import type { UndoLog } from "../undo-log.js";

function subscribed(subscription: ObserverSubscription, entry: LogEntry): boolean {
  if (!subscription.states.includes(entry.state)) return false;
  if (subscription.jobNames && !subscription.jobNames.includes(entry.jobName)) return false;
  if (subscription.queues && !subscription.queues.includes(entry.queue)) return false;
  return true;
}

/** The index of the first log entry with a position greater than `position`. */
function indexAfter(state: MemoryState, position: number): number {
  let lo = 0;
  let hi = state.log.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (state.log[mid]!.position <= position) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Log entries after `position`, in position order. */
function* entriesAfter(state: MemoryState, position: number): IterableIterator<LogEntry> {
  for (let i = indexAfter(state, position); i < state.log.length; i++) yield state.log[i]!;
}

/** The log entry at `position`, if still held. */
function entryAt(state: MemoryState, position: number): LogEntry | undefined {
  const entry = state.log[indexAfter(state, position - 1)];
  return entry?.position === position ? entry : undefined;
}

/** See `JobStore.registerObserver`. */
export function registerObserver(state: MemoryState, undo: UndoLog, request: RegisterObserverRequest): RegisterObserverResult {
  const { subscription } = request;
  const existing = state.observers.get(subscription.observerId);
  if (existing !== undefined) {
    undo.patch(existing, { subscription });
    return { status: "updated", cursor: existing.cursor };
  }
  const cursor = request.startAt === "beginning" ? -1 : state.sequences.position;
  undo.mapSet(state.observers, subscription.observerId, {
    subscription,
    cursor,
    leaseOwner: null,
    leaseExpiresAt: null,
    deliveries: new Map(),
    deadLetters: [],
  });
  return { status: "created", cursor };
}

/** See `JobStore.removeObserver`. */
export function removeObserver(
  state: MemoryState,
  undo: UndoLog,
  request: { readonly observerId: string },
): { readonly status: "removed" | "notFound" } {
  if (!state.observers.has(request.observerId)) return { status: "notFound" };
  undo.mapDelete(state.observers, request.observerId);
  return { status: "removed" };
}

/** See `JobStore.claimObserverDeliveries`. */
export function claimObserverDeliveries(
  state: MemoryState,
  undo: UndoLog,
  request: ClaimObserverDeliveriesRequest,
): ClaimObserverDeliveriesResult {
  const { observerId, workerId, now } = request;
  const observer = state.observers.get(observerId);
  if (observer === undefined) return { status: "notFound" };
  if (observer.leaseOwner !== null && observer.leaseOwner !== workerId && observer.leaseExpiresAt! > now) {
    return { status: "busy", leaseOwner: observer.leaseOwner };
  }
  const leaseExpiresAt = now + request.leaseMs;
  undo.patch(observer, { leaseOwner: workerId, leaseExpiresAt });
  const max = clampToBound(request.max, state.bounds.claimBatch);
  const deliveries: ObserverDelivery[] = [];
  for (const entry of entriesAfter(state, observer.cursor)) {
    if (deliveries.length === max) break;
    if (entry.dropped || !subscribed(observer.subscription, entry)) continue;
    const delivery = observer.deliveries.get(entry.position);
    if (delivery !== undefined && delivery.resolution !== "pending") continue;
    if (delivery?.nextAttemptAt != null && delivery.nextAttemptAt > now) break; // head-of-line
    const attempts = (delivery?.attempts ?? 0) + 1;
    undo.mapSet(observer.deliveries, entry.position, { attempts, resolution: "pending", nextAttemptAt: null });
    deliveries.push({
      position: entry.position,
      jobId: entry.jobId,
      jobName: entry.jobName,
      queue: entry.queue,
      state: entry.state,
      attempt: entry.attempt,
      at: entry.at,
      failureDetail: entry.failureDetail,
      deliveryAttempt: attempts,
    });
  }
  return { status: "acquired", leaseExpiresAt, deliveries };
}

/** Moves the cursor over the prefix of entries that are resolved or not subscribed. */
function advanceCursor(state: MemoryState, undo: UndoLog, observer: ObserverRow): void {
  let cursor = observer.cursor;
  for (const entry of entriesAfter(state, observer.cursor)) {
    if (!entry.dropped && subscribed(observer.subscription, entry)) {
      const resolution = observer.deliveries.get(entry.position)?.resolution ?? "pending";
      if (resolution === "pending") break;
    }
    cursor = entry.position;
  }
  if (cursor === observer.cursor) return;
  for (const position of [...observer.deliveries.keys()]) {
    if (position <= cursor) undo.mapDelete(observer.deliveries, position);
  }
  undo.patch(observer, { cursor });
}

/** See `JobStore.reportObserverDeliveries`. */
export async function reportObserverDeliveries(
  state: MemoryState,
  undo: UndoLog,
  request: ReportObserverDeliveriesRequest,
): Promise<ReportObserverDeliveriesResult> {
  const { observerId, workerId, now } = request;
  const observer = state.observers.get(observerId);
  if (observer === undefined || observer.leaseOwner !== workerId || !(observer.leaseExpiresAt! > now)) {
    return { status: "stale" };
  }
  for (const outcome of request.outcomes) {
    const delivery = observer.deliveries.get(outcome.position);
    if (delivery === undefined || delivery.resolution !== "pending") continue;
    if (outcome.outcome === "delivered") {
      undo.mapSet(observer.deliveries, outcome.position, { ...delivery, resolution: "delivered" });
    } else if (outcome.outcome === "retry") {
      undo.mapSet(observer.deliveries, outcome.position, { ...delivery, nextAttemptAt: outcome.retryAt });
    } else {
      undo.mapSet(observer.deliveries, outcome.position, { ...delivery, resolution: "deadLettered" });
      const entry = entryAt(state, outcome.position);
      undo.push(observer.deadLetters, {
        observerId,
        position: outcome.position,
        jobId: entry?.jobId ?? "",
        state: entry?.state ?? "scheduled",
        attempt: entry?.attempt ?? 0,
        at: entry?.at ?? now,
        deliveryAttempts: delivery.attempts,
        deadLetteredAt: now,
        error: outcome.error,
      });
    }
  }
  await undo.step("outcomes recorded");
  advanceCursor(state, undo, observer);
  return { status: "applied", cursor: observer.cursor };
}

/** See `JobStore.getObserver`. */
export function getObserver(state: MemoryState, observerId: string): ObserverStatus | null {
  const observer = state.observers.get(observerId);
  return observer ? observerStatus(state, observer) : null;
}

/** See `JobStore.listObservers`. */
export function listObservers(state: MemoryState): ObserverStatus[] {
  return [...state.observers.entries()]
    .sort(([a], [b]) => compareCodePoints(a, b))
    .map(([, observer]) => observerStatus(state, observer));
}

/** See `JobStore.listObserverDeadLetters`. */
export function listObserverDeadLetters(state: MemoryState, observerId: string): ObserverDeadLetter[] {
  return [...(state.observers.get(observerId)?.deadLetters ?? [])];
}

function observerStatus(state: MemoryState, observer: ObserverRow): ObserverStatus {
  let pending = 0;
  let oldestPendingAt: Instant | null = null;
  for (const entry of entriesAfter(state, observer.cursor)) {
    if (entry.dropped || !subscribed(observer.subscription, entry)) continue;
    if ((observer.deliveries.get(entry.position)?.resolution ?? "pending") !== "pending") continue;
    pending++;
    oldestPendingAt ??= entry.at;
  }
  return {
    subscription: observer.subscription,
    cursor: observer.cursor,
    leaseOwner: observer.leaseOwner,
    leaseExpiresAt: observer.leaseExpiresAt,
    pending,
    oldestPendingAt,
    deadLetters: observer.deadLetters.length,
  };
}
