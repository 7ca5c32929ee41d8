import {
  type AcquireMaintainerLeaseRequest, type AcquireMaintainerLeaseResult, type MaintainerLease,
  type ReleaseMaintainerLeaseRequest, type ReleaseMaintainerLeaseResult, decideMaintainerLease, releasedMaintainerLease,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { key, textOf, toInt } from "../keys.js";
import type { Session } from "../session.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";

// The read takes the row's update lock and keeps it to the end of the transaction, so no other
// candidate can write the lease between the read the contract's rule decides on and the write.

const READ = statement("maintainerLeaseRead", {}, (S) => `SELECT holder, expires_at FROM ${S}.maintainer_lease WITH (UPDLOCK, HOLDLOCK) WHERE id = 1`);
const WRITE = statement(
  "maintainerLeaseWrite",
  { holder: `varbinary(${COLUMN_BYTES.id})`, expiresAt: "bigint" },
  (S) => `UPDATE ${S}.maintainer_lease SET holder = @holder, expires_at = @expiresAt WHERE id = 1`,
);

async function current(session: Session): Promise<MaintainerLease | null> {
  const [row] = await session.rows(READ);
  if (row === undefined) throw new Error("the maintainer lease row is missing from the schema");
  const holder = textOf(row["holder"]);
  return holder === null ? null : { holder, expiresAt: toInt(row["expires_at"]) };
}

/** See `JobStore.acquireMaintainerLease`. */
export async function acquireMaintainerLease(ctx: StoreContext, request: AcquireMaintainerLeaseRequest): Promise<AcquireMaintainerLeaseResult> {
  return ctx.executor.transaction("acquireMaintainerLease", async (session) => {
    const result = decideMaintainerLease(await current(session), request);
    if (result.status === "granted") {
      await session.rows(WRITE, { holder: key(result.holder), expiresAt: result.expiresAt });
      await session.step("maintainer lease written");
    }
    return result;
  });
}

/** See `JobStore.releaseMaintainerLease`. */
export async function releaseMaintainerLease(ctx: StoreContext, request: ReleaseMaintainerLeaseRequest): Promise<ReleaseMaintainerLeaseResult> {
  return ctx.executor.transaction("releaseMaintainerLease", async (session) => {
    const result = releasedMaintainerLease(await current(session), request);
    if (result.status === "released") {
      await session.rows(WRITE, { holder: null, expiresAt: 0 });
      await session.step("maintainer lease released");
    }
    return result;
  });
}
