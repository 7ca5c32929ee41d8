import type { Statements } from "./connection.js";
import type { Tables } from "./tables.js";
import type { Steps } from "./transaction.js";

/**
 * One statement an operation asks its driver to run: its SQL (built from the table names), how
 * its result is read, and the values bound to its `?` placeholders.
 */
export interface Query {
  readonly sql: (t: Tables) => string;
  /** `row`: the first row, or `undefined`; `rows`: every row; `none`: nothing. */
  readonly read: "row" | "rows" | "none";
  readonly values: readonly unknown[];
}

/**
 * An operation written once for every way of reaching the file: a generator that yields step
 * names (as {@link Steps} does) and {@link Query}s, and is resumed with each query's result. The
 * store's own connection runs the queries synchronously on prepared statements
 * ({@link onStatements}); a caller's transaction runs the same queries, in the same order,
 * through its executor (`caller-transaction.ts`), awaiting them when the executor is async.
 */
export type Io<T> = Generator<string | Query, T, unknown>;

/** Runs `sql` and returns its first row, or `undefined`. */
export function* row<R>(sql: (t: Tables) => string, ...values: unknown[]): Generator<Query, R | undefined, unknown> {
  return (yield { sql, read: "row", values }) as R | undefined;
}

/** Runs `sql` and returns every row. */
export function* rows<R>(sql: (t: Tables) => string, ...values: unknown[]): Generator<Query, R[], unknown> {
  return (yield { sql, read: "rows", values }) as R[];
}

/** Runs `sql` for its effect. */
export function* exec(sql: (t: Tables) => string, ...values: unknown[]): Generator<Query, void, unknown> {
  yield { sql, read: "none", values };
}

function runOn(q: Statements, query: Query): unknown {
  const statement = q.get(query.sql);
  switch (query.read) {
    case "row":
      return statement.get(...query.values);
    case "rows":
      return statement.all(...query.values);
    case "none":
      statement.run(...query.values);
      return undefined;
  }
}

/** Runs `io`'s queries on the prepared statements `q` as they come, passing its steps through. */
export function* onStatements<T>(q: Statements, io: Io<T>): Steps<T> {
  let next = io.next();
  while (!next.done) {
    const effect = next.value;
    if (typeof effect === "string") {
      yield effect;
      next = io.next();
    } else {
      next = io.next(runOn(q, effect));
    }
  }
  return next.value;
}

/** Runs a step-less `io` (a helper shared with operations that are not written as `Io`) on `q`. */
export function runNow<T>(q: Statements, io: Io<T>): T {
  const steps = onStatements(q, io);
  let next = steps.next();
  while (!next.done) next = steps.next();
  return next.value;
}

/** The SQL text of each builder for one table prefix, built once (for drivers that take text). */
export class SqlTexts {
  readonly #texts = new Map<(t: Tables) => string, string>();

  constructor(readonly t: Tables) {}

  get(build: (t: Tables) => string): string {
    let text = this.#texts.get(build);
    if (text === undefined) {
      text = build(this.t);
      this.#texts.set(build, text);
    }
    return text;
  }
}
