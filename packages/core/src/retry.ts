import { type Instant, type RetryDisposition, InvalidInputError, seededUnit } from "@belay/contract";

/**
 * How a job type retries. Data, so a store can apply it to expired leases without calling back.
 */
export interface RetryPolicy {
  /** Counted attempts before the job is dead-lettered. Default 10; 1..1000. */
  readonly maxAttempts: number;
  /**
   * Delay after each failed attempt, in milliseconds: `delaysMs[n - 1]` follows attempt `n`, the
   * last entry repeats. Default `min(2^n, 300)` seconds.
   */
  readonly delaysMs: readonly number[];
  /**
   * Spread each delay by up to ± this fraction (0..1), drawn from a seeded source so the same
   * job and attempt always get the same delay. Default 0.
   */
  readonly jitter: number;
}

/** Options for {@link retryPolicy}; every field is optional. */
export interface RetryOptions {
  readonly maxAttempts?: number;
  readonly delaysMs?: readonly number[];
  /** Shorthand for exponential delays: `min(base * 2^(n-1), max)` milliseconds. */
  readonly backoff?: { readonly baseMs: number; readonly maxMs: number };
  readonly jitter?: number;
}

const DEFAULT_MAX_ATTEMPTS = 10;

/** The default delays: `min(2^n, 300)` seconds after attempt n (2 s, 4 s, … 256 s, 300 s). */
export const DEFAULT_DELAYS_MS: readonly number[] = Object.freeze(
  Array.from({ length: DEFAULT_MAX_ATTEMPTS }, (_, i) => Math.min(2 ** (i + 1), 300) * 1_000),
);

/** The default policy: 10 attempts, `min(2^n, 300)` s, no jitter. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxAttempts: DEFAULT_MAX_ATTEMPTS,
  delaysMs: DEFAULT_DELAYS_MS,
  jitter: 0,
});

/** A validated policy from options (defaults filled in). Throws `InvalidInputError` naming the field. */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1_000) {
    throw new InvalidInputError("retry.maxAttempts", "must be an integer from 1 to 1000");
  }
  let delaysMs = options.delaysMs;
  if (options.backoff !== undefined) {
    if (delaysMs !== undefined) throw new InvalidInputError("retry.backoff", "give either delaysMs or backoff, not both");
    const { baseMs, maxMs } = options.backoff;
    if (!Number.isSafeInteger(baseMs) || baseMs < 0) throw new InvalidInputError("retry.backoff.baseMs", "must be an integer ≥ 0");
    if (!Number.isSafeInteger(maxMs) || maxMs < baseMs) throw new InvalidInputError("retry.backoff.maxMs", "must be an integer ≥ baseMs");
    delaysMs = Array.from({ length: Math.min(maxAttempts, 64) }, (_, i) => Math.min(baseMs * 2 ** i, maxMs));
  }
  delaysMs ??= DEFAULT_DELAYS_MS;
  if (delaysMs.length === 0 || delaysMs.length > 1_000) throw new InvalidInputError("retry.delaysMs", "must hold 1 to 1000 delays");
  for (const [i, delay] of delaysMs.entries()) {
    if (!Number.isSafeInteger(delay) || delay < 0) throw new InvalidInputError(`retry.delaysMs[${i}]`, "must be an integer ≥ 0");
  }
  const jitter = options.jitter ?? 0;
  if (typeof jitter !== "number" || !(jitter >= 0 && jitter <= 1)) throw new InvalidInputError("retry.jitter", "must be from 0 to 1");
  return Object.freeze({ maxAttempts, delaysMs: Object.freeze([...delaysMs]), jitter });
}

/** What the Core decides about a failed attempt. */
export type FailureDecision = { readonly type: "retry"; readonly retryAt: Instant } | { readonly type: "deadLetter" };

/**
 * The decision for a job whose counted attempt `attempt` (claims minus releases) just failed at
 * `now`: dead-letter at the ceiling, else retry after the attempt's delay, jittered
 * deterministically by (`jobId`, `attempt`).
 */
export function decideFailure(policy: RetryPolicy, jobId: string, attempt: number, now: Instant): FailureDecision {
  if (attempt >= policy.maxAttempts) return { type: "deadLetter" };
  return { type: "retry", retryAt: now + jitteredDelay(policy, jobId, attempt) };
}

/** The delay after counted attempt `attempt`, with the policy's jitter applied. */
export function jitteredDelay(policy: RetryPolicy, jobId: string, attempt: number): number {
  const index = Math.min(Math.max(attempt, 1), policy.delaysMs.length) - 1;
  const base = policy.delaysMs[index]!;
  if (policy.jitter === 0 || base === 0) return base;
  const unit = seededUnit(`${jobId}#${attempt}`); // in [0, 1)
  return Math.max(0, Math.round(base * (1 + policy.jitter * (2 * unit - 1))));
}

/**
 * The policy that governs a claimed job's attempts: the one stored with it at enqueue (what lease
 * expiry applies, whichever process sweeps), else `local` (its job type's, else the group's).
 * Jitter is always `local`'s, since a store never applies it.
 */
export function effectiveRetryPolicy(stored: RetryDisposition | null, local: RetryPolicy): RetryPolicy {
  if (stored == null) return local; // also a store that predates the field
  return { maxAttempts: stored.maxAttempts, delaysMs: stored.delaysMs, jitter: local.jitter };
}

/** The policy as data a store applies to expired leases (jitter is not applied there). */
export function toDisposition(policy: RetryPolicy): RetryDisposition {
  return { maxAttempts: policy.maxAttempts, delaysMs: policy.delaysMs };
}
