import { InvalidInputError } from "./errors.js";

/**
 * Every size limit a store enforces. Each is enforced loudly — a rejection or error naming the
 * limit and the actual size — except the three that say otherwise: `failureDetailBytes`
 * truncates (on a UTF-8 boundary), `transitionsPerJob` and `skippedTicksKept` drop the oldest
 * entries, and the batch/page sizes clamp a larger request to the bound.
 */
export interface Bounds {
  /** Payload JSON text, in UTF-8 bytes. Default 64 KiB. */
  readonly payloadBytes: number;
  /** Handler output JSON text, in UTF-8 bytes. Default 64 KiB. */
  readonly outputBytes: number;
  /** Job name, in characters (UTF-16 code units). Default 128. */
  readonly jobNameLength: number;
  /** Job id, schedule id, workflow id, worker id and observer id, in characters. Default 128. */
  readonly idLength: number;
  /** Queue name, in characters. Default 128. */
  readonly queueNameLength: number;
  /** Distinct parents of one job. Default 16. */
  readonly parents: number;
  /** Distinct tags on one job (enqueue and handler-added together). Default 32. */
  readonly tagsPerJob: number;
  /** Tag key, in characters. Default 128. */
  readonly tagKeyLength: number;
  /** Tag value, in characters. Default 256. */
  readonly tagValueLength: number;
  /** Trace context, in characters. Default 512. */
  readonly traceContextLength: number;
  /** Jobs in one workflow. Default 1000. */
  readonly workflowJobs: number;
  /** Jobs in one enqueue call. Default 10,000. */
  readonly enqueueBatch: number;
  /** Jobs one claim may return (also outcomes per worker report); a larger request is clamped. Default 128. */
  readonly claimBatch: number;
  /** Rows one monitoring page may return; a larger request is clamped. Default 200. */
  readonly monitorPage: number;
  /** Jobs one purge may delete; a larger request is clamped. Default 500. */
  readonly purgeBatch: number;
  /** Transitions kept per job; the oldest are dropped. Default 64. */
  readonly transitionsPerJob: number;
  /** Failure detail, in UTF-8 bytes; longer detail is truncated on a character boundary. Default 8 KiB. */
  readonly failureDetailBytes: number;
  /** Skipped ticks remembered per schedule; the oldest are dropped. Default 32. */
  readonly skippedTicksKept: number;
  /** Tag suggestions per call; a larger request is clamped. Default 50 (the window may be set up to 100). */
  readonly suggestWindow: number;
}

/** The default bounds. */
export const DEFAULT_BOUNDS: Readonly<Bounds> = Object.freeze({
  payloadBytes: 65_536,
  outputBytes: 65_536,
  jobNameLength: 128,
  idLength: 128,
  queueNameLength: 128,
  parents: 16,
  tagsPerJob: 32,
  tagKeyLength: 128,
  tagValueLength: 256,
  traceContextLength: 512,
  workflowJobs: 1_000,
  enqueueBatch: 10_000,
  claimBatch: 128,
  monitorPage: 200,
  purgeBatch: 500,
  transitionsPerJob: 64,
  failureDetailBytes: 8_192,
  skippedTicksKept: 32,
  suggestWindow: 50,
});

/**
 * The defaults overridden by `overrides`, validated: every bound must be a positive safe
 * integer. Throws {@link InvalidInputError} naming the offending bound.
 */
export function resolveBounds(overrides: Partial<Bounds> = {}): Readonly<Bounds> {
  const bounds: Bounds = { ...DEFAULT_BOUNDS, ...overrides };
  for (const [name, value] of Object.entries(bounds)) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new InvalidInputError(`bounds.${name}`, `must be a positive integer, got ${String(value)}`);
    }
  }
  if (bounds.suggestWindow > 100) {
    throw new InvalidInputError("bounds.suggestWindow", `must be at most 100, got ${bounds.suggestWindow}`);
  }
  return Object.freeze(bounds);
}

/** Clamps a requested batch or page size into [1, bound]. Non-integers and values below 1 become 1. */
export function clampToBound(requested: number, bound: number): number {
  if (!Number.isFinite(requested) || requested < 1) return 1;
  return Math.min(Math.floor(requested), bound);
}

/** The number of bytes `text` takes in UTF-8 (lone surrogates count as the 3 bytes of U+FFFD). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * `text` cut to at most `maxBytes` UTF-8 bytes without splitting a character (a surrogate pair
 * is kept or dropped whole). Returns `text` itself when it already fits.
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (text.length <= maxBytes / 3) return text; // even all 3-byte units would fit
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    let width: number;
    let units = 1;
    if (unit < 0x80) width = 1;
    else if (unit < 0x800) width = 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        width = 4;
        units = 2;
      } else width = 3;
    } else width = 3;
    if (bytes + width > maxBytes) return text.slice(0, i);
    bytes += width;
    i += units - 1;
  }
  return text;
}
