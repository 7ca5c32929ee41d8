import type { Instant, PromiseRecord, PromiseRequest, PromiseSnapshot, TaskState, TimerScanResult } from "@belay/contract";
import type { ViolationLog } from "../violations.js";

interface TaskView {
  readonly state: TaskState;
  readonly version: number;
  readonly pid: string | null;
  readonly timerAt: Instant | null;
}

/** A request a caller made in this step, with the answer the store gave (before any fault on the way back). */
export interface PerformedRequest {
  readonly request: PromiseRequest;
  readonly now: Instant;
  readonly status: number;
  readonly data: unknown;
}

const FENCED = new Set(["task.fulfill", "task.suspend", "task.fence", "task.release"]);

const settledText = (p: PromiseRecord) => JSON.stringify([p.state, p.value, p.settledAt ?? null]);

/**
 * The promise half's oracles, over the store's snapshot after every step and the requests the
 * step performed: settlement is write-once (also against every settled view an answer showed);
 * versions rise only by an acquire, by one, and stale-version writes are refused; a suspended
 * task never waits on a settled promise; a pending task always has its retry timer; after a
 * complete timer scan at t, nothing is due at or before t.
 */
export class PromiseOracles {
  readonly #log: ViolationLog;
  /** The first settled record seen of each promise (stored, or shown by an answer). */
  readonly #settled = new Map<string, { state: string; settledAt: number | null; value: unknown; valueText: string; from: string }>();
  #tasks = new Map<string, TaskView>();
  /** The promises each task last suspended on. */
  readonly #awaiting = new Map<string, readonly string[]>();
  #step: PerformedRequest[] = [];
  #scans: { now: Instant; result: TimerScanResult }[] = [];
  /** Stored promises still pending and tasks not fulfilled (liveness). */
  pendingPromises = 0;
  openTasks = 0;
  lastScanAt: Instant | null = null;

  constructor(log: ViolationLog) {
    this.#log = log;
  }

  recordRequest(performed: PerformedRequest): void {
    this.#step.push(performed);
    const { request, status, data } = performed;
    // Every settled record an answer shows must be the one the store keeps.
    for (const record of recordsIn(data)) if (record.state !== "pending") this.#settledRecord(record, `the answer to ${request.kind}`);
    if (request.kind === "task.suspend" && status === 200) this.#awaiting.set(request.id, request.actions.map((a) => a.awaited));
  }

  recordScan(now: Instant, result: TimerScanResult): void {
    this.#scans.push({ now, result });
  }

  #settledRecord(record: PromiseRecord, from: string): void {
    const settledAt = record.settledAt ?? null;
    const known = this.#settled.get(record.id);
    if (known === undefined) {
      this.#settled.set(record.id, { state: record.state, settledAt, value: record.value, valueText: JSON.stringify(record.value), from });
      return;
    }
    // Every step reads every settled promise: compare the cheap fields first, the value's text
    // only when the store handed out another object for it.
    if (known.state === record.state && known.settledAt === settledAt) {
      if (known.value === record.value) return;
      if (known.valueText === JSON.stringify(record.value)) {
        known.value = record.value;
        return;
      }
    }
    const was = JSON.stringify([known.state, JSON.parse(known.valueText), known.settledAt]);
    this.#log.report("settlementWriteOnce", `promise ${record.id} was settled as ${was} (${known.from}) and now reads ${settledText(record)} (${from})`);
  }

  /** The store after the step. */
  onSnapshot(snapshot: PromiseSnapshot): void {
    const timers = new Map(snapshot.timers.tasks.map((t) => [t.id, t.at]));
    const next = new Map<string, TaskView>();
    for (const task of snapshot.tasks) next.set(task.id, { state: task.state, version: task.version, pid: task.pid ?? null, timerAt: timers.get(task.id) ?? null });
    const stored = new Map(snapshot.promises.map((p) => [p.id, p]));
    let pending = 0;
    for (const promise of snapshot.promises) {
      if (promise.state === "pending") {
        pending++;
        if (this.#settled.has(promise.id)) this.#log.report("settlementWriteOnce", `promise ${promise.id} was settled and is pending again`);
      } else this.#settledRecord(promise, "the store");
    }
    this.pendingPromises = pending;
    this.#checkVersions(next);
    let open = 0;
    for (const [id, task] of next) {
      if (task.state !== "fulfilled") open++;
      if (task.state === "pending" && task.timerAt === null) {
        this.#log.report("executeNotLost", `task ${id} is pending at version ${task.version} without a retry timer: its execute can be lost for good`);
      }
      if (task.state === "suspended") {
        const awaited = this.#awaiting.get(id) ?? [];
        const settled = awaited.find((a) => stored.get(a)?.state !== undefined && stored.get(a)!.state !== "pending");
        if (settled !== undefined) this.#log.report("awaiterWoken", `task ${id} is still suspended although ${settled}, which it awaits, has settled`);
        else if (!snapshot.callbacks.some((c) => c.awaiter === id)) this.#log.report("awaiterWoken", `task ${id} is suspended with no callback left: nothing will ever wake it`);
      }
    }
    this.openTasks = open;
    for (const { now, result } of this.#scans) {
      this.lastScanAt = now;
      if (result.more) continue;
      const late = snapshot.timers.promises.find((t) => t.at <= now);
      if (late !== undefined) this.#log.report("deadlineFires", `promise ${late.id} is still pending after a complete timer scan at ${now}, past its deadline ${late.at}`);
      const lateTask = snapshot.timers.tasks.find((t) => t.at <= now);
      if (lateTask !== undefined) this.#log.report("deadlineFires", `task ${lateTask.id}'s timer (${lateTask.at}) is still armed after a complete timer scan at ${now}`);
    }
    this.#tasks = next;
    this.#step = [];
    this.#scans = [];
  }

  #checkVersions(next: ReadonlyMap<string, TaskView>): void {
    const acquired = new Map<string, number>();
    for (const { request, status, data } of this.#step) {
      if (request.kind === "task.acquire" && status === 200) {
        acquired.set(request.id, (acquired.get(request.id) ?? 0) + 1);
        const version = (data as { task?: { version?: number } }).task?.version;
        const before = this.#tasks.get(request.id);
        if (before !== undefined && version !== before.version + 1) {
          this.#log.report("versionFence", `task ${request.id} was acquired at version ${version} from version ${before.version}`);
        }
      }
    }
    for (const [id, task] of next) {
      const before = this.#tasks.get(id);
      if (before === undefined) continue;
      const rise = task.version - before.version;
      if (rise < 0) this.#log.report("versionFence", `task ${id}'s version fell from ${before.version} to ${task.version}`);
      else if (rise !== (acquired.get(id) ?? 0)) {
        this.#log.report("versionFence", `task ${id}'s version went from ${before.version} to ${task.version} with ${acquired.get(id) ?? 0} acquire(s)`);
      }
    }
    for (const { request, status, now } of this.#step) {
      if (FENCED.has(request.kind) && (status === 200 || status === 300)) {
        const { id, version } = request as { id: string; version: number };
        const before = this.#tasks.get(id);
        if (before !== undefined && (before.state !== "acquired" || before.version !== version || (before.timerAt !== null && before.timerAt <= now))) {
          this.#log.report(
            "versionFence",
            `${request.kind} of task ${id} at version ${version} was accepted while the task was ${before.state} at version ${before.version}${before.timerAt !== null && before.timerAt <= now ? " with its lease over" : ""}`,
          );
        }
      }
      if (request.kind === "task.heartbeat") {
        for (const { id, version } of request.tasks) {
          const before = this.#tasks.get(id);
          const after = next.get(id);
          if (before === undefined || after === undefined || after.timerAt === before.timerAt || after.state !== "acquired") continue;
          if (before.pid !== request.pid || before.version !== version) {
            this.#log.report("versionFence", `a heartbeat from ${request.pid} at version ${version} renewed task ${id}, held by ${before.pid} at version ${before.version}`);
          }
        }
      }
    }
  }

  /** Task ids whose state (as of the last snapshot) passes `test`, in id order. */
  taskIds(test: (state: TaskState) => boolean): string[] {
    return [...this.#tasks].filter(([, t]) => test(t.state)).map(([id]) => id);
  }

  /** Tasks not fulfilled (for the liveness report). */
  openTaskIds(): string[] {
    return [...this.#tasks].filter(([, t]) => t.state !== "fulfilled").map(([id, t]) => `${id} (${t.state} v${t.version})`);
  }
}

/** Every promise record inside an answer's data (promise, preload, fenced action). */
function recordsIn(data: unknown): PromiseRecord[] {
  if (typeof data !== "object" || data === null) return [];
  const out: PromiseRecord[] = [];
  const d = data as { promise?: PromiseRecord; preload?: PromiseRecord[]; action?: { data?: unknown } };
  if (d.promise && typeof d.promise.id === "string") out.push(d.promise);
  if (Array.isArray(d.preload)) out.push(...d.preload);
  if (d.action && typeof d.action === "object") out.push(...recordsIn(d.action.data));
  return out;
}
