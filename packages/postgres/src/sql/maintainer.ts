import {
  type AcquireMaintainerLeaseRequest, type AcquireMaintainerLeaseResult, type MaintainerLease,
  type ReleaseMaintainerLeaseRequest, type ReleaseMaintainerLeaseResult, TransientStoreError, decideMaintainerLease,
  releasedMaintainerLease,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import type { Session } from "../session.js";

// The contract's rule decides on the row as read; the write is a compare-and-set against that
// same read (holder and expiry unchanged), so two candidates that read the same dead lease
// cannot both take it: the second one's update matches nothing, and it reads and decides again.
// Two autocommit statements, no transaction held across them and no lock waited for.

const READ = (S: string) => `SELECT holder, expires_at FROM ${S}.maintainer_lease WHERE id = 1`;
const WRITE = (S: string) => `UPDATE ${S}.maintainer_lease SET holder = $1, expires_at = $2
  WHERE id = 1 AND holder IS NOT DISTINCT FROM $3 AND expires_at = $4
  RETURNING 1`;

/** Reads lost to a concurrent writer before the call gives up as a transient fault. */
const ATTEMPTS = 4;

interface Row {
  readonly holder: string | null;
  readonly expiresAt: number;
}

const leaseOf = (row: Row): MaintainerLease | null => (row.holder === null ? null : { holder: row.holder, expiresAt: row.expiresAt });

async function read(ctx: StoreContext, session: Session): Promise<Row> {
  const [row] = await session.query(ctx.sql.get("maintainerLeaseRead", READ), []);
  if (row === undefined) throw new Error("the maintainer lease row is missing from the schema");
  return { holder: row["holder"] as string | null, expiresAt: Number(row["expires_at"]) };
}

/** Writes `holder`/`expiresAt` if the row still holds what `seen` read; whether it did. */
async function compareAndSet(ctx: StoreContext, session: Session, seen: Row, holder: string | null, expiresAt: number): Promise<boolean> {
  const rows = await session.query(ctx.sql.get("maintainerLeaseWrite", WRITE), [holder, expiresAt, seen.holder, seen.expiresAt]);
  return rows.length > 0;
}

/**
 * Reads the lease, decides on it, and writes what `decide` says (nothing: `write` null) by
 * compare-and-set, reading and deciding again while a concurrent writer wins; `step` follows the write.
 */
function decideAndWrite<R>(ctx: StoreContext, operation: string, step: string, decide: (lease: MaintainerLease | null) => { readonly result: R; readonly write: Row | null }): Promise<R> {
  return ctx.executor.run(operation, "autocommit", async (session) => {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const seen = await read(ctx, session);
      const { result, write } = decide(leaseOf(seen));
      if (write === null) return result;
      if (await compareAndSet(ctx, session, seen, write.holder, write.expiresAt)) {
        await session.step(step);
        return result;
      }
    }
    throw new TransientStoreError(`${operation}: the lease changed under every attempt`);
  });
}

/** See `JobStore.acquireMaintainerLease`. */
export function acquireMaintainerLease(ctx: StoreContext, request: AcquireMaintainerLeaseRequest): Promise<AcquireMaintainerLeaseResult> {
  return decideAndWrite(ctx, "acquireMaintainerLease", "maintainer lease written", (lease) => {
    const result = decideMaintainerLease(lease, request);
    return { result, write: result.status === "heldByOther" ? null : { holder: result.holder, expiresAt: result.expiresAt } };
  });
}

/** See `JobStore.releaseMaintainerLease`. */
export function releaseMaintainerLease(ctx: StoreContext, request: ReleaseMaintainerLeaseRequest): Promise<ReleaseMaintainerLeaseResult> {
  return decideAndWrite(ctx, "releaseMaintainerLease", "maintainer lease released", (lease) => {
    const result = releasedMaintainerLease(lease, request);
    return { result, write: result.status === "notHeld" ? null : { holder: null, expiresAt: 0 } };
  });
}
