import type { QueryRow } from "@belay/contract";
import { isConnectionError } from "./pg-errors.js";
import type { PostgresPool, PostgresPoolClient } from "./pool.js";
import { BEGIN_READ_COMMITTED, COMMIT, ROLLBACK, corkableSocket, pipelining, sendStatement } from "./promise-session.js";
import { BorrowedClient, type Statement } from "./session.js";

interface Waiting {
  readonly statement: Statement;
  readonly values: readonly unknown[];
  /** The ids of the rows the statement locks or writes. */
  readonly keys: readonly string[];
  readonly resolve: (rows: QueryRow[]) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit for promise operations whose whole work is one statement that stands on its own
 * (it checks everything it decides on, so it may commit beside any other). At most `maxInFlight`
 * transactions run at once; statements that arrive meanwhile wait, and the next transaction
 * carries all of them (up to `maxStatements`): BEGIN, the statements and COMMIT, pipelined in one
 * packet, so ten callers' operations cost one commit and one round trip instead of ten. A
 * statement that finds a free slot and nobody waiting goes out at once, alone, committing on its
 * own: a lone caller waits for nothing.
 *
 * Statements of transactions in flight together never name a row in common, and neither do two
 * statements of one transaction: one that does waits for a later transaction. So this store's
 * own transactions never wait for each other's locks (two transactions each holding a row the
 * other wants would deadlock, and PostgreSQL finds that only after `deadlock_timeout`), and a
 * statement never meets a row its neighbour changed after the caller decided on it.
 *
 * Nobody is answered before the commit. A transaction that fails is undone whole, so its
 * statements run again one by one, each committing alone, and each caller gets its own
 * statement's outcome; after a connection error (the commit's fate unknown) every caller gets
 * that error, as each would have alone.
 */
export class CommitGroup {
  readonly #pool: PostgresPool;
  readonly #maxInFlight: number;
  readonly #maxStatements: number;
  #waiting: Waiting[] = [];
  /** The keys of every statement in flight (one statement's keys are distinct, and so are those of statements in flight together). */
  readonly #busy = new Set<string>();
  #inFlight = 0;
  /** A freed slot's next transaction waits for the next turn of the event loop (see `#free`). */
  #deferred = false;

  constructor(pool: PostgresPool, maxInFlight: number, maxStatements: number) {
    this.#pool = pool;
    this.#maxInFlight = maxInFlight;
    this.#maxStatements = maxStatements;
  }

  /**
   * Runs `statement`, committed (with others, maybe) when this resolves. `keys`: the ids of the
   * rows it locks or writes. `own`: the caller's connection. When the statement can go out at
   * once and alone, it goes on that connection (which the caller releases as usual); when it
   * waits, the connection goes back to the pool first.
   */
  run(statement: Statement, values: readonly unknown[], keys: readonly string[], own: { readonly client: PostgresPoolClient; readonly release: () => void }): Promise<QueryRow[]> {
    if (!this.#deferred && this.#waiting.length === 0 && this.#inFlight < this.#maxInFlight && keys.every((key) => !this.#busy.has(key))) {
      for (const key of keys) this.#busy.add(key);
      this.#inFlight++;
      return sendStatement(own.client, statement, values).finally(() => this.#free(keys));
    }
    own.release();
    return new Promise((resolve, reject) => {
      this.#waiting.push({ statement, values, keys, resolve, reject });
      if (!this.#deferred) this.#next();
    });
  }

  #next(): void {
    this.#deferred = false;
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      const group: Waiting[] = [];
      const keys = new Set<string>();
      const left: Waiting[] = [];
      for (const w of this.#waiting) {
        if (group.length < this.#maxStatements && w.keys.every((key) => !this.#busy.has(key) && !keys.has(key))) {
          group.push(w);
          for (const key of w.keys) keys.add(key);
        } else {
          left.push(w);
        }
      }
      // Every waiting statement names a row in flight: the end of a transaction calls again.
      if (group.length === 0) return;
      this.#waiting = left;
      for (const key of keys) this.#busy.add(key);
      this.#inFlight++;
      void this.#flush(group, keys);
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

  async #flush(group: readonly Waiting[], keys: ReadonlySet<string>): Promise<void> {
    let outcomes: readonly PromiseSettledResult<QueryRow[]>[];
    try {
      outcomes = await this.#execute(group);
    } catch (error) {
      this.#free(keys);
      for (const w of group) w.reject(error);
      return;
    }
    this.#free(keys);
    for (const [i, w] of group.entries()) {
      const outcome = outcomes[i]!;
      if (outcome.status === "fulfilled") w.resolve(outcome.value);
      else w.reject(outcome.reason);
    }
  }

  /** Each statement's own outcome; throws what fails them all (no connection, or one lost). */
  async #execute(group: readonly Waiting[]): Promise<readonly PromiseSettledResult<QueryRow[]>[]> {
    const borrowed = await BorrowedClient.of(this.#pool, "commit group");
    const { client } = borrowed;
    try {
      const alone = (w: Waiting) => settled(sendStatement(client, w.statement, w.values));
      let outcomes: readonly PromiseSettledResult<QueryRow[]>[];
      if (group.length === 1) outcomes = [await alone(group[0]!)];
      else {
        const together = await inOneTransaction(client, group);
        if (together.committed) outcomes = together.outcomes;
        else if (isConnectionError(together.failure)) throw together.failure;
        else {
          // Undone whole: each statement again, alone (those after a lost connection fail with it, unsent).
          const again: PromiseSettledResult<QueryRow[]>[] = [];
          for (const w of group) again.push(await alone(w));
          outcomes = again;
        }
      }
      // Each caller gets its own outcome; a connection lost on the way is not given back to the pool.
      const lost = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected" && isConnectionError(o.reason));
      if (lost !== undefined) await borrowed.failed(lost.reason, "commit group", null);
      return outcomes;
    } catch (error) {
      await borrowed.failed(error, "commit group", null);
      throw error;
    } finally {
      borrowed.release();
    }
  }
}

type Together = { readonly committed: true; readonly outcomes: readonly PromiseSettledResult<QueryRow[]>[] } | { readonly committed: false; readonly failure: unknown };

/**
 * BEGIN, the statements and COMMIT: in one packet on a pipelining connection, else one after
 * another. Committed, with each statement's answer; or rolled back, with the first failure.
 */
async function inOneTransaction(client: PostgresPoolClient, group: readonly Waiting[]): Promise<Together> {
  if (!pipelining(client)) {
    await sendStatement(client, BEGIN_READ_COMMITTED, []);
    const outcomes: PromiseSettledResult<QueryRow[]>[] = [];
    for (const w of group) {
      const outcome = await settled(sendStatement(client, w.statement, w.values));
      if (outcome.status === "rejected") {
        await sendStatement(client, ROLLBACK, []);
        return { committed: false, failure: outcome.reason };
      }
      outcomes.push(outcome);
    }
    const commit = await settled(sendStatement(client, COMMIT, []));
    return commit.status === "fulfilled" ? { committed: true, outcomes } : { committed: false, failure: commit.reason };
  }
  const socket = corkableSocket(client);
  socket?.cork();
  let begun: Promise<PromiseSettledResult<unknown>>;
  const answers: Promise<PromiseSettledResult<QueryRow[]>>[] = [];
  let committed: Promise<PromiseSettledResult<unknown>>;
  try {
    begun = settled(sendStatement(client, BEGIN_READ_COMMITTED, []));
    for (const w of group) answers.push(settled(sendStatement(client, w.statement, w.values)));
    committed = settled(sendStatement(client, COMMIT, []));
  } finally {
    socket?.uncork();
  }
  const opened = await begun;
  const outcomes = await Promise.all(answers);
  const commit = await committed;
  if (opened.status === "rejected") {
    if (isConnectionError(opened.reason)) throw opened.reason;
    // No transaction: each statement ran, and committed or failed, on its own.
    return { committed: true, outcomes };
  }
  const failure = [...outcomes, commit].find((o): o is PromiseRejectedResult => o.status === "rejected");
  if (failure !== undefined) return { committed: false, failure: failure.reason };
  return { committed: true, outcomes };
}

function settled<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value) => ({ status: "fulfilled", value }) as const,
    (reason: unknown) => ({ status: "rejected", reason }) as const,
  );
}

