import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outboxChannel } from "../src/hints.js";
import { PostgresPromiseStore } from "../src/index.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";
import { until } from "./support/until.js";

// `subscribeOutbox` across stores: a commit in one store (its own pool, as another server process
// would have) wakes the outbox listener of another store on the same schema, by LISTEN/NOTIFY;
// with the listener's LISTEN connection killed, the connection comes back by itself and the
// listener hears commits again. Each wait is for an event, with a generous deadline.

const target = await pgTarget("promise-outbox-hints.test.ts");
const url = target.url;
const T = 1_800_000_000_000;
describe.skipIf(url === undefined)(`postgres promise outbox hints (${target.reason})`, () => {
  const schema = randomSchema("phints");
  let writerPool: pg.Pool;
  let listenerPool: pg.Pool;
  let writer: PostgresPromiseStore;
  let listener: PostgresPromiseStore;
  let n = 0;

  beforeAll(async () => {
    writerPool = testPool(url!, 4);
    listenerPool = testPool(url!, 4);
    writer = new PostgresPromiseStore({ pool: writerPool, schema });
    listener = new PostgresPromiseStore({ pool: listenerPool, schema });
    await writer.migrate();
  });

  afterAll(async () => {
    await writer?.close();
    await listener?.close();
    if (writerPool) {
      await dropSchema(writerPool, schema);
      await writerPool.end();
    }
    await listenerPool?.end();
    await target.stop();
  });

  /** A promise targeted at a worker group: its create writes an `execute` message. Returns when it committed. */
  async function writeMessage(): Promise<number> {
    const id = `m${n++}`;
    const created = await writer.handle({ kind: "promise.create", id, timeoutAt: T + 3_600_000, tags: { "resonate:target": "poll://any@workers" } }, T);
    expect(created.status).toBe(200);
    return Date.now();
  }

  it("a commit in one store wakes the subscribeOutbox listener of another store on the schema (its own pool, as another process)", async () => {
    const heard: number[] = [];
    const unsubscribe = listener.subscribeOutbox(() => heard.push(Date.now()));
    try {
      await until(() => listener.listening, "the listener's LISTEN connection");
      // A commit without outbox messages and a read announce nothing.
      await writer.handle({ kind: "promise.create", id: "quiet", timeoutAt: T + 3_600_000 }, T);
      await writer.handle({ kind: "promise.get", id: "quiet" }, T);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(heard, "nothing announced before a message was written").toEqual([]);
      const committedAt = await writeMessage();
      await until(() => heard.length > 0, "the other store's listener to hear the commit");
      console.info(`[outbox hints] commit acknowledged → other store's listener: ${heard[0]! - committedAt} ms`);
      // The hint only says "a message waiting": the outbox is the truth, and the listener's store finds it there.
      const taken = await listener.takeOutbox({ now: T, max: 10, leaseMs: 60_000 });
      expect(taken.map((d) => d.key)).toEqual(["execute:m0"]);
      // A message handed back is waiting again: the release is announced too.
      const before = heard.length;
      await writer.releaseOutbox({ deliveries: taken, now: T });
      await until(() => heard.length > before, "the listener to hear the release");
      // Unsubscribed: the connection closes with its last listener.
      unsubscribe();
      await until(() => !listener.listening, "the LISTEN connection to close with its last listener");
    } finally {
      unsubscribe();
    }
  });

  it("with its LISTEN connection killed, the store reconnects by itself and its listener hears commits again", async () => {
    let heard = 0;
    const unsubscribe = listener.subscribeOutbox(() => void heard++);
    try {
      await until(() => listener.listening, "the listener's LISTEN connection");
      await writeMessage();
      await until(() => heard > 0, "the listener to hear a commit before the kill");
      const killed = await writerPool.query("SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE query = $1", [
        `LISTEN "${outboxChannel(schema)}"`,
      ]);
      expect(killed.rows.length, "LISTEN connections terminated").toBe(1);
      await until(() => !listener.listening, "the store to notice the lost connection");
      // Whatever is committed meanwhile may go unheard (hints are lossy; deliverers drain on a timer too).
      await writeMessage();
      await until(() => listener.listening, "the LISTEN connection to come back");
      heard = 0;
      await writeMessage();
      await until(() => heard > 0, "the listener to hear a commit after the reconnect");
    } finally {
      unsubscribe();
    }
  });
});
