import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MssqlPool, SqlServerPromiseStore, SqlServerStore } from "../src/index.js";
import { renderWithLiterals, type Statement } from "../src/statements.js";
import { CLAIM } from "../src/sql/claim.js";
import { EXPIRED_LEASES, EXPIRED_LEASES_IN } from "../src/sql/leases.js";
import { WALK } from "../src/sql/observers.js";
import { DUE_SCHEDULES, DUE_TIMERS, TAKE_OUTBOX } from "../src/sql/promise-scans.js";
import { registeredStatements } from "../src/statements.js";
import { dropSchema, randomSchema, sqlServerTarget, testPool } from "./target.js";

// Rule 8 of the contract: the time-ordered scans read an index ordered by time, in bounded
// batches. Each statement is compiled with SET SHOWPLAN_XML ON (nothing runs) and its plan must
// seek the named index — never scan the table.
const target = sqlServerTarget();
const url = target.url;

/** (physical operator, index) of every index access in a showplan. */
function accesses(xml: string): { op: string; index: string }[] {
  const out: { op: string; index: string }[] = [];
  for (const relop of xml.split("<RelOp").slice(1)) {
    const op = /PhysicalOp="([^"]+)"/.exec(relop)?.[1];
    const index = /<Object [^>]*Index="\[([^\]]+)\]"/.exec(relop.split("<RelOp")[0]!)?.[1];
    if (op !== undefined && index !== undefined) out.push({ op, index });
  }
  return out;
}

describe.skipIf(url === undefined)(`sqlserver query plans (${target.reason})`, () => {
  let pool: MssqlPool;
  const schema = randomSchema("plans");
  const S = `[${schema}]`;

  beforeAll(async () => {
    const store = new SqlServerStore({ connectionString: url!, schema });
    await store.migrate();
    await store.close();
    const promises = new SqlServerPromiseStore({ connectionString: url!, schema });
    await promises.migrate();
    await promises.close();
    // One connection, so that SHOWPLAN_XML stays on for the statements after it.
    pool = await testPool(url!, 1);
  });

  afterAll(async () => {
    await pool?.request().query("SET SHOWPLAN_XML OFF");
    await pool?.close();
    const admin = await testPool(url!, 1);
    await dropSchema(admin, schema);
    await admin.close();
  });

  async function plan(st: Statement, values: Record<string, unknown>): Promise<string> {
    await pool.request().query("SET SHOWPLAN_XML ON");
    try {
      const result = await pool.request().query(renderWithLiterals(st, S, values));
      const sets = Array.isArray(result.recordsets) ? result.recordsets : [result.recordset ?? []];
      return sets.flatMap((rows) => [...(rows as Record<string, unknown>[])].map((row) => String(Object.values(row)[0]))).join("\n");
    } finally {
      await pool.request().query("SET SHOWPLAN_XML OFF");
    }
  }

  const worker = Buffer.from("w1");
  const cases: [string, Statement, Record<string, unknown>, string][] = [
    ["claim: due jobs per queue", CLAIM, { queues: '[[0,"6d61696c"]]', max: 10, now: 1, worker, leaseMs: 1000, history: 1, cap: 64, lockPrefix: "x" }, "jobs_due"],
    ["lease expiry, all queues", EXPIRED_LEASES, { now: 1, max: 10 }, "jobs_lease_expiry"],
    ["lease expiry, some queues", EXPIRED_LEASES_IN, { now: 1, max: 10, queues: '["6d61696c"]' }, "jobs_leased"],
    ["promise deadlines", DUE_TIMERS, { now: 1, max: 10 }, "promises_timeout"],
    ["task timers", DUE_TIMERS, { now: 1, max: 10 }, "tasks_timer"],
    ["outbox take", TAKE_OUTBOX, { now: 1, max: 10, until: 2, all: 1, addresses: "[]", prefixes: "[]" }, "outbox_available"],
    ["due promise schedules", DUE_SCHEDULES, { now: 1, max: 10 }, "promise_schedules_next_run"],
    ["observer walk", WALK, { id: Buffer.from("o"), max: 10 }, "transitions_rv"],
  ];
  const purges = registeredStatements().filter((s) => s.name.startsWith("purge"));
  cases.push(["purge succeeded/cancelled", purges.find((s) => s.name === "purgeSucceededCancelled")!, { before: 1, max: 10 }, "jobs_ended_succeeded_cancelled"]);
  cases.push(["purge dead-lettered/quarantined", purges.find((s) => s.name === "purgeDeadQuarantined")!, { before: 1, max: 10 }, "jobs_ended_dead_quarantined"]);

  it.each(cases)("%s seeks its time-ordered index", async (_, st, values, index) => {
    const xml = await plan(st, values);
    const found = accesses(xml);
    expect(found.filter((a) => a.index === index).map((a) => a.op), `plan of ${st.name}: ${JSON.stringify(found)}`).toContain("Index Seek");
    expect(found.filter((a) => /Table Scan/.test(a.op)), "no table scan").toEqual([]);
  });
});
