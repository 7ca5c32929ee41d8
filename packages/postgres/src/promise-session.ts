import { type QueryRow, type StepHook, hookedStep } from "@belay/contract";
import type { CommitGroup } from "./commit-group.js";
import type { PostgresClient, PostgresPool, PostgresPoolClient } from "./pool.js";
import { BorrowedClient, type Session, type Statement, TYPE_PARSERS, adHoc } from "./session.js";

// One promise operation on one pool connection: a transaction whose BEGIN goes out with its first
// statement and whose COMMIT goes out with its write when the connection pipelines (pg's
// `pipeline: true`: a query is sent without waiting for the answers of those before it), so a
// load-decide-write operation costs two round trips instead of four; or no transaction at all,
// for an operation whose every statement stands alone. An operation whose whole work is one
// statement that stands alone hands it to the store's commit group, which commits it beside other
// callers' (see `commit-group.ts`).

/** The session of one promise operation. */
export interface PromiseSession extends Session {
  /**
   * Sends the operation's write, its last statement. On a pipelining connection it goes out with
   * the COMMIT, in one round trip, and its failure surfaces when the operation commits; absent,
   * the write is an ordinary `query`.
   */
  readonly write?: (statement: Statement, values: readonly unknown[]) => Promise<void>;
  /**
   * Sends the operation's last statement, one that stands on its own (it checks everything it
   * decides on, see `promise-row-cache.ts`). When nothing went out before it, it is the whole
   * operation: no BEGIN, no COMMIT, it commits alone (on a pipelining connection its failure
   * surfaces when the operation ends), or, given to the store's commit group, beside other
   * callers' statements in one transaction. In a transaction already open, it is the write.
   * `keys`: the ids of the rows it locks or changes (the group never runs two that share one together).
   */
  readonly finish: (statement: Statement, values: readonly unknown[], keys: readonly string[]) => Promise<void>;
  /** Whether the operation's transaction has begun: a statement of it went out. */
  readonly begun: boolean;
}

/** Every promise transaction says its isolation level, whatever the server's default. */
export const BEGIN_READ_COMMITTED = adHoc("BEGIN ISOLATION LEVEL READ COMMITTED");
export const COMMIT = adHoc("COMMIT");
const ROLLBACK = adHoc("ROLLBACK");

export function sendStatement(client: PostgresClient, statement: Statement, values: readonly unknown[]): Promise<QueryRow[]> {
  return client
    .query({
      text: statement.text,
      values: values as unknown[],
      ...(statement.name !== undefined ? { name: statement.name } : {}),
      types: TYPE_PARSERS,
    })
    .then((result) => result.rows);
}

/** Whether `client` sends each query at once, without waiting for the answers to those before it. */
export function pipelining(client: PostgresPoolClient): boolean {
  return (client as { readonly pipeline?: unknown }).pipeline === true;
}

/** A socket whose writes can be held back and sent together. */
interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * The socket under a `pg` client (its `connection.stream`), to cork while pipelined queries go
 * out: pg writes each query the moment it is asked, so BEGIN and a load (or a write and its
 * COMMIT) would be two system calls and two packets, each waking the backend. Not part of `pg`'s
 * typed API: another driver, or a wrapped client, is simply not corked.
 */
export function corkableSocket(client: PostgresPoolClient): Corkable | null {
  const stream = (client as { readonly connection?: { readonly stream?: Partial<Corkable> } }).connection?.stream;
  return typeof stream?.cork === "function" && typeof stream.uncork === "function" ? (stream as Corkable) : null;
}

/** `promise`, whose rejection counts as handled until someone awaits it. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * Runs `body` on one pool connection. With `begin`, one transaction: `begin` goes out before the
 * first statement, COMMIT after the body, ROLLBACK if anything throws. Without, every statement
 * commits on its own. With a step hook installed nothing is pipelined, so each step falls between
 * two statements the server has answered.
 */
export async function runPromiseOperation<T>(
  pool: PostgresPool,
  operation: string,
  options: { readonly hook: StepHook | null; readonly begin: Statement | null; readonly group: CommitGroup | null },
  body: (session: PromiseSession) => Promise<T>,
): Promise<T> {
  const { hook, begin, group } = options;
  const borrowed = await BorrowedClient.of(pool, operation);
  const { client } = borrowed;
  const pipelined = hook === null && pipelining(client);
  const socket = pipelined ? corkableSocket(client) : null;
  // Whether the connection went back to the pool before the operation ended (its statement went to the commit group).
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    borrowed.release();
  };
  // Corked from the write until the COMMIT is queued behind it, so the two leave as one packet;
  // a tick later at the latest, whatever happens in between.
  let corked = false;
  const uncork = () => {
    if (!corked) return;
    corked = false;
    socket!.uncork();
  };
  const cork = () => {
    if (socket === null || corked) return;
    corked = true;
    socket.cork();
    process.nextTick(uncork);
  };
  let began = false;
  // The write sent without waiting for its answer: awaited before anything else is.
  let inFlight: Promise<unknown> | null = null;
  const settle = async () => {
    const pending = inFlight;
    inFlight = null;
    if (pending !== null) await pending;
  };
  const open = (): Promise<unknown> | null => {
    if (begin === null || began) return null;
    began = true;
    return quiet(sendStatement(client, begin, []));
  };
  const write =
    pipelined && begin !== null
      ? async (statement: Statement, values: readonly unknown[]) => {
          await settle();
          // A write that opens the transaction waits for its BEGIN: pipelined behind a BEGIN
          // that failed, it would run (and commit) on its own.
          const opened = open();
          if (opened !== null) await opened;
          cork();
          inFlight = quiet(sendStatement(client, statement, values));
        }
      : undefined;
  const session: PromiseSession = {
    transactional: begin !== null,
    callerTransaction: false,
    query: async (statement, values = []) => {
      await settle();
      if (!pipelined) {
        const opened = open();
        if (opened !== null) await opened;
        return sendStatement(client, statement, values);
      }
      // BEGIN and the statement in one round trip (one packet); a failed BEGIN is the failure to report.
      cork();
      let opened: Promise<unknown> | null;
      let rows: Promise<QueryRow[]>;
      try {
        opened = open();
        rows = quiet(sendStatement(client, statement, values));
      } finally {
        uncork();
      }
      if (opened !== null) await opened;
      return rows;
    },
    ...(write === undefined ? {} : { write }),
    finish: async (statement, values, keys) => {
      if (began) {
        if (write !== undefined) await write(statement, values);
        else await session.query(statement, values);
        return;
      }
      await settle();
      if (pipelined && group !== null) {
        // The whole operation: on this connection, alone or carrying others' with it, or with others' on another.
        inFlight = quiet(group.run(statement, values, keys, { borrowed, release }));
      } else if (pipelined) inFlight = quiet(sendStatement(client, statement, values));
      else await sendStatement(client, statement, values);
    },
    step: hookedStep(hook, operation),
    get begun() {
      return began;
    },
  };
  try {
    const result = await body(session);
    if (began) {
      await session.step("commit");
      // The COMMIT follows the write at once. After a failed write it ends the transaction as a
      // ROLLBACK (PostgreSQL's answer to COMMIT in an aborted transaction): the connection is
      // clean either way, and the write's failure is the operation's.
      let committed: Promise<unknown>;
      try {
        committed = quiet(sendStatement(client, COMMIT, []));
      } finally {
        uncork();
      }
      let failure: { readonly error: unknown } | null = null;
      try {
        await settle();
      } catch (error) {
        failure = { error };
      }
      began = false;
      await committed;
      if (failure !== null) throw failure.error;
    } else {
      await settle();
    }
    return result;
  } catch (error) {
    uncork();
    const rollback = async () => {
      await settle().catch(() => undefined);
      await sendStatement(client, ROLLBACK, []);
    };
    throw await borrowed.failed(error, operation, began ? rollback : null);
  } finally {
    release();
  }
}
