import type { AnswerPair, DifferenceRule, SnapshotPair } from "./differential-run.js";
import type { ProtocolAnswer, ProtocolSystem } from "./protocol-system.js";
import type { SdkPromiseRow, SdkServerSystem, SdkTaskRow } from "./sdk-server-system.js";

// The differences allowed between the SDK's in-memory server (0.11.5, the oracle) and a Belay
// promise store, each derived from an observed difference and decided one way: a weakness of the
// SDK server (resonate-sdk.md lists them) or a choice of Belay's within the protocol. Anything
// else is a failure.

type Rule = DifferenceRule<SdkServerSystem, ProtocolSystem>;
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => value !== null && typeof value === "object" && !Array.isArray(value);
const isError = (status: number) => status >= 400;

/** The answer with `data` mapped (left alone unless it is an object). */
const mapData = (answer: ProtocolAnswer, f: (data: Json) => Json): ProtocolAnswer => (isObject(answer.data) ? { status: answer.status, data: f(answer.data) } : answer);

/** `resumes` as a count: the SDK server keeps (and sends) the list of promises that settled. */
function countResumes<T>(task: T): T {
  return isObject(task) && Array.isArray(task["resumes"]) ? ({ ...task, resumes: task["resumes"].length } as T) : task;
}

/** A stored pending record past its deadline, in the timed-out view. */
function timedOutView(record: unknown, now: number): unknown {
  if (!isObject(record) || record["state"] !== "pending" || typeof record["timeoutAt"] !== "number" || now < record["timeoutAt"]) return record;
  const tags = (record["tags"] ?? {}) as Record<string, string>;
  return { ...record, state: tags["resonate:timer"] === "true" ? "resolved" : "rejected_timedout", value: {}, settledAt: record["timeoutAt"] };
}

/** Whether the SDK server lets a listener on this promise (its `isExternalPromise`). */
function sdkAwaitable(row: SdkPromiseRow): boolean {
  const { tags } = row;
  return tags["resonate:scope"] === "global" || tags["resonate:external"] === "true" || tags["resonate:target"] !== undefined || tags["resonate:timer"] === "true";
}

const logicallyPending = (row: SdkPromiseRow | undefined, now: number) => row !== undefined && row.state === "pending" && now < row.timeoutAt;

/** The promises a request makes Belay touch (deadline, then lease) when it gets that far. */
function touchedIds(kind: string, data: Readonly<Json>): string[] {
  const action = isObject(data["action"]) ? ((data["action"] as Json)["data"] as Json) : undefined;
  switch (kind) {
    case "promise.get":
    case "promise.create":
    case "promise.settle":
    case "task.get":
    case "task.acquire":
    case "task.release":
    case "task.fulfill":
    case "task.halt":
    case "task.continue":
      return [String(data["id"])];
    case "promise.register_callback":
      return [String(data["awaited"]), String(data["awaiter"])];
    case "promise.register_listener":
      return [String(data["awaited"])];
    case "task.create":
      return [String(action?.["id"])];
    case "task.suspend":
      return [String(data["id"]), ...((data["actions"] as { data: Json }[]) ?? []).map((a) => String(a.data["awaited"]))];
    case "task.fence":
      return [String(data["id"]), String(action?.["id"])];
    case "task.heartbeat":
      return ((data["tasks"] as Json[]) ?? []).map((t) => String(t["id"]));
    default:
      return [];
  }
}

/** The SDK server's tick releasing a lapsed lease: pending at the same version, retry armed, dispatched. */
function endLease(oracle: SdkServerSystem, id: string, now: number): void {
  const { server } = oracle;
  const task = server.tasks.get(id)!;
  const { pid: _pid, ttl: _ttl, ...rest } = task;
  server.setTask({ ...rest, state: "pending" } satisfies SdkTaskRow);
  server.setTTimeout({ id, type: 0, timeout: now + 30_000 });
  server.sendMessage(server.promises.get(id)!.tags["resonate:target"]!, { kind: "execute", head: {}, data: { task: { id, version: task.version } } });
}

/** The rules, in the order they apply. */
export const SDK_SERVER_DIFFERENCES: readonly Rule[] = Object.freeze([
  {
    name: "suspend-422-data-object",
    verdict: "allowed",
    reason: "SDK weakness: its task.suspend answers 422 (an awaited promise is missing) with data {} where the protocol's error data is a string.",
    answers(pair, step) {
      if (step.request.kind !== "task.suspend" || pair.oracle.status !== 422 || !isObject(pair.oracle.data)) return null;
      return { oracle: { status: 422, data: "(no message)" }, subject: pair.subject };
    },
  },
  {
    name: "error-message-text",
    verdict: "allowed",
    reason: "Not a behaviour: error data is free text; the protocol fixes the status only (the fenced action's too).",
    answers(pair) {
      const blankable = (a: ProtocolAnswer, b: ProtocolAnswer) => a.status === b.status && isError(a.status) && typeof a.data === "string" && typeof b.data === "string";
      const blank = (a: ProtocolAnswer): ProtocolAnswer => ({ status: a.status, data: "<error>" });
      if (blankable(pair.oracle, pair.subject)) return { oracle: blank(pair.oracle), subject: blank(pair.subject) };
      const oAction = isObject(pair.oracle.data) ? pair.oracle.data["action"] : undefined;
      const sAction = isObject(pair.subject.data) ? pair.subject.data["action"] : undefined;
      if (!isObject(oAction) || !isObject(sAction) || !blankable(oAction as unknown as ProtocolAnswer, sAction as unknown as ProtocolAnswer)) return null;
      return {
        oracle: mapData(pair.oracle, (d) => ({ ...d, action: { kind: oAction["kind"], ...blank(oAction as unknown as ProtocolAnswer) } })),
        subject: mapData(pair.subject, (d) => ({ ...d, action: { kind: sAction["kind"], ...blank(sAction as unknown as ProtocolAnswer) } })),
      };
    },
  },
  {
    name: "resumes-list",
    verdict: "allowed",
    reason: "SDK representation: its task records carry `resumes` as the list of promise ids that settled meanwhile; the reference server (and Belay) send the count. Compared as a count.",
    answers(pair) {
      if (!isObject(pair.oracle.data) || !isObject(pair.oracle.data["task"])) return null;
      return { oracle: mapData(pair.oracle, (d) => ({ ...d, task: countResumes(d["task"]) })), subject: pair.subject };
    },
    snapshots(pair) {
      if (pair.oracle.tasks.length === 0) return null;
      return { oracle: { ...pair.oracle, tasks: pair.oracle.tasks.map(countResumes) }, subject: pair.subject };
    },
  },
  {
    name: "preload-stored-view",
    verdict: "allowed",
    reason: "SDK weakness: its preload (acquire, create, suspend 300) lists branch promises as stored, so one pending past its deadline reads pending; Belay answers every record in the timed-out view, as every read must.",
    answers(pair, step) {
      const preload = isObject(pair.oracle.data) ? pair.oracle.data["preload"] : undefined;
      if (!Array.isArray(preload)) return null;
      const viewed = preload.map((p) => timedOutView(p, step.now));
      if (viewed.every((p, i) => p === preload[i])) return null;
      return { oracle: mapData(pair.oracle, (d) => ({ ...d, preload: viewed })), subject: pair.subject };
    },
  },
  {
    name: "preload-order",
    verdict: "allowed",
    reason: "Not a behaviour: the protocol does not order a preload; the SDK lists it in creation order, Belay by id.",
    answers(pair) {
      const preload = isObject(pair.oracle.data) ? pair.oracle.data["preload"] : undefined;
      if (!Array.isArray(preload)) return null;
      const id = (p: unknown) => String((p as Json)["id"]);
      const sorted = [...preload].sort((a, b) => (id(a) < id(b) ? -1 : 1));
      if (sorted.every((p, i) => p === preload[i])) return null;
      return { oracle: mapData(pair.oracle, (d) => ({ ...d, preload: sorted })), subject: pair.subject };
    },
  },
  {
    name: "search-not-implemented",
    verdict: "allowed",
    reason: "SDK weakness: promise.search, task.search and schedule.search answer 501 there; Belay's searches are checked by the conformance suite, not here.",
    answers(pair, step) {
      if (!step.request.kind.endsWith(".search") || pair.oracle.status !== 501) return null;
      return { oracle: pair.subject, subject: pair.subject };
    },
  },
  {
    name: "listener-on-internal-promise",
    verdict: "allowed",
    reason:
      "SDK weakness: register_listener on a promise with no target, scope global, timer or external tag answers 422 there; the reference server accepts it (resonate.md §1) and so does Belay. The oracle then gets the listener Belay stored.",
    answers(pair, step) {
      if (!internalListener(pair, step.request, step.oracle)) return null;
      return { oracle: pair.subject, subject: pair.subject };
    },
    afterStep(pair, step) {
      if (!internalListener(pair, step.request, step.oracle)) return false;
      const row = step.oracle.server.promises.get(String(step.request.data["awaited"]))!;
      if (logicallyPending(row, step.now)) row.listeners.add(String(step.request.data["address"]));
      return true;
    },
  },
  {
    name: "callback-on-settled-promise-wakes",
    verdict: "allowed",
    reason:
      "SDK weakness: register_callback on an already-settled promise leaves a suspended awaiter parked there; Belay (as the reference server, resonate.md §1) wakes it: pending, dispatched, retry armed. A running awaiter is left alone by both. The oracle is given the same wake.",
    afterStep(pair, step) {
      if (step.request.kind !== "promise.register_callback" || pair.oracle.status !== 200 || pair.subject.status !== 200) return false;
      if ((pair.oracle.data as { promise: { state: string } }).promise.state === "pending") return false;
      const server = step.oracle.server;
      const awaitedId = String(step.request.data["awaited"]);
      const awaiterId = String(step.request.data["awaiter"]);
      const task = server.tasks.get(awaiterId);
      if (task?.state !== "suspended") return false;
      server.setTask({ ...task, state: "pending", resumes: new Set([awaitedId]) });
      server.setTTimeout({ id: awaiterId, type: 0, timeout: step.now + 30_000 });
      server.sendMessage(server.promises.get(awaiterId)!.tags["resonate:target"]!, { kind: "execute", head: {}, data: { task: { id: awaiterId, version: task.version } } });
      return true;
    },
  },
  {
    name: "untargeted-deadline",
    verdict: "allowed",
    reason:
      "SDK weakness: only a targeted promise gets a stored deadline there, so an untargeted one (a latent ctx.promise, a bare timer) settles only when a request touches it; Belay arms every deadline and its scan fires them all (resonate.md requirement 5). After each tick the oracle's passed untargeted deadlines are touched; snapshots compare the deadlines of targeted promises.",
    afterTick(tick) {
      const due = [...tick.oracle.server.promises.values()].filter((row) => row.state === "pending" && row.tags["resonate:target"] === undefined && tick.now >= row.timeoutAt);
      for (const row of due.sort((a, b) => a.timeoutAt - b.timeoutAt)) tick.oracle.touch(row.id, tick.now);
      return due.length > 0;
    },
    snapshots(pair) {
      const targeted = new Set(pair.subject.promises.filter((p) => isObject(p["tags"]) && (p["tags"] as Json)["resonate:target"] !== undefined).map((p) => String(p["id"])));
      const promiseTimers = pair.subject.promiseTimers.filter((t) => targeted.has(t.id));
      if (promiseTimers.length === pair.subject.promiseTimers.length) return null;
      return { oracle: pair.oracle, subject: { ...pair.subject, promiseTimers } };
    },
  },
  {
    name: "lease-ends-at-its-end",
    verdict: "allowed",
    reason:
      "SDK weakness: a lapsed lease takes effect there only at the next tick, so until then a heartbeat renews it and the holder's writes succeed; Belay ends a lease at exactly its end (resonate.md requirement 9): a request that touches the task finds it pending again, dispatched. Before each request the oracle's lapsed leases on the promises it names are ended as its tick would; a request refused as malformed (400) touches nothing in either, so the subject then gets those touches too.",
    beforeStep(step) {
      const { server } = step.oracle;
      const ended: string[] = [];
      for (const id of new Set(touchedIds(step.request.kind, step.request.data))) {
        const row = server.promises.get(id);
        const task = server.tasks.get(id);
        // The deadline is touched first: a promise past it settles, and its task is fulfilled.
        if (row === undefined || task?.state !== "acquired" || (row.state === "pending" && step.now >= row.timeoutAt)) continue;
        const lease = server.tTimeouts.find((t) => t.id === id && t.type === 1);
        if (lease === undefined || step.now < lease.timeout) continue;
        endLease(step.oracle, id, step.now);
        ended.push(id);
      }
      step.notes.set("lease-ends-at-its-end", ended);
      return ended.length > 0;
    },
    async afterStep(pair, step) {
      const ended = (step.notes.get("lease-ends-at-its-end") as string[] | undefined) ?? [];
      if (pair.oracle.status !== 400 || pair.subject.status !== 400 || ended.length === 0) return false;
      for (const id of ended) await step.subject.send({ kind: "promise.get", data: { id } }, step.now);
      return true;
    },
  },
  {
    name: "settlement-settles-lapsed-awaiters",
    verdict: "allowed",
    reason:
      "Belay choice: when a promise settles, an awaiter whose own deadline has passed is settled by it (its task fulfilled) instead of woken; the SDK server wakes it (pending, dispatched) and times it out when next touched or ticked. Both read the awaiter as settled. The oracle's settlement chain is given the same touch.",
    setup({ oracle, hit }) {
      const { server } = oracle;
      const wake = server.triggerCallbacks.bind(server);
      server.triggerCallbacks = (promiseId, now) => {
        const changes: ReturnType<typeof wake> = [];
        for (const awaiter of [...(server.promises.get(promiseId)?.callbacks ?? [])]) {
          const row = server.promises.get(awaiter);
          if (awaiter === promiseId || row === undefined || row.state !== "pending" || now < row.timeoutAt) continue;
          changes.push(...server.tryEagerTimeout(now, awaiter));
          hit();
        }
        return [...changes, ...wake(promiseId, now)];
      };
    },
  },
  {
    name: "schedule-firing-lineage",
    verdict: "allowed",
    reason:
      "SDK weakness: a schedule's firing there tags its promise with resonate:schedule only; the reference server (resonate.md §1, schedules) and Belay make it the root of its own call graph (origin, branch and parent = its id). The oracle's fired promises get the same tags after each tick.",
    afterTick(tick) {
      let patched = false;
      for (const row of tick.oracle.server.promises.values()) {
        if (row.tags["resonate:schedule"] === undefined || row.tags["resonate:origin"] === row.id) continue;
        row.tags = { ...row.tags, "resonate:origin": row.id, "resonate:branch": row.id, "resonate:parent": row.id };
        patched = true;
      }
      return patched;
    },
  },
  {
    name: "execute-kept-after-claim",
    verdict: "allowed",
    reason:
      "SDK weakness: its outbox keeps a task's execute message after the task was acquired, suspended, halted or fulfilled; Belay drops it then (the message could only fail to acquire). Snapshots compare the executes of pending tasks.",
    snapshots(pair: SnapshotPair) {
      const pending = new Set(pair.oracle.tasks.filter((t) => t.state === "pending").map((t) => t.id));
      const messages = pair.oracle.messages.filter((m) => m.kind !== "execute" || pending.has(m.id));
      if (messages.length === pair.oracle.messages.length) return null;
      return { oracle: { ...pair.oracle, messages }, subject: pair.subject };
    },
  },
  {
    name: "refused-request-touches",
    verdict: "allowed",
    reason:
      "Belay choice: the SDK server (like the reference server's try_timeout guard) makes the passed deadline of every promise a request names permanent before its checks; Belay touches a promise when the request reaches it, so a task.suspend or task.fence refused early leaves the promises named after that point for the next touch or scan. Both answer every read in the timed-out view. The subject is given the touches the oracle made.",
    async afterStep(pair, step) {
      const later = untouchedByRefusal(pair, step.request, step.oracle);
      if (later.length === 0) return false;
      for (const id of later) await step.subject.send({ kind: "promise.get", data: { id } }, step.now);
      // A hit where the oracle's touches changed something: a deadline made permanent, a lease ended.
      const ended = new Set((step.notes.get("lease-ends-at-its-end") as string[] | undefined) ?? []);
      const timedOut = new Set(
        step.oracle.lastChanges.filter((c) => c.kind === "promise.set" && c.promise !== undefined && c.promise.state !== "pending" && c.promise.settledAt === c.promise.timeoutAt).map((c) => c.promise!.id),
      );
      return later.some((id) => ended.has(id) || timedOut.has(id));
    },
  },
  {
    name: "heartbeat-touches",
    verdict: "allowed",
    reason:
      "SDK weakness: its task.heartbeat touches no promise; Belay's, like every other request, makes the passed deadlines of the promises it names permanent. The oracle is given the same touches.",
    afterStep(_pair, step) {
      if (step.request.kind !== "task.heartbeat") return false;
      const ids = ((step.request.data["tasks"] as Json[]) ?? []).map((t) => String(t["id"])).filter((id) => {
        const row = step.oracle.server.promises.get(id);
        return row !== undefined && row.state === "pending" && step.now >= row.timeoutAt;
      });
      for (const id of ids) step.oracle.touch(id, step.now);
      return ids.length > 0;
    },
  },
] satisfies Rule[]);

/**
 * The promises a refused task.suspend or task.fence named past the point where Belay stopped
 * (the task's own promise is always reached; a suspend's callbacks up to the first missing
 * promise): the oracle touched them up front, the subject did not.
 */
function untouchedByRefusal(pair: AnswerPair, request: { kind: string; data: Readonly<Json> }, oracle: SdkServerSystem): string[] {
  const { kind, data } = request;
  if ((kind !== "task.suspend" && kind !== "task.fence") || !isError(pair.oracle.status) || pair.oracle.status !== pair.subject.status || pair.oracle.status === 400) return [];
  let later: string[];
  if (kind === "task.fence") later = [String((data["action"] as { data: Json }).data["id"])];
  else {
    const awaited = (data["actions"] as { data: Json }[]).map((a) => String(a.data["awaited"]));
    // Promises are never deleted, so the first one missing now is the one the suspend stopped at.
    later = pair.oracle.status === 422 ? awaited.slice(awaited.findIndex((id) => !oracle.server.promises.has(id)) + 1) : awaited;
  }
  return [...new Set(later)].filter((id) => id !== data["id"]);
}

/** A register_listener the SDK server refused only because the promise is internal by its rule. */
function internalListener(pair: AnswerPair, request: { kind: string; data: Readonly<Json> }, oracle: SdkServerSystem): boolean {
  if (request.kind !== "promise.register_listener" || pair.oracle.status !== 422 || pair.subject.status !== 200) return false;
  const row = oracle.server.promises.get(String(request.data["awaited"]));
  return row !== undefined && !sdkAwaitable(row);
}
