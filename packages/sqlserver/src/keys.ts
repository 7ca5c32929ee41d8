// Text that SQL Server compares or orders is stored as its UTF-8 bytes in `varbinary` columns:
// ids, queue names, job names, worker ids, tag keys and values, promise ids. Binary comparison
// is exact — no collation folds case or accents, and no trailing space is ignored (`=` on
// `nvarchar` pads with spaces, so `'a'` and `'a '` would be one id) — and the order of UTF-8
// bytes is code point order, the order the contract sorts by (`compareCodePoints`). The contract
// refuses NUL and lone surrogates in every such field, so the encoding is exact both ways.
// Display-only text (payloads, causes, actors, failure detail) stays `nvarchar`.

/** The UTF-8 bytes of `text`, as a `varbinary` parameter. */
export function key(text: string): Buffer {
  return Buffer.from(text, "utf8");
}

/** `key(text)`, or `null`. */
export function keyOrNull(text: string | null | undefined): Buffer | null {
  return text == null ? null : key(text);
}

/** The UTF-8 bytes of `text` as hex, the form keys take inside a JSON parameter (`fromHex` in SQL). */
export function hex(text: string): string {
  return Buffer.from(text, "utf8").toString("hex");
}

/** `hex(text)`, or `null`. */
export function hexOrNull(text: string | null | undefined): string | null {
  return text == null ? null : hex(text);
}

/** Text from a `varbinary` column (a `Buffer`), or `null` for SQL NULL. */
export function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (Buffer.isBuffer(value)) return value.toString("utf8");
  if (value instanceof Uint8Array) return Buffer.from(value).toString("utf8");
  if (typeof value === "string") return value;
  throw new TypeError(`expected binary text, got ${typeof value}`);
}

/** Text from a `varbinary` column that is never NULL. */
export function textOfKey(value: unknown): string {
  const text = textOf(value);
  if (text === null) throw new TypeError("expected binary text, got NULL");
  return text;
}

/** Text from hex (a key read back from a JSON document). */
export function textOfHex(value: string): string {
  return Buffer.from(value, "hex").toString("utf8");
}

/** SQL: the `varbinary(n)` a hex string expression (from a JSON document) stands for. */
export function fromHex(expression: string, bytes: number | "max"): string {
  return `CONVERT(varbinary(${bytes}), ${expression}, 2)`;
}

/**
 * An integer column as a number, whatever the driver parsed it into: `bigint` columns arrive as
 * text from tedious (and as text or `BigInt` through a caller's executor). Throws beyond 2^53.
 */
export function toInt(value: unknown): number {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`${String(value)} is not an integer that fits a JavaScript number`);
  return n;
}

/** {@link toInt}, or `null` for SQL NULL. */
export function toIntOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : toInt(value);
}

/** A `bit` column as a boolean (the driver gives `true`/`false`; a caller's executor may give 0/1). */
export function toBool(value: unknown): boolean {
  return value === true || value === 1 || value === "1";
}
