import type { RetryDisposition, Tag } from "./job.js";

// How the SQL stores that keep a job's lists on its row as JSON text encode them. One encoding,
// so a row written by one store version or adapter reads the same in the next.

/** Tags as stored: `[["key","value"], …]` in the order the job got them, or `null` for none. */
export function encodeTags(tags: readonly Tag[]): string | null {
  return tags.length === 0 ? null : JSON.stringify(tags.map((t) => [t.key, t.value]));
}

/** Tags from their stored JSON text (`null` → none). */
export function decodeTags(text: unknown): Tag[] {
  if (typeof text !== "string") return [];
  return (JSON.parse(text) as [string, string][]).map(([key, value]) => ({ key, value }));
}

/** Parent ids as stored: a JSON array, or `null` for none. */
export function encodeIds(ids: readonly string[]): string | null {
  return ids.length === 0 ? null : JSON.stringify(ids);
}

/** Parent ids from their stored JSON text. */
export function decodeIds(text: unknown): string[] {
  return typeof text === "string" ? (JSON.parse(text) as string[]) : [];
}

/**
 * A retry policy as stored (jobs and schedules): compact JSON `[maxAttempts, delay, …]` — the
 * row carries it through every update, so it takes as few bytes as it can — or `null` for none.
 */
export function encodeRetry(retry: RetryDisposition | null | undefined): string | null {
  return retry == null ? null : JSON.stringify([retry.maxAttempts, ...retry.delaysMs]);
}

/** A retry policy from its stored text, or from that text already parsed (a query may embed it as JSON). */
export function decodeRetry(stored: unknown): RetryDisposition | null {
  if (stored == null) return null;
  const [maxAttempts, ...delaysMs] = (typeof stored === "string" ? JSON.parse(stored) : stored) as number[];
  return { maxAttempts: maxAttempts!, delaysMs };
}
