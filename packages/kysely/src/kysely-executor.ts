import { InvalidTransactionError } from "@belay/contract";
import { CompiledQuery, type Kysely } from "kysely";
import type { QueryExecutor, QueryRow } from "@belay/contract";

/** Whether `db` looks like a Kysely instance or transaction (by shape: two installed copies differ in identity). */
export function isKysely(db: unknown): db is Kysely<any> {
  if (typeof db !== "object" || db === null) return false;
  const candidate = db as Partial<Kysely<any>>;
  return (
    typeof candidate.executeQuery === "function" &&
    typeof candidate.transaction === "function" &&
    typeof candidate.withoutPlugins === "function" &&
    typeof candidate.isTransaction === "boolean"
  );
}

// Kysely 0.28 refuses any query on a transaction once it has committed or rolled back.
const FINISHED = /transaction is already (committed|rolled back)/i;

/**
 * The store's statements, run on the connection of `trx` as raw SQL: no plugin sees them (a
 * `CamelCasePlugin` would rename the columns the store reads back) and no `withSchema` applies,
 * since the store names its own tables. A finished transaction is `InvalidTransactionError`.
 */
export function kyselyExecutor(trx: Kysely<any>): QueryExecutor {
  const raw = trx.withoutPlugins();
  return {
    async query(sql, values) {
      try {
        return (await raw.executeQuery(CompiledQuery.raw(sql, [...values]))).rows as QueryRow[];
      } catch (error) {
        if (error instanceof Error && FINISHED.test(error.message)) {
          throw new InvalidTransactionError(`the Kysely transaction is finished (${error.message})`);
        }
        throw error;
      }
    },
  };
}
