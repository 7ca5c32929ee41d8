import { existsSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqlitePromiseStore } from "../src/index.js";
import { NO_EFFECTS, type PromiseEffects, type PromiseTransaction } from "@belay/contract";
import { MAX_GROUP, SqlitePromiseBackend, WAL_AUTOCHECKPOINT_PAGES } from "../src/sqlite-promise-backend.js";
import { REVISION_BLOCK } from "../src/outbox-revisions.js";
import { databaseFiles } from "./support/files.js";

// What SqlitePromiseStore adds to the contract's front: its config, its transactions under the
// file's write lock, the rerun of an operation whose insert finds its row present, its in-process
// outbox listeners and its ping.

const { fresh } = databaseFiles("belay-sqlite-promise-store-", "s");
const T = Date.UTC(2026, 0, 1);
const target = { "resonate:target": "poll://any@workers" };

/** A migrated store on a fresh file. */
async function migratedStore(): Promise<{ path: string; store: SqlitePromiseStore }> {
  const path = fresh();
  const store = new SqlitePromiseStore({ path });
  await store.migrate();
  return { path, store };
}

describe("SqlitePromiseStore", () => {
  it("refuses a bad config naming the field, before any file is opened", () => {
    const path = fresh();
    expect(() => new SqlitePromiseStore({ path: "" })).toThrow(expect.objectContaining({ code: "BELAY_INVALID_INPUT", field: "path" }));
    expect(() => new SqlitePromiseStore({ path, tablePrefix: "a-b" })).toThrow(expect.objectContaining({ field: "tablePrefix" }));
    expect(() => new SqlitePromiseStore({ path, busyTimeoutMs: -1 })).toThrow(expect.objectContaining({ field: "busyTimeoutMs" }));
    expect(() => new SqlitePromiseStore({ path, synchronous: "off" as "full" })).toThrow(expect.objectContaining({ field: "synchronous" }));
    expect(() => new SqlitePromiseStore({ path, settings: { retryTimeoutMs: 0 } })).toThrow(expect.objectContaining({ field: "promiseSettings.retryTimeoutMs" }));
    expect(() => new SqlitePromiseStore({ path, bounds: { idLength: 0 } })).toThrow(expect.objectContaining({ field: "promiseBounds.idLength" }));
    expect(existsSync(path)).toBe(false);
  });

  it("reports its name, bounds, settings and step hook", () => {
    const store = new SqlitePromiseStore({ path: fresh(), bounds: { idLength: 64 }, settings: { retryTimeoutMs: 5_000 } });
    expect(store.capabilities).toMatchObject({ name: "sqlite", stepHook: true, bounds: { idLength: 64 }, settings: { retryTimeoutMs: 5_000 } });
    return store.close();
  });

  it("a write that waits for the file's write lock beyond busyTimeoutMs fails with TransientStoreError, nothing committed", async () => {
    const path = fresh();
    const store = new SqlitePromiseStore({ path, busyTimeoutMs: 60 });
    await store.migrate();
    const holder = new Database(path);
    holder.exec("BEGIN IMMEDIATE");
    await expect(store.handle({ kind: "promise.create", id: "p", timeoutAt: T + 60_000 }, T)).rejects.toMatchObject({ code: "BELAY_TRANSIENT_STORE" });
    holder.exec("COMMIT");
    holder.close();
    expect(await store.handle({ kind: "promise.get", id: "p" }, T)).toMatchObject({ status: 404 });
    expect(await store.handle({ kind: "promise.create", id: "p", timeoutAt: T + 60_000 }, T)).toMatchObject({ status: 200 });
    await store.close();
  });

  it("a step hook parks a write inside its transaction; another connection sees nothing of it until it commits", async () => {
    const { path, store } = await migratedStore();
    let release!: () => void;
    const parked = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const atCommit = new Promise<void>((resolve) => (reached = resolve));
    store.setStepHook(({ step }) => {
      if (step !== "commit") return undefined;
      reached();
      return parked;
    });
    const writing = store.handle({ kind: "promise.create", id: "p", timeoutAt: T + 60_000, tags: target }, T);
    await atCommit;
    // A keyed read is a transaction of its own (it may settle a deadline): look with a plain reader.
    const reader = new Database(path, { readonly: true });
    const count = () => (reader.prepare(`SELECT (SELECT count(*) FROM "belay_promises") + (SELECT count(*) FROM "belay_outbox") AS n`).get() as { n: number }).n;
    expect(count()).toBe(0);
    release();
    expect(await writing).toMatchObject({ status: 200 });
    expect(count()).toBe(2);
    reader.close();
    await store.close();
  });

  it("an insert that finds its row present reruns the operation, then fails with TransientStoreError, nothing committed", async () => {
    const { path, store } = await migratedStore();
    // A task row without its promise (never written by the store): the load sees no promise and no
    // task, so the create inserts both, and the task's insert finds its key taken on every run.
    const db = new Database(path);
    db.prepare(`INSERT INTO "belay_tasks" (id, state, version, resumes) VALUES ('orphan', 'pending', 0, 0)`).run();
    db.close();
    const loads: string[] = [];
    store.setStepHook(({ operation, step }) => void loads.push(`${operation}: ${step}`));
    await expect(store.handle({ kind: "promise.create", id: "orphan", timeoutAt: T + 60_000, tags: target }, T)).rejects.toMatchObject({
      code: "BELAY_TRANSIENT_STORE",
    });
    expect(loads.filter((step) => step === "promise.create: rows loaded")).toHaveLength(3);
    const snapshot = await store.snapshot(T);
    expect(snapshot.promises).toEqual([]);
    expect(snapshot.outbox).toEqual([]);
    await store.close();
  });

  it("outbox listeners hear, after the commit, of writes of messages only: not of a take, an acknowledgement, a release that moved on, or a rolled-back run", async () => {
    const { path, store } = await migratedStore();
    const heard: string[] = [];
    let phase = "";
    const reader = new Database(path, { readonly: true });
    const messages = () => (reader.prepare(`SELECT count(*) AS n FROM "belay_outbox"`).get() as { n: number }).n;
    store.subscribeOutbox(() => {
      // Told after the commit: another connection sees the message already.
      heard.push(`${phase}:${messages()}`);
    });
    store.subscribeOutbox(() => {
      throw new Error("a listener's failure is its own");
    });
    phase = "create";
    expect(await store.handle({ kind: "promise.create", id: "p1", timeoutAt: T + 60_000, tags: target }, T)).toMatchObject({ status: 200 });
    phase = "take";
    const [taken] = await store.takeOutbox({ now: T, max: 10, leaseMs: 10_000 });
    phase = "release";
    await store.releaseOutbox({ deliveries: [taken!], now: T + 1 });
    phase = "stale release";
    await store.releaseOutbox({ deliveries: [taken!], now: T + 2 });
    const [again] = await store.takeOutbox({ now: T + 2, max: 10, leaseMs: 10_000 });
    phase = "ack";
    await store.acknowledgeOutbox({ deliveries: [again!] });
    // A run rolled back (the insert of a task finds its row present, three times) tells no one.
    const db = new Database(path);
    db.prepare(`INSERT INTO "belay_tasks" (id, state, version, resumes) VALUES ('orphan', 'pending', 0, 0)`).run();
    db.close();
    phase = "rolled back";
    await expect(store.handle({ kind: "promise.create", id: "orphan", timeoutAt: T + 60_000, tags: target }, T)).rejects.toMatchObject({ code: "BELAY_TRANSIENT_STORE" });
    expect(heard).toEqual(["create:1", "release:1"]);
    reader.close();
    await store.close();
  });

  it("each message keeps when it was written and how often it was taken, across connections; a task's newer execute is a new message", async () => {
    const { path, store } = await migratedStore();
    await store.handle({ kind: "promise.create", id: "p1", timeoutAt: T + 600_000, tags: target }, T);
    await store.takeOutbox({ now: T + 5, max: 10, leaseMs: 1_000 });
    await store.close();
    const reopened = new SqlitePromiseStore({ path });
    const [second] = await reopened.takeOutbox({ now: T + 1_005, max: 10, leaseMs: 1_000 });
    expect(second).toMatchObject({ key: "execute:p1", createdAt: T, takes: 2 });
    expect(await reopened.handle({ kind: "task.acquire", id: "p1", version: 0, pid: "w", ttl: 60_000 }, T + 2_000)).toMatchObject({ status: 200 });
    expect(await reopened.handle({ kind: "task.release", id: "p1", version: 1 }, T + 3_000)).toMatchObject({ status: 200 });
    const [third] = await reopened.takeOutbox({ now: T + 3_000, max: 10, leaseMs: 1_000 });
    expect(third).toMatchObject({ key: "execute:p1", message: { data: { task: { version: 1 } } }, createdAt: T + 3_000, takes: 1 });
    await reopened.close();
  });

  it(`outbox tokens are never handed out twice across connections that draw revisions in blocks of ${REVISION_BLOCK}, nor after a reopen; the counter row is written once a block`, async () => {
    const { path, store: a } = await migratedStore();
    const b = new SqlitePromiseStore({ path });
    const tokens: number[] = [];
    const counter = () => {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare('SELECT revision FROM "belay_outbox_revision"').get() as { revision: number }).revision;
      } finally {
        db.close();
      }
    };
    // Both connections write and take messages, interleaved: each draws from its own block.
    for (let i = 0; i < 60; i++) {
      const store = i % 2 === 0 ? a : b;
      await store.handle({ kind: "promise.create", id: `p${i}`, timeoutAt: T + 600_000, tags: target }, T);
      for (const delivery of await store.takeOutbox({ now: T + i * 2_000, max: 5, leaseMs: 1_000 })) {
        tokens.push(delivery.token);
        if (i % 3 === 0) await store.releaseOutbox({ deliveries: [delivery], now: T + i * 2_000 });
      }
    }
    // Two blocks reserved in all, however many messages were written and taken.
    expect(counter()).toBe(2 * REVISION_BLOCK);
    await a.close();
    // A reopened connection reserves past every block handed out before.
    const c = new SqlitePromiseStore({ path });
    for (const delivery of await c.takeOutbox({ now: T + 10_000_000, max: 100, leaseMs: 1_000 })) tokens.push(delivery.token);
    // A take larger than a block draws exactly what it needs from the counter.
    for (let i = 0; i < REVISION_BLOCK + 10; i++) await b.handle({ kind: "promise.create", id: `bulk${i}`, timeoutAt: T + 600_000, tags: target }, T);
    for (const delivery of await c.takeOutbox({ now: T + 20_000_000, max: REVISION_BLOCK + 60, leaseMs: 1_000 })) tokens.push(delivery.token);
    expect(tokens.length).toBeGreaterThan(REVISION_BLOCK + 60);
    expect(new Set(tokens).size, "a token was handed out twice").toBe(tokens.length);
    await b.close();
    await c.close();
  });

  it("ping reads the schema afresh: before migrate() and after the tables went it throws SchemaNotMigratedError", async () => {
    const path = fresh();
    const store = new SqlitePromiseStore({ path });
    await expect(store.ping()).rejects.toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
    await store.migrate();
    await expect(store.ping()).resolves.toBeUndefined();
    const db = new Database(path);
    db.exec(`DROP TABLE "belay_promise_migrations"`);
    db.close();
    await expect(store.ping()).rejects.toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
    await store.close();
  });

  it("a search by id prefix is exact past ASCII: no wildcards, the last code point's successor bounds the range", async () => {
    const store = new SqlitePromiseStore({ path: fresh() });
    await store.migrate();
    const ids = ["a%1", "ab", "é1", "é2", "ê", "\u{10FFFF}a", "\u{10FFFF}\u{10FFFF}", "\u{FFFF}x", "\u{10000}"];
    for (const id of ids) expect(await store.handle({ kind: "promise.create", id, timeoutAt: T + 60_000 }, T)).toMatchObject({ status: 200 });
    const search = async (prefix: string) => {
      const found: string[] = [];
      for (let cursor: string | undefined; ; ) {
        const page = await store.handle({ kind: "promise.search", prefix, limit: 1, ...(cursor === undefined ? {} : { cursor }) }, T);
        if (page.status !== 200) throw new Error(JSON.stringify(page));
        found.push(...page.data.promises.map((p) => p.id));
        cursor = page.data.cursor;
        if (cursor === undefined) return found;
      }
    };
    expect(await search("a%")).toEqual(["a%1"]);
    expect(await search("a_")).toEqual([]);
    expect(await search("é")).toEqual(["é1", "é2"]);
    expect(await search("\u{10FFFF}")).toEqual(["\u{10FFFF}a", "\u{10FFFF}\u{10FFFF}"]);
    expect(await search("\u{FFFF}")).toEqual(["\u{FFFF}x"]);
    await store.close();
  });

  it("the WAL checkpoints every WAL_AUTOCHECKPOINT_PAGES pages, not SQLite's 1,000: it grows past 1,000 pages and stays bounded by the interval", async () => {
    const { path, store } = await migratedStore();
    const side = new Database(path, { readonly: true });
    const frame = 24 + (side.pragma("page_size", { simple: true }) as number);
    side.close();
    const frames = () => (existsSync(`${path}-wal`) ? Math.max(0, statSync(`${path}-wal`).size - 32) / frame : 0);
    const value = { data: "eyJvayI6dHJ1ZX0=" };
    let n = 0;
    const lifecycle = async () => {
      const id = `w-${n++}`;
      expect((await store.handle({ kind: "promise.create", id, timeoutAt: T + 3_600_000, tags: target, param: value }, T)).status).toBe(200);
      expect((await store.handle({ kind: "task.acquire", id, version: 0, pid: "w", ttl: 60_000 }, T + 1)).status).toBe(200);
      expect((await store.handle({ kind: "task.fulfill", id, version: 1, action: { kind: "promise.settle", id, state: "resolved", value } }, T + 2)).status).toBe(200);
    };
    // Up to 90 % of the interval: the WAL only grows (a checkpoint would let it restart, at the same size).
    while (frames() < WAL_AUTOCHECKPOINT_PAGES * 0.9 && n < 5_000) await lifecycle();
    expect(frames(), "the WAL grew past SQLite's default interval without a checkpoint").toBeGreaterThan(1_000);
    // As many pages again: without a checkpoint the WAL would hold nearly twice the interval.
    const perLifecycle = frames() / n;
    const more = Math.ceil(WAL_AUTOCHECKPOINT_PAGES / perLifecycle);
    let most = 0;
    for (let i = 0; i < more; i++) {
      await lifecycle();
      most = Math.max(most, frames());
    }
    // The commit that crosses the interval checkpoints, and the WAL restarts from its start.
    expect(most).toBeGreaterThanOrEqual(WAL_AUTOCHECKPOINT_PAGES);
    expect(most).toBeLessThan(WAL_AUTOCHECKPOINT_PAGES * 1.1);
    await store.close();
  });

  it("a closed store refuses every call", async () => {
    const store = new SqlitePromiseStore({ path: fresh() });
    await store.migrate();
    await store.close();
    await store.close();
    await expect(store.handle({ kind: "promise.get", id: "p" }, T)).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
    await expect(store.reset()).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
    await expect(store.snapshot(T)).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
    await expect(store.migrate()).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
    await expect(store.ping()).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
    expect(() => store.subscribeOutbox(() => undefined)).toThrow(expect.objectContaining({ code: "BELAY_STORE_CLOSED" }));
  });

  describe("group commit: writes that queue while one runs share its transaction", () => {
    /** Effects that insert one pending promise `id`. */
    const inserting = (id: string): PromiseEffects => ({
      ...NO_EFFECTS,
      promises: [{ row: { id, state: "pending", param: {}, value: {}, tags: {}, timeoutAt: T + 60_000, createdAt: T, settledAt: null }, insert: true }],
    });
    const idsIn = (path: string): string[] => {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare('SELECT id FROM "belay_promises" ORDER BY id').all() as { id: string }[]).map((row) => row.id);
      } finally {
        db.close();
      }
    };
    async function migratedBackend(): Promise<{ path: string; backend: SqlitePromiseBackend }> {
      const path = fresh();
      const backend = new SqlitePromiseBackend({ path });
      await backend.migrate();
      return { path, backend };
    }

    it("a write that fails rolls back alone: the writes before and after it in the group commit, and each resolves only after that commit", async () => {
      const { path, backend } = await migratedBackend();
      const events: string[] = [];
      const write = (id: string, fail: boolean) =>
        backend
          .transact(id, async (tx: PromiseTransaction) => {
            await tx.apply(inserting(id));
            events.push(`${id} ran`);
            if (fail) throw new Error(`${id} fails after writing`);
            return id;
          })
          .then((result) => {
            events.push(`${id} resolved`);
            return result;
          });
      const [a, b, c] = await Promise.allSettled([write("a", false), write("b", true), write("c", false)]);
      expect(a).toEqual({ status: "fulfilled", value: "a" });
      expect(b).toMatchObject({ status: "rejected", reason: { message: "b fails after writing" } });
      expect(c).toEqual({ status: "fulfilled", value: "c" });
      // One transaction: `a` was answered only once `c` had run and the group committed.
      expect(events.slice(0, 3)).toEqual(["a ran", "b ran", "c ran"]);
      expect(events.indexOf("a resolved")).toBeGreaterThan(events.indexOf("c ran"));
      expect(idsIn(path)).toEqual(["a", "c"]);
      await backend.close();
    });

    it("an insert that finds its row inside a group runs again from its savepoint; the writes before it keep theirs", async () => {
      const { path, backend } = await migratedBackend();
      await backend.transact("seed", (tx) => tx.apply(inserting("taken")));
      let runs = 0;
      const first = backend.transact("first", (tx) => tx.apply(inserting("first")));
      const second = backend.transact("second", async (tx) => {
        runs++;
        // Run 1 writes a row, then inserts one that exists: both go; run 2 writes its own.
        if (runs === 1) {
          await tx.apply(inserting("partial"));
          await tx.apply(inserting("taken"));
        } else {
          await tx.apply(inserting("second"));
        }
        return runs;
      });
      await first;
      expect(await second).toBe(2);
      expect(idsIn(path)).toEqual(["first", "second", "taken"]);
      await backend.close();
    });

    it(`commits a burst of more concurrent writes than one group holds (${MAX_GROUP}): every answer durable and in the order asked`, async () => {
      const { path, store } = await migratedStore();
      const n = MAX_GROUP * 3 + 5;
      const ids = Array.from({ length: n }, (_, i) => `burst-${String(i).padStart(3, "0")}`);
      const order: string[] = [];
      const answers = await Promise.all(
        ids.map((id) =>
          store.handle({ kind: "promise.create", id, timeoutAt: T + 60_000, tags: target }, T).then((answer) => {
            order.push(id);
            return answer.status;
          }),
        ),
      );
      expect(answers).toEqual(ids.map(() => 200));
      expect(order).toEqual(ids);
      expect(idsIn(path)).toEqual(ids);
      await store.close();
    });

    it("a read waits for the writes asked before it, even when they cannot share one commit", async () => {
      const { store } = await migratedStore();
      let release!: () => void;
      const parked = new Promise<void>((resolve) => (release = resolve));
      let reached!: () => void;
      const atCommit = new Promise<void>((resolve) => (reached = resolve));
      let parking = true;
      // With a hook every write commits alone: the first parks at its commit; then a second write
      // and a read are asked for, in that order.
      store.setStepHook(({ operation, step }) => {
        if (operation !== "promise.create" || step !== "commit" || !parking) return undefined;
        parking = false;
        reached();
        return parked;
      });
      const first = store.handle({ kind: "promise.create", id: "first", timeoutAt: T + 60_000 }, T);
      await atCommit;
      const second = store.handle({ kind: "promise.create", id: "second", timeoutAt: T + 60_000 }, T);
      const snapshot = store.snapshot(T);
      release();
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
      expect((await snapshot).promises.map((promise) => promise.id).sort()).toEqual(["first", "second"]);
      await store.close();
    });

    it("a step hook installed while a group runs meets every write that runs after it", async () => {
      const { backend } = await migratedBackend();
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      const first = backend.transact("first", async (tx) => {
        started();
        await gate;
        await tx.apply(inserting("first"));
      });
      const second = backend.transact("second", async (tx) => {
        await tx.step("second's step");
        await tx.apply(inserting("second"));
      });
      await running;
      const seen: string[] = [];
      backend.setStepHook(({ operation, step }) => void seen.push(`${operation}: ${step}`));
      open();
      await Promise.all([first, second]);
      expect(seen).toContain("second: second's step");
      expect(seen).toContain("second: commit");
      await backend.close();
    });

    it("close refuses every later call at once, while the operations asked before it still finish", async () => {
      const { store } = await migratedStore();
      const writing = store.handle({ kind: "promise.create", id: "asked-before-close", timeoutAt: T + 60_000 }, T);
      const closed = store.close();
      await expect(store.snapshot(T)).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
      await expect(store.ping()).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
      await expect(store.migrate()).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
      expect(() => store.subscribeOutbox(() => undefined)).toThrow(expect.objectContaining({ code: "BELAY_STORE_CLOSED" }));
      expect((await writing).status).toBe(200);
      await closed;
    });

    it("close lets every write asked for before it commit, then refuses the next", async () => {
      const { path, store } = await migratedStore();
      const ids = Array.from({ length: 40 }, (_, i) => `before-close-${String(i).padStart(2, "0")}`);
      const answers = ids.map((id) => store.handle({ kind: "promise.create", id, timeoutAt: T + 60_000 }, T));
      const closed = store.close();
      await expect(store.handle({ kind: "promise.create", id: "after-close", timeoutAt: T + 60_000 }, T)).rejects.toMatchObject({ code: "BELAY_STORE_CLOSED" });
      expect((await Promise.all(answers)).map((answer) => answer.status)).toEqual(ids.map(() => 200));
      await closed;
      expect(idsIn(path)).toEqual(ids);
    });
  });
});
