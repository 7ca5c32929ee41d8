import type { PromiseStore } from "@belay/contract";
import { expect } from "vitest";

/**
 * One promise's whole lifecycle on a migrated `store`, asserting every answer: create with a
 * target (an execute queued), acquire, a fenced child create, suspend on the child, the child
 * acquired and fulfilled (the root resumed, its execute queued again), and the root timed out by
 * the timer scan. A store's smoke test: a quick first look before the whole suite.
 */
export async function promiseLifecycleSmoke(s: PromiseStore): Promise<void> {
  const T = 1_000;
  const c = await s.handle({ kind: "promise.create", id: "root", timeoutAt: T + 100_000, tags: { "resonate:target": "poll://any@g" } }, T);
  expect(c).toMatchObject({ status: 200, data: { promise: { id: "root", state: "pending" } } });
  const out = await s.takeOutbox({ now: T, max: 10, leaseMs: 1000 });
  expect(out).toMatchObject([{ address: "poll://any@g", message: { kind: "execute", data: { task: { id: "root", version: 0 } } } }]);
  const a = await s.handle({ kind: "task.acquire", id: "root", version: 0, pid: "p1", ttl: 60_000 }, T + 1);
  expect(a).toMatchObject({ status: 200, data: { task: { state: "acquired", version: 1, pid: "p1", ttl: 60_000 } } });
  const child = await s.handle({ kind: "task.fence", id: "root", version: 1, action: { kind: "promise.create", id: "root:1", timeoutAt: T + 50_000, tags: { "resonate:target": "poll://any@g" } } }, T + 2);
  expect(child).toMatchObject({ status: 200, data: { action: { kind: "promise.create", status: 200 } } });
  const sus = await s.handle({ kind: "task.suspend", id: "root", version: 1, actions: [{ kind: "promise.register_callback", awaited: "root:1", awaiter: "root" }] }, T + 3);
  expect(sus).toEqual({ status: 200, data: {} });
  const a2 = await s.handle({ kind: "task.acquire", id: "root:1", version: 0, pid: "p2", ttl: 60_000 }, T + 4);
  expect(a2.status).toBe(200);
  const f = await s.handle({ kind: "task.fulfill", id: "root:1", version: 1, action: { kind: "promise.settle", id: "root:1", state: "resolved", value: { data: "eA==" } } }, T + 5);
  expect(f).toMatchObject({ status: 200, data: { promise: { state: "resolved", settledAt: T + 5 } } });
  const t = await s.handle({ kind: "task.get", id: "root" }, T + 6);
  expect(t).toMatchObject({ status: 200, data: { task: { state: "pending", version: 1, resumes: 1 } } });
  const snap = await s.snapshot(T + 6);
  expect(snap.outbox.map((m) => `${m.kind}:${m.id}:${m.version}`)).toEqual(["execute:root:1"]);
  const expired = await s.expireTimers({ now: T + 200_000, max: 100 });
  expect(expired.promisesTimedOut).toBe(1);
  expect((await s.handle({ kind: "promise.get", id: "root" }, T + 200_001))).toMatchObject({ data: { promise: { state: "rejected_timedout", settledAt: T + 100_000 } } });
}
