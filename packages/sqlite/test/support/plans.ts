import Database from "better-sqlite3";
import { afterAll, beforeAll } from "vitest";

// What the query-plan tests share: the store's own statements, recorded as a fresh store's
// connection prepares them, and their EXPLAIN QUERY PLAN.

let recording: string[] | null = null;

/** Records what every connection prepares while {@link preparedBy} runs: call once at the top of a test file. */
export function recordPreparedStatements(): void {
  const prepare = Database.prototype.prepare;
  beforeAll(() => {
    Database.prototype.prepare = function (this: Database.Database, source: string) {
      recording?.push(source);
      return prepare.call(this, source);
    } as typeof prepare;
  });
  afterAll(() => {
    Database.prototype.prepare = prepare;
  });
}

/**
 * The SQL a fresh store (`open`, then migrated) prepares while running `operation` (each
 * statement is prepared once per connection), but for what `ignore` matches; the store is closed.
 */
export async function preparedBy<S extends { migrate(): Promise<unknown>; close(): Promise<void> }>(
  open: () => S,
  operation: (store: S) => Promise<unknown>,
  ignore: RegExp,
): Promise<string[]> {
  const store = open();
  await store.migrate();
  recording = [];
  try {
    await operation(store);
    return [...new Set(recording)].filter((sql) => !ignore.test(sql));
  } finally {
    recording = null;
    await store.close();
  }
}

/** The plan of one statement, as EXPLAIN QUERY PLAN details (every parameter bound to null). */
export function planOf(db: Database.Database, sql: string): string[] {
  const named = [...new Set([...sql.matchAll(/@(\w+)/g)].map((m) => m[1]!))];
  const statement = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  const rows = named.length > 0
    ? statement.all(Object.fromEntries(named.map((name) => [name, null])))
    : statement.all(...Array((sql.match(/\?/g) ?? []).length).fill(null));
  return (rows as { detail: string }[]).map((row) => row.detail);
}
