import type { Bounds } from "./bounds.js";
import { INSTANT_PROBLEM, checkId, checkQueueName, isInstant } from "./enqueue.js";
import { errorFromRejection, InvalidInputError } from "./errors.js";
import { JOB_STATES, type Instant, type JobState } from "./job.js";
import { textProblem } from "./text.js";

// Request-shape checks every store runs before it touches data. Each throws InvalidInputError
// (or a bound error) naming the field, so a malformed request writes nothing.

/** Asserts `value` is an instant (an integer of epoch milliseconds in [0, `MAX_INSTANT`]). */
export function requireInstant(value: unknown, field: string): Instant {
  if (!isInstant(value)) throw new InvalidInputError(field, INSTANT_PROBLEM);
  return value;
}

/** Asserts `value` is an integer in [`min`, `max`] (default: any safe integer ≥ `min`). */
export function requireInteger(value: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidInputError(field, max === Number.MAX_SAFE_INTEGER ? `must be an integer ≥ ${min}` : `must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** Asserts `value` is a string a store can hold faithfully (no NUL, no lone surrogate); it may be empty. */
export function requireStorableString(value: unknown, field: string): string {
  if (typeof value !== "string") throw new InvalidInputError(field, "must be a string");
  const problem = textProblem(value);
  if (problem) throw new InvalidInputError(field, problem);
  return value;
}

/** Asserts `value` is an array. */
export function requireArray<T>(value: readonly T[] | unknown, field: string): readonly T[] {
  if (!Array.isArray(value)) throw new InvalidInputError(field, "must be an array");
  return value as readonly T[];
}

/** Asserts `value` is a valid id under `bounds.idLength`. */
export function requireId(value: unknown, field: string, bounds: Bounds): string {
  const problem = checkId(value, field, bounds);
  if (problem) throw errorFromRejection(problem);
  return value as string;
}

/** Asserts `value` is a valid queue name. */
export function requireQueue(value: unknown, field: string, bounds: Bounds): string {
  const problem = checkQueueName(value, field, bounds);
  if (problem) throw errorFromRejection(problem);
  return value as string;
}

/** Asserts `value` is a non-empty string a store can hold faithfully (an actor, a reason, a filter value). */
export function requireText(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0) throw new InvalidInputError(field, "must be a non-empty string");
  return requireStorableString(value, field);
}

/** Asserts `value` is a list of job states. */
export function requireStates(value: unknown, field: string): readonly JobState[] {
  const list = requireArray<unknown>(value, field);
  for (const [i, state] of list.entries()) {
    if (!JOB_STATES.includes(state as JobState)) throw new InvalidInputError(`${field}[${i}]`, `unknown state ${String(state)}`);
  }
  return list as readonly JobState[];
}
