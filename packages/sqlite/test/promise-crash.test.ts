import { describe, expect, it } from "vitest";
import { SqlitePromiseStore } from "../src/index.js";
import { killedMidLoad } from "./support/killed-child.js";

// Durable before acknowledged: a process creating, acquiring and settling promises in a loop is
// killed with SIGKILL while writes are in flight; every write it acknowledged is in the file.

const killed = killedMidLoad("promise-crash-worker", "belay-sqlite-promise-crash-", (path) => new SqlitePromiseStore({ path }));

describe("sqlite promise store: a process killed mid-load", () => {
  it("keeps every acknowledged create, acquire and settlement", async () => {
    const { acknowledged, store } = await killed();
    const now = Date.now();
    const counts = { created: 0, acquired: 0, resolved: 0, rejected: 0 };
    for (const line of acknowledged) {
      const [write, id] = line.split(" ") as [keyof typeof counts, string];
      counts[write]++;
      const promise = await store.handle({ kind: "promise.get", id }, now);
      expect(promise.status, line).toBe(200);
      if (promise.status !== 200) continue;
      const task = await store.handle({ kind: "task.get", id }, now);
      expect(task.status, line).toBe(200);
      if (task.status !== 200) continue;
      if (write === "acquired") expect(task.data.task.version, line).toBe(1);
      if (write === "resolved" || write === "rejected") {
        expect(promise.data.promise, line).toMatchObject({ state: write, value: { data: Buffer.from(id).toString("base64") } });
        expect(task.data.task.state, line).toBe("fulfilled");
      }
    }
    expect(counts.created).toBeGreaterThan(100);
    expect(counts.resolved + counts.rejected).toBeGreaterThan(100);
    const snapshot = await store.snapshot(now);
    expect(snapshot.promises.length).toBeGreaterThanOrEqual(counts.created);
    console.log(`killed after ${acknowledged.length} acknowledged writes (${JSON.stringify(counts)}); ${snapshot.promises.length} promises in the file`);
    await store.close();
  }, 120_000);
});
