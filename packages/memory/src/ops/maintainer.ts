import {
  type AcquireMaintainerLeaseRequest, type AcquireMaintainerLeaseResult, type ReleaseMaintainerLeaseRequest,
  type ReleaseMaintainerLeaseResult, decideMaintainerLease, releasedMaintainerLease,
} from "@belay/contract";
import type { MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";

/** See `JobStore.acquireMaintainerLease`: the contract's rule, applied under the store's one lock. */
export function acquireMaintainerLease(state: MemoryState, undo: UndoLog, request: AcquireMaintainerLeaseRequest): AcquireMaintainerLeaseResult {
  const result = decideMaintainerLease(state.maintainer.lease, request);
  if (result.status === "granted") undo.patch(state.maintainer, { lease: { holder: result.holder, expiresAt: result.expiresAt } });
  return result;
}

/** See `JobStore.releaseMaintainerLease`. */
export function releaseMaintainerLease(state: MemoryState, undo: UndoLog, request: ReleaseMaintainerLeaseRequest): ReleaseMaintainerLeaseResult {
  const result = releasedMaintainerLease(state.maintainer.lease, request);
  if (result.status === "released") undo.patch(state.maintainer, { lease: null });
  return result;
}
