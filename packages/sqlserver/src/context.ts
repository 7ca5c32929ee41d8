import type { Bounds, QueryExecutor } from "@belay/contract";
import type { Executor } from "./session.js";
import type { CheckedExecutor } from "./session.js";

/** What every operation in `sql/` needs from its store. */
export interface StoreContext {
  readonly executor: Executor;
  /** The schema's plain name (the quoted one is `executor.schema`): it keys the store's application locks. */
  readonly schemaName: string;
  readonly bounds: Readonly<Bounds>;
  /** Whether transitions are recorded at all (history policy not `off`). */
  readonly history: boolean;
  /** Whether failure detail is recorded (`transitionsAndFailureDetail`). */
  readonly detail: boolean;
  /**
   * `executor`, running inside a transaction the caller holds, with the check that it reaches
   * this store's database and schema. Throws `InvalidTransactionError` for something that cannot
   * run SQL at all.
   */
  caller(executor: QueryExecutor, operation: string): CheckedExecutor;
}
