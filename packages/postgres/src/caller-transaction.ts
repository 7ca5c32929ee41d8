import { type QueryExecutor, type QueryRow, InvalidTransactionError, KeptPromise, isBelayError, verifiedExecutor } from "@belay/contract";
import { type CheckedExecutor, type Executor, adHoc, callerTransactionError } from "./session.js";

/**
 * A way to run SQL inside a transaction the caller holds open on the store's database — what
 * `PostgresStore#enqueueThrough` accepts: the contract's `QueryExecutor`, under the name this
 * package exported it by. `query` runs one statement with its `$n` placeholders bound to
 * `values`, on that transaction's connection, and resolves to the rows it returns. Rows may come
 * with the caller's own type parsing (bigint as text, as `pg` does by default): the store
 * converts what it reads.
 *
 * With Kysely: `(sql, values) => trx.executeQuery(CompiledQuery.raw(sql, [...values])).then((r) => r.rows)`
 * (what `@belay/kysely` does).
 */
export type PostgresQueryExecutor = QueryExecutor;

/** A row as a driver returns it: the contract's `QueryRow`, under the name this package exported it by. */
export type PostgresRow = QueryRow;

/**
 * Where a connection is: its database, the OID of the store's `schema_migrations` table there
 * (`null` when the schema is absent) and the server's start time. Two connections that agree on
 * all three are on the same server, database and schema.
 */
interface Whereabouts {
  readonly database: string;
  readonly marker: string | null;
  readonly started: string;
}

const WHEREABOUTS = adHoc(
  // The start time as epoch microseconds: its text form would follow each session's TimeZone and DateStyle.
  "SELECT current_database()::text AS database, to_regclass($1)::oid::text AS marker, " +
    "(extract(epoch from pg_postmaster_start_time()) * 1000000)::bigint::text AS started",
);

function toWhereabouts(row: QueryRow | undefined): Whereabouts {
  return {
    database: String(row?.["database"]),
    marker: row?.["marker"] == null ? null : String(row["marker"]),
    started: String(row?.["started"]),
  };
}

function same(a: Whereabouts, b: Whereabouts): boolean {
  return a.database === b.database && a.marker === b.marker && a.started === b.started;
}

/**
 * Refuses a caller's transaction that is not on the store's own server, database and schema:
 * without this check an enqueue would land, and commit, in whatever database the caller's
 * connection happens to reach.
 */
export class CallerTransactionCheck {
  readonly #relation: string;
  readonly #schemaName: string;
  readonly #own: KeptPromise<Whereabouts>;

  /** @param schema the quoted schema identifier; `schemaName` its plain name, for messages. */
  constructor(meta: Executor, schema: string, schemaName: string) {
    this.#relation = `${schema}.schema_migrations`;
    this.#schemaName = schemaName;
    this.#own = new KeptPromise(() =>
      meta.run("checkCallerTransaction", "autocommit", (session) => session.query(WHEREABOUTS, [this.#relation])).then((rows) => toWhereabouts(rows[0])),
    );
  }

  /** Throws `InvalidTransactionError` unless `caller` reaches the store's database and schema. */
  async check(caller: QueryExecutor, operation: string): Promise<void> {
    let theirs: Whereabouts;
    try {
      theirs = toWhereabouts((await caller.query(WHEREABOUTS.text, [this.#relation]))[0]);
    } catch (error) {
      const refused = callerTransactionError(error, operation);
      if (isBelayError(refused)) throw refused;
      throw new InvalidTransactionError(`cannot tell which PostgreSQL database the transaction is on: ${(error as Error)?.message ?? String(error)}`);
    }
    if (theirs.marker === null) {
      throw new InvalidTransactionError(`the transaction's database ${theirs.database} has no Belay schema ${this.#schemaName}`);
    }
    let own = await this.#own.get();
    if (!same(own, theirs)) {
      // The server may have restarted since the store last looked: look again before refusing.
      this.#own.forget();
      own = await this.#own.get();
    }
    if (own.database !== theirs.database) {
      throw new InvalidTransactionError(`the transaction is on database ${theirs.database}, not on the store's database ${own.database}`);
    }
    if (!same(own, theirs)) {
      throw new InvalidTransactionError(`the transaction is on another server than the store's (database ${own.database}, schema ${this.#schemaName})`);
    }
  }
}

/**
 * `executor` with the check of `check` attached, to run once the call's savepoint is in place
 * (see `Executor#runInCallerTransaction`). Throws `InvalidTransactionError` for something that
 * cannot run SQL at all.
 */
export function checkedCaller(executor: QueryExecutor, check: CallerTransactionCheck, operation: string): CheckedExecutor {
  return verifiedExecutor(executor, check, operation);
}
