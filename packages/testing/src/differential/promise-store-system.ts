import type { Instant, PromiseRequest, PromiseSnapshot, PromiseStore } from "@belay/contract";
import { type ProtocolAnswer, type ProtocolSnapshot, type ProtocolSystem, type WireRequest, byKey } from "./protocol-system.js";

/** The next occurrence of `cron` strictly after `after` (epoch ms); throws for a malformed cron. */
export type NextOccurrence = (cron: string, after: Instant) => Instant;

/** Options of {@link promiseStoreSystem}. */
export interface PromiseStoreSystemOptions {
  /** A short name for messages. Default the store's capability name. */
  readonly name?: string;
  /**
   * Calendar maths, which the store takes from its caller: a new schedule's first run and each
   * firing's next one. Use the same cron library as the oracle.
   */
  readonly nextOccurrence: NextOccurrence;
  /** Most timers and schedules one tick handles. Default 100,000 (everything, in a test). */
  readonly scanLimit?: number;
}

function flat(action: unknown): Record<string, unknown> {
  const { kind, data } = action as WireRequest;
  return { kind, ...data };
}

/** A wire request as the store's flat request; a schedule's first run computed at `now`. */
function storeRequest(request: WireRequest, now: Instant, nextOccurrence: NextOccurrence): PromiseRequest {
  const out: Record<string, unknown> = { kind: request.kind, ...request.data };
  const { action, actions } = request.data;
  if (action !== undefined) out["action"] = flat(action);
  if (Array.isArray(actions)) out["actions"] = actions.map(flat);
  if (request.kind === "schedule.create") out["nextRunAt"] = nextOccurrence(String(request.data["cron"]), now);
  return out as unknown as PromiseRequest;
}

type StoreAnswer = { status: number; data?: unknown; error?: string; kind?: string };

function answer(response: StoreAnswer): ProtocolAnswer {
  if (response.error !== undefined) return { status: response.status, data: response.error };
  const data = response.data as { action?: StoreAnswer } | undefined;
  if (data?.action !== undefined && typeof data.action === "object") {
    // A fenced action's answer nests as the protocol nests it: { kind, status, data }.
    const { kind, ...inner } = data.action;
    return { status: response.status, data: { ...data, action: { kind, ...answer(inner) } } };
  }
  return { status: response.status, data: response.data };
}

/** A Belay snapshot in the comparison's normal form. */
export function normalPromiseSnapshot(snapshot: PromiseSnapshot): ProtocolSnapshot {
  const pair = (a: string, b: string) => `${a}\u0000${b}`;
  return ({
    promises: [...snapshot.promises].sort(byKey((p) => p.id)) as unknown as Record<string, unknown>[],
    tasks: [...snapshot.tasks].sort(byKey((t) => t.id)),
    callbacks: snapshot.callbacks.map(({ awaited, awaiter }) => ({ awaited, awaiter })).sort(byKey((c) => pair(c.awaited, c.awaiter))),
    listeners: snapshot.listeners.map(({ promiseId, address }) => ({ promise: promiseId, address })).sort(byKey((l) => pair(l.promise, l.address))),
    schedules: [...snapshot.schedules].sort(byKey((s) => s.id)) as unknown as Record<string, unknown>[],
    messages: snapshot.outbox
      .map(({ kind, id, address, version }) => (kind === "execute" ? { kind, id, address, version } : { kind, id, address }))
      .sort(byKey((m) => `${m.kind}\u0000${m.id}\u0000${m.address}`)),
    promiseTimers: [...snapshot.timers.promises].sort(byKey((t) => t.id)),
    taskTimers: [...snapshot.timers.tasks].sort(byKey((t) => t.id)),
  });
}

/**
 * A Belay `PromiseStore` as a differential run's system: wire requests become the store's flat
 * requests (`handle`), a rejected one (`InvalidInputError`) answers 400, and a tick is the
 * store's timeout scan (`expireTimers`) followed by one firing of each due schedule
 * (`dueSchedules`, `fireSchedules`), as a server's loops would run them.
 *
 * @example
 * ```ts
 * const system = promiseStoreSystem(new MemoryPromiseStore(), { nextOccurrence });
 * const { status, data } = await system.send({ kind: "promise.get", data: { id: "root" } }, now);
 * ```
 */
export function promiseStoreSystem(store: PromiseStore, options: PromiseStoreSystemOptions): ProtocolSystem {
  const max = options.scanLimit ?? 100_000;
  return {
    name: options.name ?? store.capabilities.name,
    async send(request, now) {
      let converted: PromiseRequest;
      try {
        converted = storeRequest(request, now, options.nextOccurrence);
      } catch (error) {
        return { status: 400, data: `invalid cron: ${(error as Error).message}` };
      }
      try {
        return answer((await store.handle(converted, now)) as StoreAnswer);
      } catch (error) {
        if ((error as { code?: unknown }).code === "BELAY_INVALID_INPUT") return { status: 400, data: (error as Error).message };
        throw error;
      }
    },
    async tick(now) {
      await store.expireTimers({ now, max });
      const due = await store.dueSchedules({ now, max });
      if (due.length === 0) return;
      await store.fireSchedules({
        now,
        firings: due.map((s) => ({ id: s.id, expectedNextRunAt: s.nextRunAt, nextRunAt: options.nextOccurrence(s.cron, s.nextRunAt) })),
      });
    },
    async snapshot(now) {
      return normalPromiseSnapshot(await store.snapshot(now));
    },
  };
}
