import { truncateUtf8 } from "./bounds.js";

// What a store can hold faithfully. Every store keeps text as UTF-8 (PostgreSQL `text`, SQLite
// TEXT): a NUL character cannot be stored at all by PostgreSQL, and a lone UTF-16 surrogate has
// no UTF-8 form, so a driver silently rewrites it (to U+FFFD) — two different ids could then
// collide, and a job could not be found by its own id. The contract refuses such text in every
// field, identically on every store, instead of storing it changed.

/** Why `text` cannot be stored faithfully, or `null` when it can. */
export function textProblem(text: string): string | null {
  if (text.includes("\u0000")) return "must not contain NUL (U+0000) characters";
  if (!(text as unknown as { isWellFormed(): boolean }).isWellFormed()) {
    return "must be well-formed Unicode (no lone UTF-16 surrogates)";
  }
  return null;
}

/**
 * `text` made storable for fields that are documented to be rewritten rather than refused (failure
 * detail, which comes from arbitrary error messages): NUL and lone surrogates become U+FFFD.
 */
export function storableText(text: string): string {
  const wellFormed = (text as unknown as { toWellFormed(): string }).toWellFormed();
  return wellFormed.includes("\u0000") ? wellFormed.replaceAll("\u0000", "\ufffd") : wellFormed;
}

// ---- numeric ranges ----------------------------------------------------------------------------

/**
 * The latest instant a store accepts: 9999-12-31T23:59:59.999Z, the last one ISO 8601 writes with
 * four year digits (and far inside what JavaScript dates and 64-bit columns represent).
 */
export const MAX_INSTANT = 253_402_300_799_999;

/** The largest count, limit or attempt number a store accepts: 2^31 − 1, a 32-bit database integer. */
export const MAX_COUNT = 2_147_483_647;

/** The longest duration (a lease, a retry delay) a store accepts, in milliseconds: 2^31 − 1, about 24.8 days. */
export const MAX_DURATION_MS = 2_147_483_647;

/**
 * Failure detail as a store keeps it: made storable (see `storableText`) and truncated to
 * `maxBytes` of UTF-8 on a character boundary — the one field that is rewritten, not refused.
 */
export function failureDetailText(detail: string, maxBytes: number): string {
  return truncateUtf8(storableText(detail), maxBytes);
}
