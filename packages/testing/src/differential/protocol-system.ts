import type { Instant } from "@belay/contract";

// What a differential run talks to: a system that takes the protocol's requests ("2026-04-01")
// in their wire form and answers in a normal form both sides can be compared in. The oracle and
// the system under test are each one of these; neither is imported here.

/**
 * A protocol request as it travels: its `kind` and `data`, nested actions (`task.create`,
 * `task.fence`, `task.fulfill`, `task.suspend`) in the same `{ kind, data }` form. The head
 * (correlation id, version, auth) is the adapter's to add.
 */
export interface WireRequest {
  readonly kind: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/**
 * An answer in normal form: the status and the data, nothing of the envelope. An error's data is
 * its message. A fenced action's answer is nested as `{ kind, status, data }`.
 */
export interface ProtocolAnswer {
  readonly status: number;
  readonly data: unknown;
}

/** A task as a snapshot shows it; `resumes` as the system sends it (a count, or the SDK's list). */
export interface SnapshotTask {
  readonly id: string;
  readonly state: string;
  readonly version: number;
  readonly resumes: unknown;
  readonly pid?: string;
  readonly ttl?: number;
}

/** An outbox message as a snapshot shows it: `version` only on an `execute`. */
export interface SnapshotMessage {
  readonly kind: "execute" | "unblock";
  readonly id: string;
  readonly address: string;
  readonly version?: number;
}

/** Everything a system holds, in normal form: each list sorted by its key. */
export interface ProtocolSnapshot {
  /** The stored records (no timed-out view). */
  readonly promises: readonly Record<string, unknown>[];
  readonly tasks: readonly SnapshotTask[];
  readonly callbacks: readonly { readonly awaited: string; readonly awaiter: string }[];
  readonly listeners: readonly { readonly promise: string; readonly address: string }[];
  readonly schedules: readonly Record<string, unknown>[];
  readonly messages: readonly SnapshotMessage[];
  /** Armed promise deadlines. */
  readonly promiseTimers: readonly { readonly id: string; readonly at: Instant }[];
  /** Armed task timers (retry while pending, lease while acquired). */
  readonly taskTimers: readonly { readonly id: string; readonly at: Instant }[];
}

/** A system a differential run drives: the oracle or the system under test. */
export interface ProtocolSystem {
  /** A short name for messages. */
  readonly name: string;
  /** Runs one request at `now`. A malformed request answers 400; it never throws for one. */
  send(request: WireRequest, now: Instant): Promise<ProtocolAnswer>;
  /** One timer scan at `now`: due deadlines, retries and leases, then one firing of each due schedule. */
  tick(now: Instant): Promise<void>;
  snapshot(now: Instant): Promise<ProtocolSnapshot>;
}

// ---- comparing ------------------------------------------------------------------------------

/** JSON text with object keys sorted and `undefined` dropped: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : sortKeys(item)));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) out[key] = sortKeys(item);
  }
  return out;
}

/** Whether `a` and `b` are equal as JSON data: key order and `undefined` fields do not count. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] ?? null, other[i] ?? null)) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let defined = 0;
  for (const key in x) {
    if (x[key] === undefined) continue;
    defined++;
    if (!sameJson(x[key], y[key])) return false;
  }
  for (const key in y) if (y[key] !== undefined) defined--;
  return defined === 0;
}

/** Compares by a string key, for sorting snapshot lists. */
export function byKey<T>(key: (item: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
}
