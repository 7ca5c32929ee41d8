import { CapabilityNotSupportedError, InvalidInputError } from "../errors.js";
import { requireArray, requireInstant, requireInteger } from "../input.js";
import type { MigrateResult, StepHook } from "../job-store.js";
import type { Instant } from "../job.js";
import { MAX_DURATION_MS } from "../text.js";
import { type PromiseBounds, assertPromiseRequest, resolvePromiseBounds } from "./checks.js";
import { DEFAULT_PROMISE_SETTINGS, PromiseMachine, type PromiseSettings, prefetch, promiseRecord, scheduleRecord, taskRecord } from "./machine.js";
import type {
  OutboxDelivery, PromiseBackend, PromiseSnapshot, PromiseStore, PromiseStoreCapabilities, OutboxRef, PromiseDetail,
  PromiseTransaction, ScheduleFiring, TimerScanResult,
} from "./promise-store.js";
import type { PromiseRecord, PromiseState, TaskState } from "./records.js";
import type { PromiseRequest, PromiseResponse, PromiseSearchRequest, ScheduleSearchRequest, TaskSearchRequest } from "./requests.js";
import { type OutboxFilter, type OutboxRow, type PromiseRow, type RowKey, noEffects } from "./rows.js";
import { LoadedCache, RowsNeeded, Workspace } from "./workspace.js";

/** A guard against a machine that keeps asking for rows it was given: far above any real operation's loads. */
const MAX_LOADS = 1_000;

/** Options of the promise front. */
export interface PromiseFrontOptions {
  readonly bounds?: Partial<PromiseBounds>;
  readonly settings?: Partial<PromiseSettings>;
}

/** Resolved settings: the defaults overridden, each checked. */
export function resolvePromiseSettings(overrides: Partial<PromiseSettings> = {}): Readonly<PromiseSettings> {
  const settings = { ...DEFAULT_PROMISE_SETTINGS, ...overrides };
  requireInteger(settings.retryTimeoutMs, "promiseSettings.retryTimeoutMs", 1, MAX_DURATION_MS);
  requireInteger(settings.preloadLimit, "promiseSettings.preloadLimit", 0, 1_000_000);
  return Object.freeze(settings);
}

/**
 * Runs an operation in a transaction: loads what the machine prefetches, runs it, loads what it
 * asks for and runs it again until it decides, then writes its effects — all in one transaction.
 */
async function runInTransaction<T>(
  tx: PromiseTransaction,
  initial: readonly RowKey[],
  decide: (machine: PromiseMachine, ws: Workspace) => T,
  now: Instant,
  settings: PromiseSettings,
): Promise<T> {
  const cache = new LoadedCache();
  let keys: readonly RowKey[] = initial;
  for (let loads = 0; ; loads++) {
    const missing = cache.missing(keys);
    if (missing.length > 0) {
      if (loads > MAX_LOADS) throw new Error(`promise machine: more than ${MAX_LOADS} loads in one operation`);
      cache.add(missing, await tx.load(missing));
      await tx.step("rows loaded");
    }
    const ws = new Workspace(cache);
    let result: T;
    try {
      result = decide(new PromiseMachine(ws, now, settings), ws);
    } catch (error) {
      if (!(error instanceof RowsNeeded)) throw error;
      if (cache.missing(error.keys).length === 0) throw new Error(`promise machine: asked again for loaded rows (${error.message})`);
      keys = error.keys;
      continue;
    }
    const effects = ws.effects();
    if (!noEffects(effects)) {
      await tx.apply(effects);
      await tx.step("effects written");
    }
    return result;
  }
}

/** A stored row as a record, without the timed-out view (for snapshots). */
function storedRecord(row: PromiseRow): PromiseRecord {
  const base = { id: row.id, state: row.state, param: row.param, value: row.value, tags: row.tags, timeoutAt: row.timeoutAt, createdAt: row.createdAt };
  return row.settledAt === null ? base : { ...base, settledAt: row.settledAt };
}

function outboxKey(row: Pick<OutboxRow, "kind" | "id">): string {
  return `${row.kind}:${row.id}`;
}

/** The rows that deliveries (from `takeOutbox`) name, checked. */
function outboxRefs(deliveries: unknown): OutboxRef[] {
  return requireArray<Pick<OutboxDelivery, "key" | "address" | "token">>(deliveries, "deliveries").map((d, i) => {
    const match = typeof d?.key === "string" ? /^(execute|unblock):(.+)$/s.exec(d.key) : null;
    if (match === null) throw new InvalidInputError(`deliveries[${i}].key`, "must be a key from takeOutbox");
    if (typeof d.address !== "string") throw new InvalidInputError(`deliveries[${i}].address`, "must be a string");
    requireInteger(d.token, `deliveries[${i}].token`, 0, Number.MAX_SAFE_INTEGER);
    return { kind: match[1] as "execute" | "unblock", id: match[2]!, address: d.address, revision: d.token };
  });
}

function checkedFilter(filter: unknown): OutboxFilter | null {
  if (filter === null) return null;
  if (typeof filter !== "object") throw new InvalidInputError("filter", "must be { addresses, prefixes } or null");
  const { addresses, prefixes } = filter as Record<string, unknown>;
  for (const [field, list] of [["filter.addresses", addresses], ["filter.prefixes", prefixes]] as const) {
    for (const [i, item] of requireArray<unknown>(list, field).entries()) {
      if (typeof item !== "string" || item.length === 0) throw new InvalidInputError(`${field}[${i}]`, "must be a non-empty string");
    }
  }
  return { addresses: addresses as string[], prefixes: prefixes as string[] };
}

/**
 * The checked front of every promise store: each request is checked (`assertPromiseRequest`),
 * then decided by the contract's `PromiseMachine` over rows the store's {@link PromiseBackend}
 * loads and writes in one transaction. A store implements the backend only.
 */
export class CheckedPromiseStore implements PromiseStore {
  readonly capabilities: PromiseStoreCapabilities;
  protected readonly backend: PromiseBackend;

  constructor(backend: PromiseBackend, options: PromiseFrontOptions = {}) {
    this.backend = backend;
    this.capabilities = Object.freeze({
      name: backend.name,
      bounds: resolvePromiseBounds(options.bounds),
      settings: resolvePromiseSettings(options.settings),
      stepHook: backend.stepHook,
    });
  }

  async migrate(): Promise<MigrateResult> {
    return this.backend.migrate();
  }

  async close(): Promise<void> {
    await this.backend.close();
  }

  async handle<R extends PromiseRequest>(request: R, now: Instant): Promise<PromiseResponse<R>> {
    requireInstant(now, "now");
    assertPromiseRequest(request, this.capabilities.bounds);
    switch (request.kind) {
      case "promise.search":
        return (await this.#promisePage(request, now)) as PromiseResponse<R>;
      case "task.search":
        return (await this.#taskPage(request, now)) as PromiseResponse<R>;
      case "schedule.search":
        return (await this.#schedulePage(request)) as PromiseResponse<R>;
      default:
        return this.backend.transact(request.kind, (tx) =>
          runInTransaction(tx, prefetch(request), (machine) => machine.run(request), now, this.capabilities.settings),
        );
    }
  }

  async expireTimers(request: { readonly now: Instant; readonly max: number }): Promise<TimerScanResult> {
    requireInstant(request?.now, "now");
    requireInteger(request.max, "max", 1, 100_000);
    const { now, max } = request;
    return this.backend.transact("expireTimers", async (tx) => {
      const due = await tx.dueTimers(now, max);
      const keys: RowKey[] = [...due.promises, ...due.tasks].map((id) => ({ kind: "promise", id }));
      for (const id of due.promises) keys.push({ kind: "awaiters", promiseId: id }, { kind: "listeners", promiseId: id });
      return runInTransaction(
        tx,
        keys,
        (machine) => {
          const result = { promisesTimedOut: 0, tasksRetried: 0, leasesExpired: 0, more: due.promises.length >= max || due.tasks.length >= max };
          for (const id of due.promises) if (machine.touch(id)) result.promisesTimedOut++;
          for (const id of due.tasks) {
            const fired = machine.taskTimer(id);
            if (fired === "retried") result.tasksRetried++;
            else if (fired === "expired") result.leasesExpired++;
          }
          return result;
        },
        now,
        this.capabilities.settings,
      );
    });
  }

  async dueSchedules(request: { readonly now: Instant; readonly max: number }) {
    requireInstant(request?.now, "now");
    requireInteger(request.max, "max", 1, 100_000);
    const rows = await this.backend.read((reader) => reader.dueSchedules(request.now, request.max));
    return rows.map(scheduleRecord);
  }

  async fireSchedules(request: { readonly firings: readonly ScheduleFiring[]; readonly now: Instant }) {
    requireInstant(request?.now, "now");
    const firings = requireArray<ScheduleFiring>(request.firings, "firings");
    for (const [i, firing] of firings.entries()) {
      if (typeof firing?.id !== "string" || firing.id.length === 0) throw new InvalidInputError(`firings[${i}].id`, "must be a schedule id");
      requireInstant(firing.expectedNextRunAt, `firings[${i}].expectedNextRunAt`);
      requireInstant(firing.nextRunAt, `firings[${i}].nextRunAt`);
      if (firing.nextRunAt <= firing.expectedNextRunAt) throw new InvalidInputError(`firings[${i}].nextRunAt`, "must be after expectedNextRunAt");
    }
    if (firings.length === 0) return [];
    return this.backend.transact("fireSchedules", (tx) =>
      runInTransaction(
        tx,
        firings.map((f) => ({ kind: "schedule", id: f.id })),
        (machine) => firings.map((f) => ({ id: f.id, ...machine.fireSchedule(f.id, f.expectedNextRunAt, f.nextRunAt) })),
        request.now,
        this.capabilities.settings,
      ),
    );
  }

  async takeOutbox(request: { readonly now: Instant; readonly max: number; readonly leaseMs: number; readonly filter?: OutboxFilter | null }): Promise<readonly OutboxDelivery[]> {
    requireInstant(request?.now, "now");
    requireInteger(request.max, "max", 1, 100_000);
    requireInteger(request.leaseMs, "leaseMs", 1, MAX_DURATION_MS);
    const filter = checkedFilter(request.filter ?? null);
    const { now } = request;
    return this.backend.transact("takeOutbox", async (tx) => {
      const rows = await tx.takeOutbox(now, request.max, now + request.leaseMs, filter);
      const unknown = [...new Set(rows.filter((row) => row.kind === "unblock" && row.promise === undefined).map((row) => row.id))];
      const loaded = unknown.length === 0 ? [] : (await tx.load(unknown.map((id) => ({ kind: "promise", id })))).promises;
      const promises = new Map<string, PromiseRow | null>(loaded.map((entry) => [entry.id, entry.promise]));
      const deliveries: OutboxDelivery[] = [];
      const orphans: OutboxRef[] = [];
      for (const row of rows) {
        const base = { key: outboxKey(row), address: row.address, token: row.revision, createdAt: row.createdAt, takes: row.takes };
        if (row.kind === "execute") {
          deliveries.push({ ...base, message: { kind: "execute", data: { task: { id: row.id, version: row.version } } } });
          continue;
        }
        const promise = row.promise !== undefined ? row.promise : (promises.get(row.id) ?? null);
        // A settled promise gone (a reset, a purge): nothing left to tell; drop the message.
        if (promise === null) orphans.push(row);
        else deliveries.push({ ...base, message: { kind: "unblock", data: { promise: promiseRecord(promise, now) } } });
      }
      if (orphans.length > 0) await tx.acknowledgeOutbox(orphans);
      return deliveries;
    });
  }

  async acknowledgeOutbox(request: { readonly deliveries: readonly Pick<OutboxDelivery, "key" | "address" | "token">[] }): Promise<void> {
    const rows = outboxRefs(request?.deliveries);
    if (rows.length === 0) return;
    await this.backend.transact("acknowledgeOutbox", (tx) => tx.acknowledgeOutbox(rows));
  }

  async releaseOutbox(request: { readonly deliveries: readonly Pick<OutboxDelivery, "key" | "address" | "token">[]; readonly now: Instant }): Promise<void> {
    requireInstant(request?.now, "now");
    const rows = outboxRefs(request.deliveries);
    if (rows.length === 0) return;
    await this.backend.transact("releaseOutbox", (tx) => tx.releaseOutbox(rows, request.now));
  }

  subscribeOutbox(listener: () => void): () => void {
    if (typeof listener !== "function") throw new TypeError("subscribeOutbox needs a listener function");
    return this.backend.subscribeOutbox(listener);
  }

  async ping(): Promise<void> {
    await this.backend.ping();
  }

  async reset(): Promise<void> {
    await this.backend.transact("reset", (tx) => tx.reset());
  }

  async snapshot(now: Instant): Promise<PromiseSnapshot> {
    requireInstant(now, "now");
    const rows = await this.backend.read((reader) => reader.everything());
    const byId = <T extends { id: string }>(list: readonly T[]) => [...list].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return {
      promises: byId(rows.promises).map(storedRecord),
      tasks: byId(rows.tasks).map((task) => taskRecord(task, null, now)),
      callbacks: [...rows.callbacks].sort((a, b) => (a.awaited + "\u0000" + a.awaiter < b.awaited + "\u0000" + b.awaiter ? -1 : 1)),
      listeners: [...rows.listeners].sort((a, b) => (a.promiseId + "\u0000" + a.address < b.promiseId + "\u0000" + b.address ? -1 : 1)),
      schedules: byId(rows.schedules).map(scheduleRecord),
      outbox: [...rows.outbox]
        .map(({ kind, id, address, version, availableAt }) => ({ kind, id, address, version, availableAt }))
        .sort((a, b) => (`${a.kind}:${a.id}:${a.address}` < `${b.kind}:${b.id}:${b.address}` ? -1 : 1)),
      timers: {
        promises: byId(rows.promises.filter((row) => row.state === "pending")).map((row) => ({ id: row.id, at: row.timeoutAt })),
        tasks: byId(rows.tasks.filter((row) => row.timerAt !== null)).map((row) => ({ id: row.id, at: row.timerAt! })),
      },
    };
  }

  async describePromise(id: string, now: Instant): Promise<PromiseDetail | null> {
    requireInstant(now, "now");
    if (typeof id !== "string" || id.length === 0) throw new InvalidInputError("id", "must be a non-empty string");
    const rows = await this.backend.read((reader) => reader.describe(id));
    if (rows === null) return null;
    const sorted = (list: readonly string[]) => [...list].sort();
    return {
      promise: promiseRecord(rows.promise, now),
      task: rows.task === null ? null : taskRecord(rows.task, rows.promise, now),
      taskTimerAt: rows.task?.timerAt ?? null,
      awaiters: sorted(rows.awaiters),
      awaiting: sorted(rows.awaiting),
      listeners: sorted(rows.listeners),
      messages: rows.outbox.map(({ kind, address, version, availableAt, createdAt, takes }) => ({ kind, address, version, availableAt, createdAt, takes })),
    };
  }

  setStepHook(hook: StepHook | null): void {
    if (!this.backend.stepHook || this.backend.setStepHook === undefined) throw new CapabilityNotSupportedError(this.backend.name, "stepHook");
    this.backend.setStepHook(hook);
  }

  // ---- pages -------------------------------------------------------------------------------

  async #promisePage(request: PromiseSearchRequest, now: Instant): Promise<PromiseResponse<PromiseSearchRequest>> {
    const limit = request.limit ?? 100;
    const state = request.state;
    // A pending promise past its deadline reads as settled by it: search on what a reader sees.
    const expiredBy = state === undefined || state === "resolved" || state === "rejected_timedout" ? now : null;
    const states: PromiseState[] | null = state === undefined ? null : [state];
    const rows = await this.backend.read((reader) =>
      reader.promisePage({ after: request.cursor ?? null, prefix: request.prefix ?? null, tags: request.tags ?? {}, states, expiredBy, limit: limit + 1 }),
    );
    const considered = rows.slice(0, limit);
    const promises = considered.map((row) => promiseRecord(row, now)).filter((record) => state === undefined || record.state === state);
    const cursor = rows.length > limit ? considered.at(-1)!.id : undefined;
    return { status: 200, data: cursor === undefined ? { promises } : { promises, cursor } };
  }

  async #taskPage(request: TaskSearchRequest, now: Instant): Promise<PromiseResponse<TaskSearchRequest>> {
    const limit = request.limit ?? 100;
    const state = request.state;
    const states: TaskState[] | null = state === undefined ? null : [state];
    const rows = await this.backend.read((reader) => reader.taskPage({ after: request.cursor ?? null, states, now, limit: limit + 1 }));
    const considered = rows.slice(0, limit);
    const tasks = considered.map(({ task, promise }) => taskRecord(task, promise, now)).filter((record) => state === undefined || record.state === state);
    const cursor = rows.length > limit ? considered.at(-1)!.task.id : undefined;
    return { status: 200, data: cursor === undefined ? { tasks } : { tasks, cursor } };
  }

  async #schedulePage(request: ScheduleSearchRequest): Promise<PromiseResponse<ScheduleSearchRequest>> {
    const limit = request.limit ?? 10;
    const rows = await this.backend.read((reader) => reader.schedulePage({ after: request.cursor ?? null, tags: request.tags ?? {}, limit: limit + 1 }));
    const considered = rows.slice(0, limit);
    const cursor = rows.length > limit ? considered.at(-1)!.id : undefined;
    const schedules = considered.map(scheduleRecord);
    return { status: 200, data: cursor === undefined ? { schedules } : { schedules, cursor } };
  }
}

/** The checked front over `backend`. */
export function checkedPromiseStore(backend: PromiseBackend, options: PromiseFrontOptions = {}): PromiseStore {
  return new CheckedPromiseStore(backend, options);
}
