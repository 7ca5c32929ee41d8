import { InvalidInputError, MAX_INSTANT, PROMISE_KINDS, PROMISE_PROTOCOL_VERSION, type PromiseKind, textProblem } from "@belay/contract";

// The request side of the Resonate HTTP/JSON envelope (protocol "2026-04-01"):
// `{ kind, head: { corrId, version, auth?, "resonate:debug_time"? }, data }`. Reading one checks
// the envelope itself — the kind, the head, that `data` is an object — and names the field at
// fault; the fields inside `data` are the promise store's to check (see envelope-requests.ts).

/** The protocol version this server speaks (the envelope's `head.version`). */
export const PROTOCOL_VERSION = PROMISE_PROTOCOL_VERSION;

/** The debug kinds: answered only in debug mode (`--debug`), 403 otherwise. */
export const DEBUG_KINDS = Object.freeze(["debug.start", "debug.stop", "debug.reset", "debug.snap", "debug.tick"] as const);

/** A debug kind. */
export type DebugKind = (typeof DEBUG_KINDS)[number];

/** Every kind the envelope takes. */
export type EnvelopeKind = PromiseKind | DebugKind;

/** The head field that sets a request's `now` in debug mode. */
export const DEBUG_TIME = "resonate:debug_time";

/** Longest `corrId` (and echoed `kind`) accepted, in characters. */
export const MAX_CORR_ID_LENGTH = 1_024;

/** A request envelope, its head read. */
export interface RequestEnvelope {
  readonly kind: EnvelopeKind;
  readonly corrId: string;
  /** `head.auth`, when present. */
  readonly auth?: string;
  /** `head["resonate:debug_time"]`, when present. */
  readonly debugTime?: number;
  readonly data: Record<string, unknown>;
}

/** What an answer echoes of a request that may be malformed: its `kind` and `corrId` when they are usable text, else `""`. */
export interface Echo {
  readonly kind: string;
  readonly corrId: string;
}

const invalid = (field: string, reason: string): never => {
  throw new InvalidInputError(field, reason);
};

/** Whether `value` is a plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function echoable(value: unknown): string {
  return typeof value === "string" && value.length <= MAX_CORR_ID_LENGTH && textProblem(value) === null ? value : "";
}

/** The `kind` and `corrId` an answer to `body` echoes, read without trusting its shape. */
export function echoOf(body: unknown): Echo {
  if (!isObject(body)) return { kind: "", corrId: "" };
  const head = body["head"];
  return { kind: echoable(body["kind"]), corrId: isObject(head) ? echoable(head["corrId"]) : "" };
}

/** `head.auth` of a body that may be malformed, when it is a string (credentials are read before the envelope is checked). */
export function headAuthOf(body: unknown): string | null {
  if (!isObject(body) || !isObject(body["head"])) return null;
  const auth = body["head"]["auth"];
  return typeof auth === "string" ? auth : null;
}

/** Whether `kind` is a debug kind. */
export function isDebugKind(kind: string): kind is DebugKind {
  return (DEBUG_KINDS as readonly string[]).includes(kind);
}

/** Checks a correlation id (`field` names it). */
export function readCorrId(value: unknown, field: string): string {
  if (typeof value !== "string") invalid(field, "must be a string");
  const text = value as string;
  if (text.length > MAX_CORR_ID_LENGTH) invalid(field, `must be at most ${MAX_CORR_ID_LENGTH} characters, got ${text.length}`);
  const problem = textProblem(text);
  if (problem !== null) invalid(field, problem);
  return text;
}

/** Checks a head's `version` (`field` names it). */
export function readVersion(value: unknown, field: string): void {
  if (value !== PROTOCOL_VERSION) {
    invalid(field, `must be "${PROTOCOL_VERSION}"${typeof value === "string" ? `, got "${value.slice(0, 64)}"` : ""}`);
  }
}

/**
 * Reads a request envelope: throws `InvalidInputError` naming the first field at fault (`kind`,
 * `head`, `head.corrId`, `head.version`, `head.auth`, `head.resonate:debug_time`, `data`).
 * Fields of `head` other than these (the SDK sends `resonate:origin`) are ignored.
 */
export function readEnvelope(body: unknown): RequestEnvelope {
  if (!isObject(body)) invalid("body", "must be a JSON object {kind, head, data}");
  const envelope = body as Record<string, unknown>;
  const kind = envelope["kind"];
  if (typeof kind !== "string" || kind.length === 0) invalid("kind", "must be a non-empty string");
  if (!(PROMISE_KINDS as readonly string[]).includes(kind as string) && !isDebugKind(kind as string)) {
    invalid("kind", `unknown kind ${(kind as string).slice(0, 64)}`);
  }
  const head = envelope["head"];
  if (!isObject(head)) invalid("head", "must be an object {corrId, version}");
  const h = head as Record<string, unknown>;
  const corrId = readCorrId(h["corrId"], "head.corrId");
  readVersion(h["version"], "head.version");
  const auth = h["auth"];
  if (auth !== undefined && typeof auth !== "string") invalid("head.auth", "must be a string");
  const debugTime = h[DEBUG_TIME];
  if (debugTime !== undefined && (typeof debugTime !== "number" || !Number.isSafeInteger(debugTime) || debugTime < 0 || debugTime > MAX_INSTANT)) {
    invalid(`head.${DEBUG_TIME}`, `must be an instant (epoch milliseconds, 0 to ${MAX_INSTANT})`);
  }
  const data = envelope["data"];
  if (!isObject(data)) invalid("data", "must be an object");
  return {
    kind: kind as EnvelopeKind,
    corrId,
    ...(auth === undefined ? {} : { auth: auth as string }),
    ...(debugTime === undefined ? {} : { debugTime: debugTime as number }),
    data: data as Record<string, unknown>,
  };
}
