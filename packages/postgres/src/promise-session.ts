import type { QueryRow, StepHook } from "@belay/contract";
import { isConnectionError, toStoreError } from "./pg-errors.js";
import type { PostgresClient, PostgresPool, PostgresPoolClient } from "./pool.js";
import { type Session, type Statement, TYPE_PARSERS, adHoc } from "./session.js";

// One promise operation on one pool connection: a transaction whose BEGIN goes out with its first
// statement and whose COMMIT goes out with its write when the connection pipelines (pg's
// `pipeline: true`: a query is sent without waiting for the answers of those before it), so a
// load-decide-write operation costs two round trips instead of four; or no transaction at all,
// for an operation whose every statement stands alone.

/** The session of one promise operation. */
export interface PromiseSession extends Session {
  /**
   * Sends the operation's write, its last statement. On a pipelining connection it goes out with
   * the COMMIT, in one round trip, and its failure surfaces when the operation commits; absent,
   * the write is an ordinary `query`.
   */
  readonly write?: (statement: Statement, values: readonly unknown[]) => Promise<void>;
}

const COMMIT = adHoc("COMMIT");
const ROLLBACK = adHoc("ROLLBACK");

function send(client: PostgresClient, statement: Statement, values: readonly unknown[]): Promise<QueryRow[]> {
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
function pipelining(client: PostgresPoolClient): boolean {
  return (client as { readonly pipeline?: unknown }).pipeline === true;
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
  options: { readonly hook: StepHook | null; readonly begin: Statement | null },
  body: (session: PromiseSession) => Promise<T>,
): Promise<T> {
  const { hook, begin } = options;
  let client: PostgresPoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw toStoreError(error, operation);
  }
  const pipelined = hook === null && pipelining(client);
  let began = false;
  let broken: unknown;
  // The write sent without waiting for its answer: awaited before anything else is.
  let inFlight: Promise<unknown> | null = null;
  const settle = async () => {
    const pending = inFlight;
    inFlight = null;
    if (pending !== null) await pending;
  };
  // A connection the server drops between two statements (a terminated backend, a failover)
  // reports it as an 'error' event, not as a failed query: without a listener that event would
  // crash the process. Mark the connection broken; the next statement fails and is retried.
  const onError = (error: Error) => void (broken ??= error);
  client.on("error", onError);
  const open = (): Promise<unknown> | null => {
    if (begin === null || began) return null;
    began = true;
    return quiet(send(client, begin, []));
  };
  const session: PromiseSession = {
    transactional: begin !== null,
    callerTransaction: false,
    query: async (statement, values = []) => {
      await settle();
      const opened = open();
      if (opened === null) return send(client, statement, values);
      if (!pipelined) {
        await opened;
        return send(client, statement, values);
      }
      // BEGIN and the statement in one round trip; a failed BEGIN is the failure to report.
      const rows = quiet(send(client, statement, values));
      await opened;
      return rows;
    },
    ...(pipelined && begin !== null
      ? {
          write: async (statement: Statement, values: readonly unknown[]) => {
            await settle();
            // A write that opens the transaction waits for its BEGIN: pipelined behind a BEGIN
            // that failed, it would run (and commit) on its own.
            const opened = open();
            if (opened !== null) await opened;
            inFlight = quiet(send(client, statement, values));
          },
        }
      : {}),
    step: async (step) => {
      if (hook !== null) await hook({ operation, step });
    },
  };
  try {
    const result = await body(session);
    if (began) {
      await session.step("commit");
      // The COMMIT follows the write at once. After a failed write it ends the transaction as a
      // ROLLBACK (PostgreSQL's answer to COMMIT in an aborted transaction): the connection is
      // clean either way, and the write's failure is the operation's.
      const committed = quiet(send(client, COMMIT, []));
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
    if (isConnectionError(error)) broken = error;
    else if (began) {
      try {
        await settle().catch(() => undefined);
        await send(client, ROLLBACK, []);
      } catch (rollbackError) {
        broken = rollbackError;
      }
    }
    throw toStoreError(error, operation);
  } finally {
    client.removeListener?.("error", onError);
    client.release(broken === undefined ? undefined : true);
  }
}
