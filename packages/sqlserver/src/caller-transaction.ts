import { InvalidTransactionError, KeptPromise, type QueryExecutor, type QueryRow, isBelayError, verifiedExecutor } from "@belay/contract";
import { toInt } from "./keys.js";
import { type CheckedExecutor, type Executor, callerTransactionError } from "./session.js";
import { render, statement } from "./statements.js";

/**
 * Where a connection is, and whether it holds an open transaction: its transaction count and
 * state, its database's name and `service_broker_guid` (unique per database, also across a
 * restore as a copy), and the object id of the store's `schema_migrations` there (NULL: no Belay
 * schema). Two connections that agree on the database guid and the object id reach the same
 * database and schema.
 */
export const WHEREABOUTS = statement(
  "whereabouts",
  { table: "nvarchar(300)" },
  () => `SELECT @@TRANCOUNT AS trancount, XACT_STATE() AS xact, DB_NAME() AS db,
  CONVERT(nvarchar(36), (SELECT d.service_broker_guid FROM sys.databases AS d WHERE d.database_id = DB_ID())) AS db_guid,
  OBJECT_ID(@table, N'U') AS marker`,
);

interface Whereabouts {
  readonly trancount: number;
  readonly xact: number;
  readonly db: string;
  readonly guid: string;
  readonly marker: number | null;
}

function toWhereabouts(row: QueryRow | undefined): Whereabouts {
  return {
    trancount: toInt(row?.["trancount"] ?? 0),
    xact: toInt(row?.["xact"] ?? 0),
    db: String(row?.["db"]),
    guid: String(row?.["db_guid"]),
    marker: row?.["marker"] == null ? null : toInt(row["marker"]),
  };
}

/**
 * Refuses a caller's transaction that is not open, or not on the store's own database and schema:
 * without this check an enqueue would land, and commit, wherever the caller's connection reaches.
 */
export class CallerTransactionCheck {
  readonly #table: string;
  readonly #schemaName: string;
  readonly #own: KeptPromise<Whereabouts>;

  constructor(meta: Executor, schemaName: string) {
    this.#table = `[${schemaName}].[schema_migrations]`;
    this.#schemaName = schemaName;
    this.#own = new KeptPromise(() => meta.read("checkCallerTransaction", (session) => session.rows(WHEREABOUTS, { table: this.#table })).then((rows) => toWhereabouts(rows[0])));
  }

  async check(caller: QueryExecutor, operation: string): Promise<void> {
    let theirs: Whereabouts;
    try {
      theirs = toWhereabouts((await caller.query(render(WHEREABOUTS, ""), [this.#table]))[0]);
    } catch (error) {
      const refused = callerTransactionError(error, operation);
      if (isBelayError(refused)) throw refused;
      throw new InvalidTransactionError(`cannot tell which SQL Server database the transaction is on: ${(error as Error)?.message ?? String(error)}`);
    }
    if (theirs.trancount === 0) throw new InvalidTransactionError("the connection has no open transaction (begin one first, and not after its commit or rollback)");
    if (theirs.xact === -1) throw new InvalidTransactionError("the transaction has failed and cannot commit; roll it back");
    if (theirs.marker === null) throw new InvalidTransactionError(`the transaction's database ${theirs.db} has no Belay schema ${this.#schemaName}`);
    let own = await this.#own.get();
    if (own.guid !== theirs.guid || own.marker !== theirs.marker) {
      this.#own.forget();
      own = await this.#own.get();
    }
    if (own.guid !== theirs.guid) throw new InvalidTransactionError(`the transaction is on database ${theirs.db}, not on the store's database ${own.db}`);
    if (own.marker !== theirs.marker) throw new InvalidTransactionError(`the transaction reaches another schema ${this.#schemaName} than the store's`);
  }
}

/** `executor` with the check attached. Throws `InvalidTransactionError` for something that cannot run SQL at all. */
export function checkedCaller(executor: QueryExecutor, check: CallerTransactionCheck, operation: string): CheckedExecutor {
  return verifiedExecutor(executor, check, operation);
}
