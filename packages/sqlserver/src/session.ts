import { InvalidTransactionError, type QueryExecutor, type StepHook, hookedStep, isBelayError } from "@belay/contract";
import { type MssqlPool, type MssqlRequest, type MssqlRow, type MssqlTransaction, READ_COMMITTED, resultSets } from "./driver.js";
import { classifyError, errorCodes, errorNumbers, isUniqueViolation, toStoreError } from "./mssql-errors.js";
import { type Statement, positional, render } from "./statements.js";

/** A connection (or transaction) borrowed for one operation. */
export interface Session {
  /** Runs a statement; resolves to the rows of each of its result sets. */
  query(st: Statement, values?: Readonly<Record<string, unknown>>): Promise<MssqlRow[][]>;
  /** Runs a statement and resolves to the rows of its last result set. */
  rows(st: Statement, values?: Readonly<Record<string, unknown>>): Promise<MssqlRow[]>;
  /** A step boundary between two statements: the test hook may fault or park here. */
  step(step: string): Promise<void>;
  /** Whether this session runs inside a transaction the caller owns (`enqueue({ tx })`, `enqueueThrough`). */
  readonly callerTransaction: boolean;
}

function bind(request: MssqlRequest, st: Statement, values: Readonly<Record<string, unknown>>): MssqlRequest {
  for (const [i, value] of positional(st, values).entries()) request.input(String(i + 1), value);
  return request;
}

const last = (sets: MssqlRow[][]): MssqlRow[] => sets.at(-1) ?? [];

/** A session whose statements run through `query`, its steps through the hook (none: no steps). */
function sessionOf(query: Session["query"], hook: StepHook | null, operation: string, callerTransaction = false): Session {
  return { callerTransaction, query, rows: async (st, values = {}) => last(await query(st, values)), step: hookedStep(hook, operation) };
}

/** Each call's savepoint has a name of its own (SQL Server savepoint names are at most 32 characters). */
let savepoints = 0;
const savepointName = (): string => `belay_${(++savepoints).toString(36)}`;

/**
 * Runs operations on a pool: reads one statement at a time in autocommit (each its own snapshot
 * under READ_COMMITTED_SNAPSHOT), writes in one READ COMMITTED transaction each, committed before
 * the operation resolves. A write that meets a unique violation (a concurrent creator of the same
 * key won) can ask to run again (`rerunOnUnique`).
 */
export class Executor {
  readonly #pool: () => Promise<MssqlPool>;
  readonly #schema: string;
  readonly #hook: () => StepHook | null;

  constructor(pool: () => Promise<MssqlPool>, schema: string, hook: () => StepHook | null) {
    this.#pool = pool;
    this.#schema = schema;
    this.#hook = hook;
  }

  /** The quoted schema the statements are rendered for. */
  get schema(): string {
    return this.#schema;
  }

  /** Statements run each as one request from `request` (of the pool, or of a transaction). */
  #requests(request: () => MssqlRequest): Session["query"] {
    return async (st, values = {}) => resultSets(await bind(request(), st, values).query(render(st, this.#schema)));
  }

  /** Runs `body` with statements in autocommit (reads, and writes that are one statement). */
  async read<T>(operation: string, body: (session: Session) => Promise<T>): Promise<T> {
    let pool: MssqlPool;
    try {
      pool = await this.#pool();
    } catch (error) {
      throw toStoreError(error, operation);
    }
    try {
      return await body(sessionOf(this.#requests(() => pool.request()), null, operation));
    } catch (error) {
      throw toStoreError(error, operation);
    }
  }

  /**
   * Runs `body` as one transaction: BEGIN (READ COMMITTED) before it, COMMIT after it, ROLLBACK if
   * anything throws. A deadlock (1205) — and with `rerunOnUnique`, a unique violation — reruns the
   * whole body (up to `attempts` times in all) on a fresh transaction; past that it is transient.
   */
  async transaction<T>(operation: string, body: (session: Session) => Promise<T>, options: { rerunOnUnique?: boolean; attempts?: number } = {}): Promise<T> {
    const attempts = options.attempts ?? 4;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#transactionOnce(operation, body);
      } catch (error) {
        const cause = (error as { cause?: unknown } | null)?.cause ?? error;
        // A deadlock victim was rolled back whole: running it again is safe, and usually wins.
        const rerun = errorNumbers(cause).includes(1205) || (options.rerunOnUnique === true && isUniqueViolation(cause));
        if (!rerun) throw error;
        if (attempt >= attempts) throw toStoreError(Object.assign(new Error(`${operation}: concurrent creators kept colliding`), { number: 1205, cause }), operation);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 3 * attempt));
      }
    }
  }

  async #transactionOnce<T>(operation: string, body: (session: Session) => Promise<T>): Promise<T> {
    const hook = this.#hook();
    let tx: MssqlTransaction;
    try {
      tx = (await this.#pool()).transaction();
      await tx.begin(READ_COMMITTED);
    } catch (error) {
      throw toStoreError(error, operation);
    }
    const session = sessionOf(this.#requests(() => tx.request()), hook, operation);
    try {
      const result = await body(session);
      await session.step("commit");
      await tx.commit();
      return result;
    } catch (error) {
      try {
        await tx.rollback();
      } catch {
        // Already rolled back by the server (a deadlock victim, XACT_ABORT) or the connection is gone.
      }
      throw toStoreError(error, operation);
    }
  }

  /**
   * Runs `body` inside the caller's open transaction, reached through `caller`, under a savepoint:
   * a call that is refused (`keep(result)` false) or throws is rolled back to the savepoint and
   * leaves the caller's transaction usable. `verify` (the check of where the transaction is) runs
   * first; it refuses a connection outside any transaction (`@@TRANCOUNT` 0) or in a doomed one.
   */
  async inCallerTransaction<T>(
    caller: CheckedExecutor,
    operation: string,
    keep: (result: T) => boolean,
    body: (session: Session) => Promise<T>,
  ): Promise<T> {
    await caller.verify();
    const savepoint = savepointName();
    try {
      await caller.query(`SAVE TRANSACTION ${savepoint}`, []);
    } catch (error) {
      throw callerTransactionError(error, operation);
    }
    // A caller's executor hands back one list of rows: every statement run through it has one result set.
    const query: Session["query"] = async (st, values = {}) => [[...(await caller.query(render(st, this.#schema), positional(st, values)))]];
    let result: T;
    try {
      result = await body(sessionOf(query, this.#hook(), operation, true));
    } catch (error) {
      await undoSavepoint(caller, savepoint);
      if (errorNumbers(error).includes(208)) {
        throw new InvalidTransactionError(`the transaction's database has no Belay schema here (${(error as Error).message})`);
      }
      throw toStoreError(error, operation);
    }
    if (!keep(result)) await undoSavepoint(caller, savepoint);
    // SQL Server has no RELEASE SAVEPOINT: a kept savepoint simply stays, unused, until the caller's commit.
    return result;
  }
}

async function undoSavepoint(caller: QueryExecutor, savepoint: string): Promise<void> {
  try {
    await caller.query(`IF XACT_STATE() = 1 ROLLBACK TRANSACTION ${savepoint}`, []);
  } catch {
    // The connection or transaction is gone; the caller's own COMMIT or ROLLBACK will say so.
  }
}

/** A caller's executor with the check of where it is, run before anything is written. */
export interface CheckedExecutor extends QueryExecutor {
  verify(): Promise<void>;
}

/** The statements `inCallerTransaction` sends itself (no parameters), for the grammar checks. */
export const SAVEPOINT_STATEMENTS = ["SAVE TRANSACTION belay_1", "IF XACT_STATE() = 1 ROLLBACK TRANSACTION belay_1"] as const;

/**
 * The caller's `mssql.Transaction` as an executor (`enqueue({ tx })`): each statement is one
 * request of that transaction, its values bound as `@1`, `@2`, ….
 */
export function transactionExecutor(tx: unknown): QueryExecutor {
  if (typeof tx !== "object" || tx === null || typeof (tx as MssqlTransaction).request !== "function") {
    throw new InvalidTransactionError("tx must be an mssql Transaction on which begin() has resolved");
  }
  return {
    query: async (text, values) => {
      const request = (tx as MssqlTransaction).request();
      for (const [i, value] of values.entries()) request.input(String(i + 1), value);
      const result = await request.query(text);
      return [...(result.recordset ?? [])];
    },
  };
}

/** Why a caller's transaction cannot be used, from the error its first statement raised. */
export function callerTransactionError(error: unknown, operation: string): unknown {
  if (isBelayError(error)) return error;
  const codes = errorCodes(error);
  if (codes.includes("ENOTBEGUN") || codes.includes("EABORT")) {
    return new InvalidTransactionError(`the transaction is not open (never begun, committed, rolled back or aborted): ${(error as Error).message}`);
  }
  // 628: SAVE TRANSACTION outside an active transaction; 3902/3903: COMMIT/ROLLBACK without BEGIN.
  const numbers = errorNumbers(error);
  if (numbers.includes(628) || numbers.includes(3902) || numbers.includes(3903) || numbers.includes(6401)) {
    return new InvalidTransactionError("the connection has no open transaction");
  }
  if (numbers.includes(3930)) return new InvalidTransactionError("the transaction cannot be committed (it has failed); roll it back");
  if (classifyError(error) === "permanent" && error instanceof Error && /not begun|has been released|closed|finished|already (committed|rolled back)/i.test(error.message)) {
    return new InvalidTransactionError(`the transaction cannot run queries: ${error.message}`);
  }
  return toStoreError(error, operation);
}
