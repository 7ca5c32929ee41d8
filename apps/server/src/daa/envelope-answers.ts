import type { FencedAnswer, PromiseResponse } from "@belay/contract";
import { type Echo, PROTOCOL_VERSION } from "./envelope.js";

// The answer side of the envelope: `{ kind, head: { corrId, status, version }, data }`, with the
// request's `kind` and `corrId` echoed, the HTTP status equal to `head.status`, and `data` a
// string for every status from 400 up. A fence's inner answer is an envelope of its own that
// echoes the inner request's `corrId`. Optional record fields are omitted, never null: the
// records come from the store that way, and JSON drops what is undefined.

/** An answer envelope. */
export interface AnswerEnvelope {
  readonly kind: string;
  readonly head: { readonly corrId: string; readonly status: number; readonly version: string };
  readonly data: unknown;
}

/** An answer with its HTTP status and headers. */
export interface EnvelopeReply {
  readonly status: number;
  readonly body: AnswerEnvelope;
  readonly headers?: Readonly<Record<string, string>>;
}

/** An envelope answering `echo` with `status` and `data`. */
export function envelope(echo: Echo, status: number, data: unknown): AnswerEnvelope {
  return { kind: echo.kind, head: { corrId: echo.corrId, status, version: PROTOCOL_VERSION }, data };
}

/** A refusal: `data` is the message. */
export function refusal(echo: Echo, status: number, message: string, headers?: Readonly<Record<string, string>>): EnvelopeReply {
  return { status, body: envelope(echo, status, message), ...(headers === undefined ? {} : { headers }) };
}

/** A success with its data. */
export function success(echo: Echo, data: unknown, status: 200 | 300 = 200): EnvelopeReply {
  return { status, body: envelope(echo, status, data) };
}

/** The store's answer as an envelope; `actionCorrId` is the nested action's, which a fence's inner answer echoes. */
export function storeAnswer(echo: Echo, response: PromiseResponse, actionCorrId: string | undefined): EnvelopeReply {
  if ("error" in response) return refusal(echo, response.status, response.error);
  if (echo.kind === "task.fence" && response.status === 200) {
    const { action, preload } = response.data as { readonly action: FencedAnswer; readonly preload: unknown };
    const inner = envelope({ kind: action.kind, corrId: actionCorrId ?? "" }, action.status, "error" in action ? action.error : action.data);
    return success(echo, { action: inner, preload });
  }
  return success(echo, response.data, response.status);
}
