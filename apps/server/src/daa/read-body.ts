import { InvalidInputError } from "@belay/contract";
import { jsonDepth } from "../http/json-body.js";

// Reading an envelope's bytes: at most `limit` of them (the rest is not read: the answer closes
// the connection), strict UTF-8, nested at most `maxDepth` levels (counted before parsing, so
// nothing deep ever reaches a recursive walk), then JSON.

/** A body read, or why not (a 400 naming `body`, and whether the connection must close). */
export type BodyRead = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: InvalidInputError; readonly close: boolean };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Reads `request`'s body as JSON within `limit` bytes and `maxDepth` levels. */
export async function readJsonBody(request: Request, limit: number, maxDepth: number): Promise<BodyRead> {
  const refuse = (reason: string, close = false): BodyRead => ({ ok: false, error: new InvalidInputError("body", reason), close });
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) return refuse(`must be at most ${limit} bytes, got ${declared}`, true);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body !== null) {
    const reader = request.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > limit) {
          await reader.cancel().catch(() => {});
          return refuse(`must be at most ${limit} bytes`, true);
        }
        chunks.push(value);
      }
    } catch {
      return refuse("could not be read", true);
    }
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return refuse("is not valid UTF-8");
  }
  if (text.trim().length === 0) return refuse("is empty: an envelope {kind, head, data} is required");
  if (jsonDepth(text, maxDepth) > maxDepth) return refuse(`nests arrays and objects deeper than ${maxDepth} levels`);
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return refuse(`is not JSON: ${(error as Error).message}`);
  }
}
