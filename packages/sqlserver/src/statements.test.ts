import { DEFAULT_BOUNDS, DEFAULT_PROMISE_BOUNDS, resolveBounds } from "@belay/contract";
import { init, parse } from "@guanmingchiu/sqlparser-ts";
import { beforeAll, describe, expect, it } from "vitest";
import "./index.js";
import { WHEREABOUTS } from "./caller-transaction.js";
import { MIGRATIONS, PROMISE_MIGRATIONS } from "./migrations/index.js";
import { SAVEPOINT_STATEMENTS } from "./session.js";
import { BOUND_COLUMNS, COLUMN_BYTES, COLUMN_CHARS, boundCapacity, resolveSqlServerStoreConfig } from "./sqlserver-store-config.js";
import { registeredStatements, render, renderWithLiterals } from "./statements.js";
import { PROMISE_ID_BYTES } from "./sql/promise-rows.js";

// What can be checked of the adapter's SQL without a SQL Server: every statement it can send —
// collected from the registry every statement is declared in, so none is missed — parses in a
// T-SQL grammar, names only parameters it declares, and declares them with the types and
// lengths of the columns they meet.
//
// The grammar is sqlparser-rs's MsSql dialect (datafusion-sqlparser-rs 0.62 through WASM,
// `@guanmingchiu/sqlparser-ts`), the strictest T-SQL grammar found on npm: `node-sql-parser`'s
// TransactSQL grammar refuses OPENJSON … WITH, table hints, OUTPUT and CROSS APPLY, all of which
// the store needs. sqlparser-rs is a grammar, not SQL Server: it does not resolve names or
// types, check that a table hint is allowed where it stands, or know T-SQL's batch rules
// (CREATE SCHEMA first in a batch, …). Those are proven only against a server.

const SCHEMA = "[belay]";

/** Statements sqlparser-rs's grammar does not cover, each with why it is right all the same. */
const GRAMMAR_GAPS: ReadonlyMap<string, string> = new Map([
  ["SAVE TRANSACTION belay_1", "sqlparser-rs 0.62 has no SAVE TRANSACTION (T-SQL's savepoint statement)"],
  ["IF XACT_STATE() = 1 ROLLBACK TRANSACTION belay_1", "sqlparser-rs 0.62 parses ROLLBACK TRANSACTION without a savepoint name only"],
]);

beforeAll(async () => {
  await init();
});

const statements = () => registeredStatements();

describe("every statement the store can send", () => {
  it("is declared in the registry (the job, promise and migration statements are all there)", () => {
    const names = statements().map((s) => s.name);
    for (const expected of ["claim", "heartbeat", "release", "insertJobs", "writeJobs", "promiseLoad", "promiseApply", "promiseTakeOutbox", "walkObserver", "migrateLock", "whereabouts"]) {
      expect(names).toContain(expected);
    }
    expect(names.filter((n) => n.startsWith("migration:")).length).toBe(MIGRATIONS.length + PROMISE_MIGRATIONS.length);
    expect(statements().length).toBeGreaterThan(60);
  });

  it.each(statements().map((s) => [s.name, s] as const))("%s parses in the T-SQL grammar", (_, st) => {
    expect(() => parse(render(st, SCHEMA), "mssql")).not.toThrow();
  });

  it.each(statements().map((s) => [s.name, s] as const))("%s parses with its parameters inlined as literals (as the plan checks run it)", (_, st) => {
    const values = Object.fromEntries(st.params.map(([name, type]) => [name, /^(big)?int|tinyint|bit/.test(type) ? 1 : type.startsWith("varbinary") ? Buffer.from("ab") : "[]"]));
    expect(() => parse(renderWithLiterals(st, SCHEMA, values), "mssql")).not.toThrow();
  });

  it.each([...GRAMMAR_GAPS.keys()].map((text) => [text] as const))("%s is a known gap of the grammar, and only that", (text) => {
    expect(SAVEPOINT_STATEMENTS as readonly string[]).toContain(text);
    expect(() => parse(text, "mssql")).toThrow();
  });

  it("the only statements outside the registry are the savepoint statements listed as grammar gaps", () => {
    expect([...SAVEPOINT_STATEMENTS].sort()).toEqual([...GRAMMAR_GAPS.keys()].sort());
  });
});

/** The `@name`s a body uses that are neither declared parameters, its own locals, nor @@globals. */
function undeclared(body: string, params: readonly string[]): string[] {
  const locals = new Set([...body.matchAll(/(?:DECLARE|,)\s*@(\w+)\s+(?:TABLE\b|[a-z]+)/gi)].map((m) => m[1]!.toLowerCase()));
  const used = [...body.matchAll(/(?<![@\w])@(\w+)/g)].map((m) => m[1]!.toLowerCase());
  const known = new Set([...params.map((p) => p.toLowerCase()), ...locals]);
  return [...new Set(used.filter((name) => !known.has(name)))];
}

describe("parameters", () => {
  it.each(statements().map((s) => [s.name, s] as const))("%s uses exactly the parameters it declares", (_, st) => {
    const body = st.body(SCHEMA);
    const names = st.params.map(([name]) => name);
    expect(undeclared(body, names)).toEqual([]);
    for (const name of names) expect(body, `@${name} is declared but unused`).toMatch(new RegExp(`@${name}\\b`));
  });

  const ALLOWED = /^(bigint|int|tinyint|bit|sysname|nvarchar\((max|\d+)\)|varbinary\(\d+\))$/;
  it.each(statements().flatMap((s) => s.params.map(([name, type]) => [`${s.name} @${name}`, name, type] as const)))("%s has a T-SQL type of the store's vocabulary", (_, name, type) => {
    expect(type).toMatch(ALLOWED);
    // Instants and durations are bigint epoch milliseconds, everywhere.
    if (/^(now|at|before|until|expiredBy|leaseMs|dueAt|after)$/.test(name) && !type.startsWith("varbinary")) expect(type).toBe("bigint");
    // Arrays travel as JSON text, never truncated.
    if (/^(ids|queues|jobs|tags|edges|rows|log|leases|outcomes|refs|named|awaiters|listeners|branches|schedules|states|addresses|prefixes|locks)$/.test(name)) expect(type).toBe("nvarchar(max)");
  });

  it("keys are declared exactly as wide as the columns they meet", () => {
    const widths = new Set<string>();
    for (const st of statements()) for (const [, type] of st.params) if (type.startsWith("varbinary")) widths.add(type);
    const columns = new Set([...Object.values(COLUMN_BYTES), PROMISE_ID_BYTES].map((n) => `varbinary(${n})`));
    for (const width of widths) expect(columns, `${width} matches a key column`).toContain(width);
  });

  it("the DDL declares each bounded column with the capacity the config checks against", () => {
    const ddl = MIGRATIONS.map((m) => m.sql(SCHEMA)).join("\n");
    expect(ddl).toMatch(new RegExp(`\\bid varbinary\\(${COLUMN_BYTES.id}\\) NOT NULL`));
    expect(ddl).toMatch(new RegExp(`\\bqueue varbinary\\(${COLUMN_BYTES.queue}\\) NOT NULL`));
    expect(ddl).toMatch(new RegExp(`\\bjob_name varbinary\\(${COLUMN_BYTES.jobName}\\) NOT NULL`));
    expect(ddl).toMatch(new RegExp(`\\btag_key varbinary\\(${COLUMN_BYTES.tagKey}\\) NOT NULL`));
    expect(ddl).toMatch(new RegExp(`\\btag_value varbinary\\(${COLUMN_BYTES.tagValue}\\) NOT NULL`));
    expect(ddl).toMatch(new RegExp(`\\btrace_context nvarchar\\(${COLUMN_CHARS.traceContext}\\) NULL`));
    expect(ddl).toMatch(new RegExp(`\\bname nvarchar\\(${COLUMN_CHARS.workflowName}\\) NOT NULL`));
    // Instants are bigint; states tinyint.
    for (const column of ["due_at", "lease_expires_at", "enqueued_at", "terminal_at", "at", "created_at", "updated_at", "cursor_at", "dead_lettered_at"]) {
      for (const m of ddl.matchAll(new RegExp(`\\n\\s+${column} (\\w+)`, "g"))) expect(m[1], column).toBe("bigint");
    }
    const promiseDdl = PROMISE_MIGRATIONS.map((m) => m.sql(SCHEMA)).join("\n");
    expect(promiseDdl).toMatch(new RegExp(`\\bid varbinary\\(${PROMISE_ID_BYTES}\\) NOT NULL`));
    for (const column of ["timeout_at", "created_at", "settled_at", "timer_at", "available_at", "next_run_at", "last_run_at"]) {
      for (const m of promiseDdl.matchAll(new RegExp(`\\n\\s+${column} (\\w+)`, "g"))) expect(m[1], column).toBe("bigint");
    }
  });

  it("every default bound fits its column (3 UTF-8 bytes per UTF-16 code unit for keys), and a larger one is refused naming the bound", () => {
    for (const entry of BOUND_COLUMNS) expect(DEFAULT_BOUNDS[entry.bound], `${entry.bound} in ${entry.column}`).toBeLessThanOrEqual(boundCapacity(entry));
    expect(DEFAULT_PROMISE_BOUNDS.idLength).toBeLessThanOrEqual(PROMISE_ID_BYTES);
    for (const entry of BOUND_COLUMNS) {
      const bounds = { [entry.bound]: boundCapacity(entry) + 1 };
      expect(() => resolveSqlServerStoreConfig({ connectionString: "mssql://x", bounds })).toThrow(new RegExp(`bounds\\.${entry.bound}`));
    }
    const most = Object.fromEntries(BOUND_COLUMNS.map((e) => [e.bound, Math.min(...BOUND_COLUMNS.filter((x) => x.bound === e.bound).map(boundCapacity))]));
    expect(() => resolveSqlServerStoreConfig({ connectionString: "mssql://x", bounds: resolveBounds(most) })).not.toThrow();
  });

  it("the caller-transaction check sends one statement with one parameter (what Kysely's mssql dialect binds as @1)", () => {
    expect(render(WHEREABOUTS, SCHEMA)).toMatch(/^DECLARE @table nvarchar\(300\) = @1;/);
  });
});
