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

/** See `JobStore.acquireMaintainerLease`. */
export async function acquireMaintainerLease(ctx: StoreContext, request: AcquireMaintainerLeaseRequest): Promise<AcquireMaintainerLeaseResult> {
  return ctx.executor.run("acquireMaintainerLease", "autocommit", async (session) => {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const seen = await read(ctx, session);
      const result = decideMaintainerLease(leaseOf(seen), request);
      if (result.status === "heldByOther") return result;
      if (await compareAndSet(ctx, session, seen, result.holder, result.expiresAt)) {
        await session.step("maintainer lease written");
        return result;
      }
    }
    throw new TransientStoreError("acquireMaintainerLease: the lease changed under every attempt");
  });
}

/** See `JobStore.releaseMaintainerLease`. */
export async function releaseMaintainerLease(ctx: StoreContext, request: ReleaseMaintainerLeaseRequest): Promise<ReleaseMaintainerLeaseResult> {
  return ctx.executor.run("releaseMaintainerLease", "autocommit", async (session) => {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const seen = await read(ctx, session);
      const result = releasedMaintainerLease(leaseOf(seen), request);
      if (result.status === "notHeld") return result;
      if (await compareAndSet(ctx, session, seen, null, 0)) {
        await session.step("maintainer lease released");
        return result;
      }
    }
    throw new TransientStoreError("releaseMaintainerLease: the lease changed under every attempt");
  });
}
