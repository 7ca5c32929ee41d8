import { createHash } from "node:crypto";
import { InvalidTransactionError, type QueryExecutor, type QueryRow, type StepHook, hookedStep } from "@belay/contract";
import { isConnectionError, sqlState, toStoreError } from "./pg-errors.js";
import type { PostgresClient, PostgresPool, PostgresPoolClient, PostgresTypeParsers } from "./pool.js";

/** SQL text with an optional prepared-statement name. */
export interface Statement {
  readonly name: string | undefined;
  readonly text: string;
}

/**
 * Builds and remembers one store's statements. A statement's prepared name is a hash of its
 * text, so two stores (or two schemas) never collide on a name with different text — `pg`
 * refuses that — and equal texts share one server-side plan per connection.
 */
export class SqlCache {
  readonly #statements = new Map<string, Statement>();

  /** @param schema the quoted schema identifier, e.g. `"belay"`. */
  constructor(readonly schema: string) {}

  /** The statement `key` of this store, built once from the schema by `build`. */
  get(key: string, build: (schema: string) => string, prepared = true): Statement {
    let statement = this.#statements.get(key);
    if (statement === undefined) {
      const text = build(this.schema);
      const name = prepared ? `belay_${createHash("sha1").update(text).digest("hex").slice(0, 24)}` : undefined;
      statement = { name, text };
      this.#statements.set(key, statement);
    }
    return statement;
  }
}

/** Ad-hoc SQL (monitoring filters): never prepared. */
export function adHoc(text: string): Statement {
  return { name: undefined, text };
}

function parseSafeInteger(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`bigint ${value} does not fit a JavaScript number`);
  return n;
}

const identity = (value: string): string => value;

/**
 * Column parsers for every type the store selects: bigint as a checked safe integer (instants,
 * sequence numbers, counts), small integers, booleans; everything else stays text (JSON, xid8).
 */
export const TYPE_PARSERS: PostgresTypeParsers = {
  getTypeParser(oid: number) {
    switch (oid) {
      case 20: // int8
        return parseSafeInteger;
      case 21: // int2
      case 23: // int4
        return Number;
      case 16: // bool
        return (value: string) => value === "t";
      default:
        return identity;
    }
  },
};

/** A connection borrowed for one operation. */
export interface Session {
  /** Runs a statement; inside a transaction when the operation is transactional. */
  query(statement: Statement, values?: readonly unknown[]): Promise<QueryRow[]>;
  /** A step boundary between two statements: the test hook may fault or park here. */
  step(step: string): Promise<void>;
  /** Whether statements of this session share one transaction. */
  readonly transactional: boolean;
  /** Whether this session runs inside a transaction the caller owns (`enqueue({ tx })`). */
  readonly callerTransaction: boolean;
}

async function run(client: PostgresClient, statement: Statement, values: readonly unknown[], prepared: boolean): Promise<QueryRow[]> {
  const result = await client.query({
    text: statement.text,
    values: values as unknown[],
    ...(prepared && statement.name !== undefined ? { name: statement.name } : {}),
    types: TYPE_PARSERS,
  });
  return result.rows;
}

/**
 * A pool connection borrowed for one operation. A connection the server drops between two
 * statements (a terminated backend, a failover) reports it as an 'error' event, not as a failed
 * query: without a listener that event would crash the process. The event, a connection error or
 * a failed rollback marks the connection broken; the next statement fails and is retried, and
 * `release` destroys a broken connection instead of returning it to the pool.
 */
export class BorrowedClient {
  readonly client: PostgresPoolClient;
  #broken: unknown;
  readonly #onError = (error: Error) => void (this.#broken ??= error);

  private constructor(client: PostgresPoolClient) {
    this.client = client;
    client.on("error", this.#onError);
  }

  /** A connection from `pool` for `operation` (a failure to connect is the operation's). */
  static async of(pool: PostgresPool, operation: string): Promise<BorrowedClient> {
    try {
      return new BorrowedClient(await pool.connect());
    } catch (error) {
      throw toStoreError(error, operation);
    }
  }

  /**
   * The error that failed `operation`, as the store reports it, once the connection is dealt with:
   * marked broken after a connection error, else rolled back by `rollback` (given while a
   * transaction is open), or marked broken when that fails.
   */
  async failed(error: unknown, operation: string, rollback: (() => Promise<unknown>) | null): Promise<unknown> {
    if (isConnectionError(error)) this.#broken = error;
    else if (rollback !== null) {
      try {
        await rollback();
      } catch (rollbackError) {
        this.#broken = rollbackError;
      }
    }
    return toStoreError(error, operation);
  }

  release(): void {
    this.client.removeListener?.("error", this.#onError);
    this.client.release(this.#broken === undefined ? undefined : true);
  }
}

const BEGIN = adHoc("BEGIN");
const COMMIT = adHoc("COMMIT");
const ROLLBACK = adHoc("ROLLBACK");
/**
 * Each call's savepoint has a name of its own: should two calls ever overlap on one connection
 * (against the documented rule), releasing or rolling back one then fails loudly instead of
 * silently releasing or undoing the other's savepoint.
 */
let savepoints = 0;
const savepointName = (): string => `belay_enqueue_${++savepoints}`;

/**
 * Runs operations on pool connections: a single statement in autocommit, or several in one
 * transaction. With a step hook installed every operation is transactional, so that a fault
 * injected at any step rolls the whole operation back and a parked step holds its transaction.
 */
export class Executor {
  readonly #pool: PostgresPool;
  readonly #hook: () => StepHook | null;

  constructor(pool: PostgresPool, hook: () => StepHook | null) {
    this.#pool = pool;
    this.#hook = hook;
  }

  /** Whether a step hook is installed (operations then always run in a transaction). */
  get hooked(): boolean {
    return this.#hook() !== null;
  }

  /**
   * Runs `body` on one connection. `autocommit`: each statement commits on its own, so the body
   * must issue one write statement (reads around it are fine). `transaction`: BEGIN before the
   * first statement, COMMIT after the body, ROLLBACK if anything throws. `begin` replaces the
   * plain `BEGIN` (to name an isolation level whatever the server's default).
   */
  async run<T>(operation: string, mode: "autocommit" | "transaction", body: (session: Session) => Promise<T>, begin: Statement = BEGIN): Promise<T> {
    const hook = this.#hook();
    const transactional = mode === "transaction" || hook !== null;
    const borrowed = await BorrowedClient.of(this.#pool, operation);
    const { client } = borrowed;
    let began = false;
    const session: Session = {
      transactional,
      callerTransaction: false,
      query: async (statement, values = []) => {
        if (transactional && !began) {
          await run(client, begin, [], false);
          began = true;
        }
        return run(client, statement, values, true);
      },
      step: hookedStep(hook, operation),
    };
    try {
      const result = await body(session);
      if (began) {
        await session.step("commit");
        await run(client, COMMIT, [], false);
        began = false;
      }
      return result;
    } catch (error) {
      throw await borrowed.failed(error, operation, began ? () => run(client, ROLLBACK, [], false) : null);
    } finally {
      borrowed.release();
    }
  }

  /**
   * Runs `body` inside the caller's open transaction, reached through `caller`, wrapped in a
   * savepoint: a batch that is refused (`keep(result)` false) or throws is rolled back to the
   * savepoint and leaves the caller's transaction usable.
   *
   * The savepoint doubles as the proof that `caller` is inside an open transaction block:
   * PostgreSQL refuses `SAVEPOINT` outside one (SQLSTATE 25P01) and inside a failed one (25P02),
   * without starting an implicit transaction. Checks on `txid_current_if_assigned()` or
   * timestamps cannot tell "no transaction" from "a transaction that has not written yet".
   */
  async runInCallerTransaction<T>(
    caller: QueryExecutor,
    operation: string,
    keep: (result: T) => boolean,
    body: (session: Session) => Promise<T>,
  ): Promise<T> {
    const savepoint = savepointName();
    try {
      await caller.query(`SAVEPOINT ${savepoint}`, []);
    } catch (error) {
      throw callerTransactionError(error, operation);
    }
    const { verify } = caller as CheckedExecutor;
    if (verify !== undefined) {
      // Inside the savepoint: a refusal, or a check that fails (no access to the store's schema,
      // say), is rolled back to it and leaves the caller's transaction usable.
      try {
        await verify();
      } catch (error) {
        await this.#undoSavepoint(caller, savepoint);
        throw error;
      }
    }
    const hook = this.#hook();
    const session: Session = {
      transactional: true,
      callerTransaction: true,
      query: async (statement, values = []) => [...(await caller.query(statement.text, values))],
      step: hookedStep(hook, operation),
    };
    let result: T;
    try {
      result = await body(session);
    } catch (error) {
      await this.#undoSavepoint(caller, savepoint);
      const state = sqlState(error);
      if (state === "42P01" || state === "3F000") {
        throw new InvalidTransactionError(`the transaction's database has no Belay schema here (${(error as Error).message})`);
      }
      throw toStoreError(error, operation);
    }
    try {
      if (keep(result)) await caller.query(`RELEASE SAVEPOINT ${savepoint}`, []);
      else await this.#undoSavepoint(caller, savepoint);
    } catch (error) {
      throw toStoreError(error, operation);
    }
    return result;
  }

  async #undoSavepoint(caller: QueryExecutor, savepoint: string): Promise<void> {
    try {
      await caller.query(`ROLLBACK TO SAVEPOINT ${savepoint}`, []);
      await caller.query(`RELEASE SAVEPOINT ${savepoint}`, []);
    } catch {
      // The connection or transaction is gone; the caller's own COMMIT or ROLLBACK will say so.
    }
  }
}

/** A caller's executor with the check of where it is, run once its savepoint is in place. */
export interface CheckedExecutor extends QueryExecutor {
  readonly verify?: () => Promise<void>;
}

/**
 * The caller's `pg` client as an executor (`enqueue({ tx })`), with this package's type parsers.
 * Unnamed statements only: a caller's connection may be reset (DISCARD ALL) behind the driver's
 * back, and named statements cached for it would then fail.
 */
export function clientExecutor(client: unknown): QueryExecutor {
  if (typeof client !== "object" || client === null || typeof (client as PostgresClient).query !== "function") {
    throw new InvalidTransactionError("tx must be a pg client (with query()) on which BEGIN was run");
  }
  return { query: (text, values) => run(client as PostgresClient, { name: undefined, text }, values, false) };
}

/** Why a caller's transaction cannot be used, from the error its first statement raised. */
export function callerTransactionError(error: unknown, operation: string): unknown {
  const state = sqlState(error);
  if (state === "25P01") return new InvalidTransactionError("the client has no open transaction (run BEGIN first, and not after COMMIT or ROLLBACK)");
  if (state === "25P02") return new InvalidTransactionError("the transaction has failed; roll it back");
  if (state === undefined && error instanceof Error && /not queryable|has been released|closed/i.test(error.message)) {
    return new InvalidTransactionError(`the client cannot run queries: ${error.message}`);
  }
  return toStoreError(error, operation);
}
