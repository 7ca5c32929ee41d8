import type { QueryRow } from "@belay/contract";
import { isConnectionError } from "./pg-errors.js";
import type { PostgresPool, PostgresPoolClient } from "./pool.js";
import { BEGIN_READ_COMMITTED, COMMIT, corkableSocket, pipelining, sendStatement } from "./promise-session.js";
import { BorrowedClient, type Statement, adHoc } from "./session.js";

/**
 * How long a statement of a shared transaction waits for a row lock before the transaction gives
 * up (and its statements run again alone). The rows of statements in flight together are
 * disjoint, but another transaction (a load of this store, or another process's) may lock two of
 * them in the opposite order: a deadlock PostgreSQL would break only after `deadlock_timeout`.
 * And a lock held long elsewhere should hold up its own statement's caller, not 63 others.
 */
export const GROUP_LOCK_TIMEOUT_MS = 100;

/** The connection of the operation that hands its statement over, and how it gives it back. */
export interface OwnConnection {
  readonly borrowed: BorrowedClient;
  readonly release: () => void;
}

interface Waiting {
  readonly statement: Statement;
  readonly values: readonly unknown[];
  /** The ids of the rows the statement locks or writes. */
  readonly keys: readonly string[];
  readonly resolve: (rows: QueryRow[]) => void;
  readonly reject: (error: unknown) => void;
  /** The caller's connection, kept for the transaction that will carry the statement (`null`: given back). */
  own: OwnConnection | null;
}

type Outcome = PromiseSettledResult<QueryRow[]>;

/**
 * Group commit for promise operations whose whole work is one statement that stands on its own
 * (it checks everything it decides on, so it may commit beside any other). At most `maxInFlight`
 * transactions run at once; statements that arrive meanwhile wait, and the next transaction
 * carries all of them (up to `maxStatements`): BEGIN, the statements and COMMIT, pipelined in one
 * packet, so ten callers' operations cost one commit and one round trip instead of ten. A
 * statement that finds a free slot and nobody waiting goes out at once, alone, on its caller's
 * connection, committing on its own: a lone caller waits for nothing.
 *
 * Statements of transactions in flight together never name a row in common, and neither do two
 * statements of one transaction: one that does waits for a later transaction, and the waiting
 * are taken in order by row (a statement passed over keeps its rows from those behind it). So
 * this store's own shared transactions never wait for each other's locks and a statement never
 * meets a row its neighbour changed after the caller decided on it. A lock held elsewhere is
 * waited for `lockTimeoutMs` (default `GROUP_LOCK_TIMEOUT_MS`) at most.
 *
 * Nobody is answered before the commit. A transaction that fails is undone whole (COMMIT answers
 * ROLLBACK), so its statements run again alone, each committing on its own, and each caller gets
 * its own statement's outcome; after a connection error (the commit's fate unknown) every caller
 * gets that error, as each would have alone.
 *
 * Connections: the first statement to wait keeps its caller's connection, which carries the
 * transaction the statement goes in; the others give theirs back to the pool at once. So a
 * transaction seldom waits for the pool, and a waiting caller never holds a connection the
 * transaction ahead of it needs.
 */
export class CommitGroup {
  readonly #pool: PostgresPool;
  readonly #maxInFlight: number;
  readonly #maxStatements: number;
  readonly #lockTimeout: Statement;
  #waiting: Waiting[] = [];
  /** The keys of every statement in flight. */
  readonly #busy = new Set<string>();
  #inFlight = 0;
  /** A freed slot's next transaction waits for the next turn of the event loop (see `#free`). */
  #deferred = false;

  constructor(pool: PostgresPool, maxInFlight: number, maxStatements: number, lockTimeoutMs = GROUP_LOCK_TIMEOUT_MS) {
    this.#pool = pool;
    this.#maxInFlight = maxInFlight;
    this.#maxStatements = maxStatements;
    this.#lockTimeout = adHoc(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
  }

  /**
   * Runs `statement`, committed (with others, maybe) when this resolves. `keys`: the ids of the
   * rows it locks or writes. `own`: the caller's connection, which the caller releases (again) once
   * this settles; the group has finished with it by then.
   */
  run(statement: Statement, values: readonly unknown[], keys: readonly string[], own: OwnConnection): Promise<QueryRow[]> {
    if (!this.#deferred && this.#waiting.length === 0 && this.#inFlight < this.#maxInFlight && keys.every((key) => !this.#busy.has(key))) {
      for (const key of keys) this.#busy.add(key);
      this.#inFlight++;
      return sendStatement(own.borrowed.client, statement, values).finally(() => this.#free(keys));
    }
    const keeps = !this.#waiting.some((w) => w.own !== null);
    if (!keeps) own.release();
    return new Promise((resolve, reject) => {
      this.#waiting.push({ statement, values, keys, resolve, reject, own: keeps ? own : null });
      if (!this.#deferred) this.#next();
    });
  }

  #next(): void {
    this.#deferred = false;
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      const group: Waiting[] = [];
      const taken = new Set<string>();
      // The keys of statements passed over: those behind them wait too (in order, by row).
      const passed = new Set<string>();
      const left: Waiting[] = [];
      for (const w of this.#waiting) {
        const free = w.keys.every((key) => !this.#busy.has(key) && !taken.has(key) && !passed.has(key));
        if (free && group.length < this.#maxStatements) {
          group.push(w);
          for (const key of w.keys) taken.add(key);
        } else {
          left.push(w);
          for (const key of w.keys) passed.add(key);
        }
      }
      // Every waiting statement names a row in flight: the end of a transaction calls again.
      if (group.length === 0) return;
      this.#waiting = left;
      for (const key of taken) this.#busy.add(key);
      // A kept connection carries the transaction; any other kept one in it goes back now.
      const carrier = group.findIndex((w) => w.own !== null);
      for (const [i, w] of group.entries()) {
        if (w.own !== null && i !== carrier) {
          w.own.release();
          w.own = null;
        }
      }
      this.#inFlight++;
      void this.#flush(group, taken, carrier);
    }
  }

  /**
   * Frees the slot of a transaction whose callers are about to be answered. While others wait or
   * run, its next transaction waits for the next turn of the event loop: the callers answered
   * often send their next statement at once, and so share it instead of the first taking it alone.
   */
  #free(keys: Iterable<string>): void {
    this.#inFlight--;
    for (const key of keys) this.#busy.delete(key);
    if (this.#waiting.length === 0 && this.#inFlight === 0) return;
    if (this.#deferred) return;
    this.#deferred = true;
    setImmediate(() => this.#next());
  }

  async #flush(group: readonly Waiting[], keys: ReadonlySet<string>, carrier: number): Promise<void> {
    const answered = group.map(() => false);
    const answer = (i: number, outcome: Outcome) => {
      if (answered[i]) return;
      answered[i] = true;
      if (outcome.status === "fulfilled") group[i]!.resolve(outcome.value);
      else group[i]!.reject(outcome.reason);
    };
    let failure: Outcome = { status: "rejected", reason: new Error("commit group: no outcome") };
    try {
      await this.#execute(group, carrier, answer);
    } catch (error) {
      failure = { status: "rejected", reason: error };
    }
    this.#free(keys);
    for (const i of group.keys()) answer(i, failure);
  }

  /**
   * Runs `group` on the carrier's connection (or one borrowed) and answers each caller as soon as
   * its statement's outcome is known and its connection is no longer needed (the carrier's caller
   * gives its connection back once answered); throws what fails them all (no connection, or one
   * lost in the shared transaction) before answering any. A shared transaction undone runs its
   * statements again alone, concurrently, each on a connection of its own: one that waits for a
   * lock holds up nobody else.
   */
  async #execute(group: readonly Waiting[], carrier: number, answer: (i: number, outcome: Outcome) => void): Promise<void> {
    const own = carrier === -1 ? null : group[carrier]!.own!;
    const borrowed = own?.borrowed ?? (await BorrowedClient.of(this.#pool, "promise operation"));
    const { client } = borrowed;
    let held: Outcome | null = null;
    let lost: unknown = null;
    const report = (i: number, outcome: Outcome) => {
      if (outcome.status === "rejected" && isConnectionError(outcome.reason)) lost ??= outcome.reason;
      if (i === carrier) held = outcome;
      else answer(i, outcome);
    };
    let undone = false;
    try {
      if (group.length === 1 || !pipelining(client)) {
        for (const [i, w] of group.entries()) report(i, await settled(sendStatement(client, w.statement, w.values)));
      } else {
        const together = await inOneTransaction(client, this.#lockTimeout, group);
        if (together.committed) together.outcomes.forEach((outcome, i) => report(i, outcome));
        else if (isConnectionError(together.failure)) throw together.failure;
        else undone = true;
      }
      // A connection lost on the way is not given back to the pool.
      if (lost !== null) await borrowed.failed(lost, "promise operation", null);
    } catch (error) {
      await borrowed.failed(error, "promise operation", null);
      throw error;
    } finally {
      if (own === null) borrowed.release();
    }
    if (held !== null) answer(carrier, held);
    if (undone) await Promise.all(group.map(async (w, i) => answer(i, await this.#alone(w, i === carrier ? own : null))));
  }

  /** `w`'s statement alone, committing on its own, on `own` or a connection borrowed for it. */
  async #alone(w: Waiting, own: OwnConnection | null): Promise<Outcome> {
    let borrowed: BorrowedClient;
    try {
      borrowed = own?.borrowed ?? (await BorrowedClient.of(this.#pool, "promise operation"));
    } catch (error) {
      return { status: "rejected", reason: error };
    }
    const outcome = await settled(sendStatement(borrowed.client, w.statement, w.values));
    if (outcome.status === "rejected" && isConnectionError(outcome.reason)) await borrowed.failed(outcome.reason, "promise operation", null);
    if (own === null) borrowed.release();
    return outcome;
  }
}

type Together =
  | { readonly committed: true; readonly outcomes: readonly Outcome[] }
  | { readonly committed: false; readonly failure: unknown };

/**
 * BEGIN, the lock timeout, the statements and COMMIT, in one packet. Committed, with each
 * statement's answer; or rolled back (COMMIT answered ROLLBACK, or failed), with the first failure.
 */
async function inOneTransaction(client: PostgresPoolClient, lockTimeout: Statement, group: readonly Waiting[]): Promise<Together> {
  const socket = corkableSocket(client);
  socket?.cork();
  let begun: Promise<PromiseSettledResult<unknown>>;
  const answers: Promise<Outcome>[] = [];
  let committed: Promise<PromiseSettledResult<string | undefined>>;
  try {
    begun = settled(sendStatement(client, BEGIN_READ_COMMITTED, []));
    answers.push(settled(sendStatement(client, lockTimeout, [])));
    for (const w of group) answers.push(settled(sendStatement(client, w.statement, w.values)));
    committed = settled(client.query({ text: COMMIT.text }).then((result) => (result as { readonly command?: string }).command));
  } finally {
    socket?.uncork();
  }
  const opened = await begun;
  const [timeout, ...outcomes] = await Promise.all(answers);
  const commit = await committed;
  if (opened.status === "rejected") {
    // No transaction: each statement ran, and committed or failed, on its own.
    if (isConnectionError(opened.reason)) throw opened.reason;
    return { committed: true, outcomes };
  }
  const first = [timeout!, ...outcomes, commit].find((o): o is PromiseRejectedResult => o.status === "rejected");
  // PostgreSQL's own word: COMMIT answers ROLLBACK for a transaction a failure aborted (a driver
  // that does not say is taken at the failures).
  const rolledBack = commit.status === "rejected" || (commit.value === undefined ? first !== undefined : commit.value !== "COMMIT");
  if (!rolledBack) return { committed: true, outcomes };
  return { committed: false, failure: first?.reason ?? new Error(`COMMIT answered ${commit.status === "fulfilled" ? commit.value : "nothing"}`) };
}

function settled<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value) => ({ status: "fulfilled", value }) as const,
    (reason: unknown) => ({ status: "rejected", reason }) as const,
  );
}
