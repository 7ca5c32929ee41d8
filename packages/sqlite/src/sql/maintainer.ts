import {
  type AcquireMaintainerLeaseRequest, type AcquireMaintainerLeaseResult, type MaintainerLease,
  type ReleaseMaintainerLeaseRequest, type ReleaseMaintainerLeaseResult, decideMaintainerLease, releasedMaintainerLease,
} from "@belay/contract";
import type { Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";

// Read and write happen in one BEGIN IMMEDIATE transaction, under the file's write lock, so no
// other process can take the lease between the read the rule decides on and the write.

const READ = (t: Tables) => `SELECT holder, expires_at FROM ${t.maintainerLease} WHERE id = 1`;
const WRITE = (t: Tables) => `UPDATE ${t.maintainerLease} SET holder = ?, expires_at = ? WHERE id = 1`;

function current(ctx: OpContext): MaintainerLease | null {
  const row = ctx.q.get(READ).get() as { holder: string | null; expires_at: number } | undefined;
  return row === undefined || row.holder === null ? null : { holder: row.holder, expiresAt: row.expires_at };
}

/** See `JobStore.acquireMaintainerLease`. */
export function* acquireMaintainerLease(ctx: OpContext, request: AcquireMaintainerLeaseRequest): Steps<AcquireMaintainerLeaseResult> {
  const result = decideMaintainerLease(current(ctx), request);
  if (result.status === "granted") {
    ctx.q.get(WRITE).run(result.holder, result.expiresAt);
    yield "maintainer lease written";
  }
  return result;
}

/** See `JobStore.releaseMaintainerLease`. */
export function* releaseMaintainerLease(ctx: OpContext, request: ReleaseMaintainerLeaseRequest): Steps<ReleaseMaintainerLeaseResult> {
  const result = releasedMaintainerLease(current(ctx), request);
  if (result.status === "released") {
    ctx.q.get(WRITE).run(null, 0);
    yield "maintainer lease released";
  }
  return result;
}
