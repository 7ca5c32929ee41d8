import type { Instant } from "../job.js";
import {
  PROMISE_TAGS, type PromiseRecord, type PromiseScheduleRecord, type PromiseValue, type SettleState, type TaskRecord,
  normalizeValue, timeoutState,
} from "./records.js";
import type {
  FencedAnswer, PromiseCreateRequest, PromiseFailure, PromiseRequest, PromiseResponse, PromiseSettleRequest,
} from "./requests.js";
import type { PromiseRow, PromiseScheduleRow, RowKey, TaskRow } from "./rows.js";
import type { Workspace } from "./workspace.js";

// The rules of the durable-promise protocol, once, for every store: pure functions of the rows
// an operation loaded (a `Workspace`), the request and `now`. They write only to the workspace;
// the store applies its effects in the operation's own transaction. Nothing here reads a clock,
// parses a cron expression or touches I/O.

/** Settings every operation of one store runs with. */
export interface PromiseSettings {
  /** A pending task nobody acquired is dispatched again after this long. Default 30 s. */
  readonly retryTimeoutMs: number;
  /** Most promises a preload returns. Default 1000. */
  readonly preloadLimit: number;
}

/** The default settings. */
export const DEFAULT_PROMISE_SETTINGS: Readonly<PromiseSettings> = Object.freeze({ retryTimeoutMs: 30_000, preloadLimit: 1_000 });

const fail = (status: PromiseFailure["status"], error: string): PromiseFailure => ({ status, error });
const ok = <D>(data: D) => ({ status: 200 as const, data });

// ---- records --------------------------------------------------------------------------------

/**
 * A promise as a client sees it at `now`: a pending promise past its deadline reads as settled
 * by it (timed out, or resolved for a timer), `settledAt` = its deadline. The timed-out view.
 */
export function promiseRecord(row: PromiseRow, now: Instant): PromiseRecord {
  if (row.state === "pending" && now >= row.timeoutAt) {
    return { id: row.id, state: timeoutState(row.tags), param: row.param, value: {}, tags: row.tags, timeoutAt: row.timeoutAt, createdAt: row.createdAt, settledAt: row.timeoutAt };
  }
  const base = { id: row.id, state: row.state, param: row.param, value: row.value, tags: row.tags, timeoutAt: row.timeoutAt, createdAt: row.createdAt };
  return row.settledAt === null ? base : { ...base, settledAt: row.settledAt };
}

/** A task as a client sees it: `pid` and `ttl` only while acquired. A task whose promise reads settled reads fulfilled. */
export function taskRecord(row: TaskRow, promise: PromiseRow | null, now: Instant): TaskRecord {
  const settled = promise !== null && (promise.state !== "pending" || now >= promise.timeoutAt);
  if (settled && row.state !== "fulfilled") return { id: row.id, state: "fulfilled", version: row.version, resumes: 0 };
  const base = { id: row.id, state: row.state, version: row.version, resumes: row.resumes };
  return row.pid !== null && row.ttl !== null && row.state === "acquired" ? { ...base, ttl: row.ttl, pid: row.pid } : base;
}

/** A schedule as a client sees it. */
export function scheduleRecord(row: PromiseScheduleRow): PromiseScheduleRecord {
  const base = {
    id: row.id,
    cron: row.cron,
    promiseId: row.promiseId,
    promiseTimeout: row.promiseTimeout,
    promiseParam: row.promiseParam,
    promiseTags: row.promiseTags,
    createdAt: row.createdAt,
    nextRunAt: row.nextRunAt,
  };
  return row.lastRunAt === null ? base : { ...base, lastRunAt: row.lastRunAt };
}

/** The id a schedule's firing at `occurrence` gives its promise. */
export function scheduledPromiseId(schedule: Pick<PromiseScheduleRow, "id" | "promiseId">, occurrence: Instant): string {
  return schedule.promiseId.replaceAll("{{.id}}", schedule.id).replaceAll("{{.timestamp}}", String(occurrence));
}

// ---- the machine ----------------------------------------------------------------------------

/**
 * The rules, bound to one operation's workspace, `now` and settings. Every public method is one
 * protocol step; internal steps (`touch`, `settle`, `wake`) are the settlement chain.
 */
export class PromiseMachine {
  readonly #ws: Workspace;
  readonly #now: Instant;
  readonly #settings: PromiseSettings;

  constructor(ws: Workspace, now: Instant, settings: PromiseSettings) {
    this.#ws = ws;
    this.#now = now;
    this.#settings = settings;
  }

  /** Runs one request. */
  run<R extends PromiseRequest>(request: R): PromiseResponse<R> {
    return this.#dispatch(request) as PromiseResponse<R>;
  }

  #dispatch(request: PromiseRequest): PromiseResponse {
    switch (request.kind) {
      case "promise.get":
        return this.#promiseGet(request.id);
      case "promise.create":
        return this.#promiseCreate(request);
      case "promise.settle":
        return this.#promiseSettle(request);
      case "promise.register_callback":
        return this.#registerCallback(request.awaited, request.awaiter);
      case "promise.register_listener":
        return this.#registerListener(request.awaited, request.address);
      case "task.get":
        return this.#taskGet(request.id);
      case "task.create":
        return this.#taskCreate(request.pid, request.ttl, request.action);
      case "task.acquire":
        return this.#taskAcquire(request.id, request.version, request.pid, request.ttl);
      case "task.release":
        return this.#taskRelease(request.id, request.version);
      case "task.fulfill":
        return this.#taskFulfill(request.id, request.version, request.action);
      case "task.suspend":
        return this.#taskSuspend(request.id, request.version, request.actions.map((a) => a.awaited));
      case "task.fence":
        return this.#taskFence(request.id, request.version, request.action);
      case "task.heartbeat":
        return this.#taskHeartbeat(request.pid, request.tasks);
      case "task.halt":
        return this.#taskHalt(request.id);
      case "task.continue":
        return this.#taskContinue(request.id);
      case "schedule.get": {
        const row = this.#ws.schedule(request.id);
        return row === null ? fail(404, "schedule not found") : ok({ schedule: scheduleRecord(row) });
      }
      case "schedule.create":
        return this.#scheduleCreate(request);
      case "schedule.delete": {
        if (this.#ws.schedule(request.id) === null) return fail(404, "schedule not found");
        this.#ws.deleteSchedule(request.id);
        return ok({});
      }
      case "promise.search":
      case "task.search":
      case "schedule.search":
        // Searches read pages, not rows by key: the front answers them (`searchPage`).
        throw new RangeError(`${request.kind} is not a keyed operation`);
    }
  }

  // ---- promises ----------------------------------------------------------------------------

  #promiseGet(id: string): PromiseResponse<{ kind: "promise.get"; id: string }> {
    this.touch(id);
    const row = this.#ws.promise(id);
    return row === null ? fail(404, "promise not found") : ok({ promise: promiseRecord(row, this.#now) });
  }

  #promiseCreate(request: PromiseCreateRequest): PromiseResponse<PromiseCreateRequest> {
    return ok({ promise: promiseRecord(this.createPromise(request).row, this.#now) });
  }

  /**
   * Creates a promise, or finds the one with its id (idempotent: the stored record, unchanged,
   * whatever the request's other fields). A new promise past its deadline is born settled by it;
   * a targeted one gets a task: pending at version 0 with an `execute` queued (or, with a
   * `resonate:delay` in the future, its first dispatch at the delay), fulfilled if born settled.
   */
  createPromise(request: PromiseCreateRequest): { readonly row: PromiseRow; readonly created: boolean } {
    this.touch(request.id);
    const existing = this.#ws.promise(request.id);
    if (existing !== null) return { row: existing, created: false };
    const now = this.#now;
    const tags = request.tags ?? {};
    const param = normalizeValue(request.param);
    const target = tags[PROMISE_TAGS.target];
    if (now >= request.timeoutAt) {
      const row: PromiseRow = { id: request.id, state: timeoutState(tags), param, value: {}, tags, timeoutAt: request.timeoutAt, createdAt: request.timeoutAt, settledAt: request.timeoutAt };
      this.#ws.putPromise(row);
      if (target !== undefined) this.#ws.putTask({ id: request.id, state: "fulfilled", version: 0, resumes: 0, pid: null, ttl: null, timerAt: null });
      return { row, created: true };
    }
    const row: PromiseRow = { id: request.id, state: "pending", param, value: {}, tags, timeoutAt: request.timeoutAt, createdAt: now, settledAt: null };
    this.#ws.putPromise(row);
    if (target !== undefined) {
      const delay = delayOf(tags);
      const deferred = delay !== null && now < delay;
      this.#ws.putTask({ id: request.id, state: "pending", version: 0, resumes: 0, pid: null, ttl: null, timerAt: deferred ? delay : now + this.#settings.retryTimeoutMs });
      if (!deferred) this.#ws.execute(request.id, 0, target, now);
    }
    return { row, created: true };
  }

  #promiseSettle(request: PromiseSettleRequest): PromiseResponse<PromiseSettleRequest> {
    this.touch(request.id);
    const row = this.#ws.promise(request.id);
    if (row === null) return fail(404, "promise not found");
    // Write-once: a settled promise answers with its stored record, never overwritten.
    if (row.state !== "pending") return ok({ promise: promiseRecord(row, this.#now) });
    return ok({ promise: promiseRecord(this.settle(row, request.state, normalizeValue(request.value), this.#now), this.#now) });
  }

  #registerCallback(awaited: string, awaiter: string): PromiseResponse<{ kind: "promise.register_callback"; awaited: string; awaiter: string }> {
    this.touch(awaited);
    this.touch(awaiter);
    const awaitedRow = this.#ws.promise(awaited);
    if (awaitedRow === null) return fail(404, "awaited promise not found");
    const awaiterRow = this.#ws.promise(awaiter);
    if (awaiterRow === null) return fail(422, "awaiter promise not found");
    const awaiterTask = this.#ws.task(awaiter);
    if (awaiterTask === null) return fail(422, "awaiter promise has no task (no resonate:target)");
    if (awaitedRow.state === "pending") {
      if (awaiterRow.state === "pending") this.#ws.addCallback(awaited, awaiter);
    } else if (awaiterTask.state === "suspended") {
      // The awaited promise has settled already: a parked awaiter resumes as if it had been
      // waiting. A running one is answered with the settled record instead of a resume mark, so a
      // repeated registration counts nothing twice.
      this.wake(awaiterTask, awaiterRow);
    }
    return ok({ promise: promiseRecord(awaitedRow, this.#now) });
  }

  #registerListener(awaited: string, address: string): PromiseResponse<{ kind: "promise.register_listener"; awaited: string; address: string }> {
    this.touch(awaited);
    const row = this.#ws.promise(awaited);
    if (row === null) return fail(404, "promise not found");
    // A settled promise never gains a listener: the caller has the settled record already.
    if (row.state === "pending") this.#ws.addListener(awaited, address);
    return ok({ promise: promiseRecord(row, this.#now) });
  }

  // ---- tasks -------------------------------------------------------------------------------

  #taskGet(id: string): PromiseResponse<{ kind: "task.get"; id: string }> {
    this.touch(id);
    const task = this.#ws.task(id);
    return task === null ? fail(404, "task not found") : ok({ task: taskRecord(task, this.#ws.promise(id), this.#now) });
  }

  #taskCreate(pid: string, ttl: number, action: PromiseCreateRequest): PromiseResponse<{ kind: "task.create"; pid: string; ttl: number; action: PromiseCreateRequest }> {
    this.touch(action.id);
    const existing = this.#ws.task(action.id);
    if (existing !== null) {
      const promise = this.#ws.promise(action.id)!;
      if (existing.state === "pending") return ok(this.#acquired(this.#acquire(existing, pid, ttl), promise));
      if (existing.state === "fulfilled") return ok(this.#acquired(existing, promise));
      return fail(409, `task is ${existing.state}`);
    }
    if (this.#ws.promise(action.id) !== null) return fail(422, "the promise exists and has no task");
    const now = this.#now;
    const tags = action.tags ?? {};
    const param = normalizeValue(action.param);
    if (now >= action.timeoutAt) {
      const row: PromiseRow = { id: action.id, state: timeoutState(tags), param, value: {}, tags, timeoutAt: action.timeoutAt, createdAt: action.timeoutAt, settledAt: action.timeoutAt };
      const task: TaskRow = { id: action.id, state: "fulfilled", version: 0, resumes: 0, pid: null, ttl: null, timerAt: null };
      this.#ws.putPromise(row);
      this.#ws.putTask(task);
      return ok({ task: taskRecord(task, row, now), promise: promiseRecord(row, now), preload: [] });
    }
    const row: PromiseRow = { id: action.id, state: "pending", param, value: {}, tags, timeoutAt: action.timeoutAt, createdAt: now, settledAt: null };
    const task: TaskRow = { id: action.id, state: "acquired", version: 1, resumes: 0, pid, ttl, timerAt: now + ttl };
    this.#ws.putPromise(row);
    this.#ws.putTask(task);
    return ok(this.#acquired(task, row));
  }

  #taskAcquire(id: string, version: number, pid: string, ttl: number): PromiseResponse<{ kind: "task.acquire"; id: string; version: number; pid: string; ttl: number }> {
    this.touch(id);
    const task = this.#ws.task(id);
    if (task === null) return fail(404, "task not found");
    if (task.state !== "pending") return fail(409, `task is ${task.state}, not pending`);
    if (task.version !== version) return fail(409, `version mismatch: the task is at version ${task.version}`);
    return ok(this.#acquired(this.#acquire(task, pid, ttl), this.#ws.promise(id)!));
  }

  /** A pending task acquired by `pid`: version + 1 (the new fence), lease until now + ttl, its waiting `execute` dropped. */
  #acquire(task: TaskRow, pid: string, ttl: number): TaskRow {
    const acquired: TaskRow = { ...task, state: "acquired", version: task.version + 1, resumes: 0, pid, ttl, timerAt: this.#now + ttl };
    this.#ws.putTask(acquired);
    this.#ws.dropExecute(task.id);
    return acquired;
  }

  #acquired(task: TaskRow, promise: PromiseRow) {
    return { task: taskRecord(task, promise, this.#now), promise: promiseRecord(promise, this.#now), preload: this.#preload(promise) };
  }

  /** The other promises of the promise's branch, as of now: what a worker replays from without asking. */
  #preload(promise: PromiseRow): PromiseRecord[] {
    const branch = promise.tags[PROMISE_TAGS.branch];
    if (branch === undefined) return [];
    return this.#ws
      .branch(branch)
      .filter((row) => row.id !== promise.id)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, this.#settings.preloadLimit)
      .map((row) => promiseRecord(row, this.#now));
  }

  /** The task acquired at `version`, or the failure that says why not (after touching its promise). */
  #held(id: string, version: number, what: string): TaskRow | PromiseFailure {
    this.touch(id);
    const task = this.#ws.task(id);
    if (task === null) return fail(404, "task not found");
    if (task.state !== "acquired") return fail(409, `cannot ${what}: task is ${task.state}, not acquired`);
    if (task.version !== version) return fail(409, `cannot ${what}: version mismatch, the task is at version ${task.version}`);
    return task;
  }

  #taskRelease(id: string, version: number): PromiseResponse<{ kind: "task.release"; id: string; version: number }> {
    const task = this.#held(id, version, "release");
    if ("status" in task) return task;
    this.#dispatchAgain({ ...task, state: "pending", pid: null, ttl: null });
    return ok({});
  }

  #taskFulfill(id: string, version: number, action: PromiseSettleRequest): PromiseResponse<{ kind: "task.fulfill"; id: string; version: number; action: PromiseSettleRequest }> {
    const task = this.#held(id, version, "fulfill");
    if ("status" in task) return task;
    const settled = this.settle(this.#ws.promise(id)!, action.state, normalizeValue(action.value), this.#now);
    return ok({ promise: promiseRecord(settled, this.#now) });
  }

  #taskSuspend(id: string, version: number, awaited: readonly string[]): PromiseResponse<{ kind: "task.suspend"; id: string; version: number; actions: [] }> {
    const task = this.#held(id, version, "suspend");
    if ("status" in task) return task;
    let settled = false;
    for (const awaitedId of awaited) {
      this.touch(awaitedId);
      const row = this.#ws.promise(awaitedId);
      if (row === null) return fail(422, `awaited promise ${awaitedId} not found`);
      if (row.state !== "pending") settled = true;
    }
    // The touches may have settled this task's own promise (fulfilling the task): check again.
    const current = this.#ws.task(id)!;
    if (current.state !== "acquired") return fail(409, `cannot suspend: task is ${current.state}, not acquired`);
    if (settled) {
      // Something awaited has settled: nothing is parked; the worker carries on, still acquired.
      this.#ws.putTask({ ...current, resumes: 0 });
      return { status: 300, data: { preload: this.#preload(this.#ws.promise(id)!) } };
    }
    for (const awaitedId of awaited) this.#ws.addCallback(awaitedId, id);
    this.#ws.putTask({ ...current, state: "suspended", resumes: 0, pid: null, ttl: null, timerAt: null });
    return ok({});
  }

  #taskFence(id: string, version: number, action: PromiseCreateRequest | PromiseSettleRequest): PromiseResponse<{ kind: "task.fence"; id: string; version: number; action: PromiseCreateRequest }> {
    const task = this.#held(id, version, "fence");
    if ("status" in task) return task;
    const inner = action.kind === "promise.create" ? this.#promiseCreate(action) : this.#promiseSettle(action);
    const answer = { kind: action.kind, ...inner } as FencedAnswer;
    // No preload: a fenced write is one of many during one execution, and the worker has the
    // branch from its acquire already (a preload here would cost a branch read per write).
    return ok({ action: answer, preload: [] });
  }

  #taskHeartbeat(pid: string, tasks: readonly { readonly id: string; readonly version: number }[]): PromiseResponse<{ kind: "task.heartbeat"; pid: string; tasks: [] }> {
    for (const { id, version } of tasks) {
      this.touch(id);
      const task = this.#ws.task(id);
      // Renews only the caller's own live leases; anything else is left alone, silently (the
      // worker learns of a lost task when it next writes under that version).
      if (task === null || task.state !== "acquired" || task.version !== version || task.pid !== pid || task.ttl === null) continue;
      this.#ws.putTask({ ...task, timerAt: this.#now + task.ttl });
    }
    return ok({});
  }

  #taskHalt(id: string): PromiseResponse<{ kind: "task.halt"; id: string }> {
    this.touch(id);
    const task = this.#ws.task(id);
    if (task === null) return fail(404, "task not found");
    if (task.state === "fulfilled") return fail(409, "task is fulfilled");
    if (task.state !== "halted") {
      this.#ws.putTask({ ...task, state: "halted", pid: null, ttl: null, timerAt: null });
      this.#ws.dropExecute(id);
    }
    return ok({});
  }

  #taskContinue(id: string): PromiseResponse<{ kind: "task.continue"; id: string }> {
    this.touch(id);
    const task = this.#ws.task(id);
    if (task === null) return fail(404, "task not found");
    if (task.state !== "halted") return fail(409, `task is ${task.state}, not halted`);
    this.#dispatchAgain({ ...task, state: "pending" });
    return ok({});
  }

  /** Writes `task` as pending with its retry timer armed and an `execute` at its current version queued now. */
  #dispatchAgain(task: TaskRow): void {
    const pending: TaskRow = { ...task, state: "pending", pid: null, ttl: null, timerAt: this.#now + this.#settings.retryTimeoutMs };
    this.#ws.putTask(pending);
    const target = this.#ws.promise(task.id)?.tags[PROMISE_TAGS.target];
    if (target !== undefined) this.#ws.execute(task.id, task.version, target, this.#now);
  }

  // ---- schedules ---------------------------------------------------------------------------

  #scheduleCreate(request: Extract<PromiseRequest, { kind: "schedule.create" }>): PromiseResponse<Extract<PromiseRequest, { kind: "schedule.create" }>> {
    const existing = this.#ws.schedule(request.id);
    if (existing !== null) return ok({ schedule: scheduleRecord(existing) });
    const row: PromiseScheduleRow = {
      id: request.id,
      cron: request.cron,
      promiseId: request.promiseId,
      promiseTimeout: request.promiseTimeout,
      promiseParam: normalizeValue(request.promiseParam),
      promiseTags: request.promiseTags ?? {},
      createdAt: this.#now,
      nextRunAt: request.nextRunAt,
      lastRunAt: null,
    };
    this.#ws.putSchedule(row);
    return ok({ schedule: scheduleRecord(row) });
  }

  /**
   * Fires a due schedule whose timer still reads `expectedNextRunAt` (compare-and-set: a
   * concurrent or repeated firing finds it moved and does nothing): creates the promise of the
   * occurrence (an existing one is left alone) and moves the timer to `nextRunAt`.
   */
  fireSchedule(id: string, expectedNextRunAt: Instant, nextRunAt: Instant): { readonly status: "fired"; readonly promiseId: string } | { readonly status: "stale" } {
    const schedule = this.#ws.schedule(id);
    if (schedule === null || schedule.nextRunAt !== expectedNextRunAt || expectedNextRunAt > this.#now) return { status: "stale" };
    const occurrence = schedule.nextRunAt;
    const promiseId = scheduledPromiseId(schedule, occurrence);
    this.createPromise({
      kind: "promise.create",
      id: promiseId,
      timeoutAt: occurrence + schedule.promiseTimeout,
      param: schedule.promiseParam,
      // The firing's promise is the root of its own call graph (as a client's `run` would be).
      tags: {
        ...schedule.promiseTags,
        [PROMISE_TAGS.origin]: promiseId,
        [PROMISE_TAGS.branch]: promiseId,
        [PROMISE_TAGS.parent]: promiseId,
        [PROMISE_TAGS.schedule]: schedule.id,
      },
    });
    this.#ws.putSchedule({ ...schedule, lastRunAt: occurrence, nextRunAt });
    return { status: "fired", promiseId };
  }

  // ---- timers ------------------------------------------------------------------------------

  /**
   * A task timer that fell due: re-checks it (a late or repeated firing changes nothing), then a
   * pending task is dispatched again and an expired lease returns the task to pending at the same
   * version, dispatched again.
   */
  taskTimer(id: string): "retried" | "expired" | "none" {
    this.#touchDeadline(id);
    const task = this.#ws.task(id);
    if (task === null || task.timerAt === null || task.timerAt > this.#now) return "none";
    if (task.state === "pending") {
      this.#dispatchAgain(task);
      return "retried";
    }
    if (task.state === "acquired") {
      this.#dispatchAgain({ ...task, state: "pending", pid: null, ttl: null });
      return "expired";
    }
    return "none";
  }

  // ---- the settlement chain ----------------------------------------------------------------

  /**
   * Makes a deadline permanent: a pending promise at or past its deadline is settled by it now
   * (`settledAt` = the deadline), with its whole chain. Every operation touches the promises it
   * reads first, so no answer ever shows pending after another showed settled.
   */
  touch(id: string): boolean {
    if (this.#touchDeadline(id)) return true;
    // A lease is over at exactly its end: a task acquired past it is pending again before anything
    // else reads it, so a late heartbeat or write never revives it (whenever the scan runs).
    const task = this.#ws.task(id);
    if (task !== null && task.state === "acquired" && task.timerAt !== null && this.#now >= task.timerAt) {
      this.#dispatchAgain({ ...task, state: "pending", pid: null, ttl: null });
    }
    return false;
  }

  #touchDeadline(id: string): boolean {
    const row = this.#ws.promise(id);
    if (row === null || row.state !== "pending" || this.#now < row.timeoutAt) return false;
    this.settle(row, timeoutState(row.tags), {}, row.timeoutAt);
    return true;
  }

  /**
   * Settles a pending promise and runs the chain in the same operation: its own task is fulfilled
   * (its timer, its own callbacks and its waiting `execute` dropped); each task awaiting it
   * resumes (a suspended one is dispatched, a running one gets a resume mark); each listener gets
   * an `unblock`.
   */
  settle(row: PromiseRow, state: SettleState | "rejected_timedout", value: PromiseValue, settledAt: Instant): PromiseRow {
    // The whole chain's rows at once: one load, not one per kind.
    this.#ws.need([
      { kind: "awaiters", promiseId: row.id },
      { kind: "listeners", promiseId: row.id },
    ]);
    const settled: PromiseRow = { ...row, state, value, settledAt };
    this.#ws.putPromise(settled);
    const task = this.#ws.task(row.id);
    if (task !== null && task.state !== "fulfilled") {
      this.#ws.putTask({ ...task, state: "fulfilled", resumes: 0, pid: null, ttl: null, timerAt: null });
      this.#ws.deleteCallbacksOf(row.id);
      this.#ws.dropExecute(row.id);
    }
    for (const awaiter of this.#ws.awaiters(row.id)) {
      // An awaiter past its own deadline is settled by it (and fulfilled), not dispatched again.
      if (awaiter !== row.id) this.#touchDeadline(awaiter);
      const awaiterTask = this.#ws.task(awaiter);
      const awaiterRow = this.#ws.promise(awaiter);
      if (awaiterTask !== null && awaiterRow !== null) this.wake(awaiterTask, awaiterRow);
    }
    this.#ws.deleteCallbacksOn(row.id);
    for (const address of this.#ws.listeners(row.id)) this.#ws.unblock(row.id, address, this.#now);
    this.#ws.deleteListeners(row.id);
    return settled;
  }

  /** What a settled awaited promise does to one awaiting task. */
  wake(task: TaskRow, promise: PromiseRow): void {
    if (task.state === "suspended") {
      // Parked on callbacks: dispatched again at its version; its other callbacks stay, and
      // resume marks it if they settle before it suspends again.
      this.#ws.putTask({ ...task, state: "pending", resumes: task.resumes + 1, timerAt: this.#now + this.#settings.retryTimeoutMs });
      const target = promise.tags[PROMISE_TAGS.target];
      if (target !== undefined) this.#ws.execute(task.id, task.version, target, this.#now);
    } else if (task.state !== "fulfilled") {
      this.#ws.putTask({ ...task, resumes: task.resumes + 1 });
    }
  }
}

/** The `resonate:delay` instant of a promise's tags, or `null`. */
export function delayOf(tags: Readonly<Record<string, string>>): Instant | null {
  const text = tags[PROMISE_TAGS.delay];
  if (text === undefined || !/^\d+$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

// ---- what each operation loads first --------------------------------------------------------

/**
 * The rows an operation almost surely reads, loaded before its first run so most operations need
 * one load. Anything else it reads is loaded on demand (a `RowsNeeded` and a rerun).
 */
export function prefetch(request: PromiseRequest): RowKey[] {
  const promise = (id: string): RowKey => ({ kind: "promise", id });
  const chain = (id: string): RowKey[] => [promise(id), { kind: "awaiters", promiseId: id }, { kind: "listeners", promiseId: id }];
  switch (request.kind) {
    case "task.acquire":
      // An acquire answers with the branch's preload: load it with the task.
      return [promise(request.id), { kind: "branchOf", id: request.id }];
    case "promise.get":
    case "promise.create":
    case "task.get":
    case "task.release":
    case "task.halt":
    case "task.continue":
      return [promise(request.id)];
    case "promise.settle":
      return chain(request.id);
    case "promise.register_callback":
      return [promise(request.awaited), promise(request.awaiter)];
    case "promise.register_listener":
      return [promise(request.awaited)];
    case "task.create":
      return [promise(request.action.id), { kind: "branchOf", id: request.action.id }];
    case "task.fulfill":
      return chain(request.id);
    case "task.suspend":
      return [promise(request.id), ...request.actions.map((a) => promise(a.awaited))];
    case "task.fence":
      return [promise(request.id), ...(request.action.kind === "promise.settle" ? chain(request.action.id) : [promise(request.action.id)])];
    case "task.heartbeat":
      return request.tasks.map((t) => promise(t.id));
    case "schedule.get":
    case "schedule.create":
    case "schedule.delete":
      return [{ kind: "schedule", id: request.id }];
    case "promise.search":
    case "task.search":
    case "schedule.search":
      return [];
  }
}

/** Whether `request` works on rows by key (every kind but the searches). */
export function isKeyed(request: PromiseRequest): boolean {
  return request.kind !== "promise.search" && request.kind !== "task.search" && request.kind !== "schedule.search";
}
