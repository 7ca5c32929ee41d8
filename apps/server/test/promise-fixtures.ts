import type { Instant, PromiseRequest, PromiseStore } from "@belay/contract";

// Durable promises as a Resonate SDK application leaves them, written through the store's own
// requests: a workflow whose task is suspended on a remote child (held by a worker), a local
// step, a listener and waiting messages, a batch long enough to page, and promise schedules.

/** The worker groups the fixture's promises name as `resonate:target`. */
export const ORDERS = "poll://any@orders";
export const SHIPPING = "poll://any@shipping";
export const BATCH = "poll://any@batch";

const base64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64");

function lineage(_id: string, parent: string, branch: string, origin: string): Record<string, string> {
  return { "resonate:parent": parent, "resonate:branch": branch, "resonate:origin": origin };
}

async function run(store: PromiseStore, request: PromiseRequest, now: Instant): Promise<any> {
  const answer = await store.handle(request, now);
  if (answer.status !== 200) throw new Error(`${request.kind}: ${JSON.stringify(answer)}`);
  return (answer as { data: unknown }).data;
}

/** What {@link seedPromises} wrote. */
export interface SeededPromises {
  /** The workflow: its task suspended, waiting on `child`. */
  readonly root: string;
  /** A local step in the root's branch, resolved. */
  readonly step: string;
  /** A remote child in its own branch, its task acquired by `childPid`. */
  readonly child: string;
  readonly childPid: string;
  /** A durable timer the root also waits on; its task's execute waits in the outbox. */
  readonly timer: string;
  /** The listener on the root. */
  readonly listener: string;
  /** How many `batch-` promises (half tagged tenant=acme, every fourth with a task). */
  readonly batch: number;
  readonly schedules: readonly string[];
}

/** Writes the fixture at `now` (`batch` promises, `extraSchedules` schedules beyond the two named ones). */
export async function seedPromises(store: PromiseStore, now: Instant, options: { batch?: number; extraSchedules?: number } = {}): Promise<SeededPromises> {
  const root = "order-7";
  const step = "order-7.1";
  const child = "order-7.2";
  const timer = "order-7.3";
  const childPid = "shipping-worker-1";
  const listener = "poll://uni@clients/cli-1";
  const hour = 3_600_000;
  const created = await run(
    store,
    {
      kind: "task.create",
      pid: "orders-worker-1",
      ttl: 30_000,
      action: {
        kind: "promise.create",
        id: root,
        timeoutAt: now + 24 * hour,
        param: { headers: { "resonate:format": "json" }, data: base64({ func: "placeOrder", args: [{ orderId: 7, card: "4242-4242-secret" }] }) },
        tags: { "resonate:target": ORDERS, "resonate:scope": "global", ...lineage(root, root, root, root), tenant: "acme" },
      },
    },
    now,
  );
  const version = created.task.version as number;
  await run(store, { kind: "promise.create", id: step, timeoutAt: now + 24 * hour, param: { data: base64({ amount: 1999 }) }, tags: { "resonate:scope": "local", ...lineage(step, root, root, root) } }, now);
  await run(store, { kind: "promise.settle", id: step, state: "resolved", value: { data: base64({ charged: true, receipt: "rcpt-secret-77" }) } }, now + 20);
  await run(
    store,
    { kind: "promise.create", id: child, timeoutAt: now + 12 * hour, param: { data: base64({ func: "ship", args: [7] }) }, tags: { "resonate:target": SHIPPING, "resonate:scope": "global", ...lineage(child, root, child, root) } },
    now + 30,
  );
  // A durable sleep (ctx.sleep): a timer with a target, whose task's execute waits in the outbox.
  await run(
    store,
    { kind: "promise.create", id: timer, timeoutAt: now + hour, tags: { "resonate:target": ORDERS, "resonate:timer": "true", "resonate:scope": "global", ...lineage(timer, root, timer, root) } },
    now + 35,
  );
  await run(
    store,
    {
      kind: "task.suspend",
      id: root,
      version,
      actions: [
        { kind: "promise.register_callback", awaited: child, awaiter: root },
        { kind: "promise.register_callback", awaited: timer, awaiter: root },
      ],
    },
    now + 40,
  );
  await run(store, { kind: "promise.register_listener", awaited: root, address: listener }, now + 50);
  const childTask = await run(store, { kind: "task.get", id: child }, now + 60);
  await run(store, { kind: "task.acquire", id: child, version: childTask.task.version, pid: childPid, ttl: 15 * 60_000 }, now + 60);

  const batch = options.batch ?? 0;
  for (let i = 0; i < batch; i++) {
    const id = `batch-${String(i).padStart(3, "0")}`;
    await run(store, { kind: "promise.create", id, timeoutAt: now + (i + 1) * 60_000, tags: { tenant: i % 2 === 0 ? "acme" : "globex", "resonate:origin": id, ...(i % 4 === 0 ? { "resonate:target": BATCH } : {}) } }, now);
    if (i % 3 === 0) await run(store, { kind: "promise.settle", id, state: i % 2 === 0 ? "resolved" : "rejected_canceled" }, now + 10);
  }

  const schedules = ["nightly-report", "hourly-sync"];
  await run(store, { kind: "schedule.create", id: schedules[0]!, cron: "0 3 * * *", promiseId: "nightly-report.{{.timestamp}}", promiseTimeout: hour, promiseTags: { "resonate:target": ORDERS, report: "sales" }, nextRunAt: now + 5 * hour }, now);
  await run(store, { kind: "schedule.create", id: schedules[1]!, cron: "0 * * * *", promiseId: "{{.id}}.{{.timestamp}}", promiseTimeout: 10 * 60_000, promiseTags: { "resonate:target": SHIPPING }, nextRunAt: now + 20 * 60_000 }, now);
  const extra: string[] = [];
  for (let i = 0; i < (options.extraSchedules ?? 0); i++) {
    const id = `sched-${String(i).padStart(3, "0")}`;
    await run(store, { kind: "schedule.create", id, cron: "*/5 * * * *", promiseId: `${id}.{{.timestamp}}`, promiseTimeout: 60_000, promiseTags: { "resonate:target": ORDERS }, nextRunAt: now + 300_000 }, now);
    extra.push(id);
  }
  // Its execute is taken once (a delivery under way), so the page shows a take.
  await store.takeOutbox({ now: now + 70, max: 1_000, leaseMs: 1_000 });
  return { root, step, child, timer, childPid, listener, batch, schedules: [...schedules, ...extra] };
}
