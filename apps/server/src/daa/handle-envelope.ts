import { InvalidInputError, type PromiseKind, type PromiseStore, isBelayError } from "@belay/contract";
import type { Clock, Logger } from "@belay/core";
import { type DebugTargets, runDebugKind } from "./debug-kinds.js";
import { DEBUG_TIME, type Echo, echoOf, headAuthOf, isDebugKind, readEnvelope } from "./envelope.js";
import { type EnvelopeReply, refusal, storeAnswer, success } from "./envelope-answers.js";
import { renameField, toStoreRequest } from "./envelope-requests.js";
import { type PromiseAccess, refusalMessage } from "./promise-access.js";
import { readJsonBody } from "./read-body.js";
import { nextOccurrence } from "./schedule-cron.js";

// `POST /`: one envelope in, one envelope out. In this order: the body is read (bounded), the
// caller authenticated (before anything about the request is answered), the envelope checked,
// the debug gate applied, the store asked; every refusal before the store writes nothing.

/** The deepest nesting an envelope may have (a task.create's param headers sit at depth 6). */
export const MAX_ENVELOPE_DEPTH = 32;

/** Seconds a client should wait after a busy store. */
const RETRY_AFTER = { "retry-after": "1" };

/** What the envelope handler works with. */
export interface EnvelopeContext {
  readonly store: PromiseStore;
  readonly access: PromiseAccess;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Debug mode: the debug kinds and `resonate:debug_time` are answered (else 403). */
  readonly debug: boolean;
  readonly debugTargets: DebugTargets;
  readonly bodyLimitBytes: number;
}

/** An envelope reply, and whether the connection must close (a body left unread). */
export type EnvelopeOutcome = EnvelopeReply & { readonly close?: boolean };

const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json$/i;

function contentTypeProblem(header: string | null): string | null {
  if (header === null || header.trim() === "") return "is missing: send content-type: application/json";
  const [type = "", ...parameters] = header.split(";").map((part) => part.trim());
  if (!JSON_TYPE.test(type)) return `must be application/json, not ${type.slice(0, 64)}`;
  for (const parameter of parameters) {
    const [name = "", value = ""] = parameter.split("=").map((part) => part.trim());
    if (name.toLowerCase() === "charset" && value.replace(/^"|"$/g, "").toLowerCase() !== "utf-8") return `must be UTF-8, not ${value.slice(0, 32)}`;
  }
  return null;
}

/** The 4xx/5xx reply for an error a step threw. */
export function errorReply(error: unknown, echo: Echo, logger: Logger): EnvelopeReply {
  if (isBelayError(error, "BELAY_INVALID_INPUT")) return refusal(echo, 400, error.message);
  if (isBelayError(error, "BELAY_TRANSIENT_STORE")) return refusal(echo, 503, "the store is busy; retry shortly (nothing was written)", RETRY_AFTER);
  if (isBelayError(error, "BELAY_STORE_CLOSED")) return refusal(echo, 503, "the server is shutting down", RETRY_AFTER);
  if (isBelayError(error, "BELAY_SCHEMA_NOT_MIGRATED") || isBelayError(error, "BELAY_SCHEMA_VERSION_UNKNOWN")) {
    return refusal(echo, 503, `the promise store is not ready: ${(error as Error).message}`, RETRY_AFTER);
  }
  logger.error("promises: unexpected error", { kind: echo.kind, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  return refusal(echo, 500, "internal server error");
}

/** Answers one `POST /` request whose socket peer is `peerAddress`. */
export async function handleEnvelope(ctx: EnvelopeContext, request: Request, peerAddress: string | null): Promise<EnvelopeOutcome> {
  const body = await readJsonBody(request, ctx.bodyLimitBytes, MAX_ENVELOPE_DEPTH);
  const parsed = body.ok ? body.value : undefined;
  const echo = echoOf(parsed);
  const decision = await ctx.access.check(request, peerAddress, headAuthOf(parsed));
  if (!decision.allowed) {
    const headers = decision.status === 401 ? { "www-authenticate": 'Bearer realm="belay"' } : undefined;
    return { ...refusal(echo, decision.status, refusalMessage(decision), headers), ...(body.ok ? {} : { close: body.close }) };
  }
  if (!body.ok) return { ...refusal(echo, 400, body.error.message), close: body.close };
  const typeProblem = contentTypeProblem(request.headers.get("content-type"));
  if (typeProblem !== null) return refusal(echo, 400, new InvalidInputError("content-type", typeProblem).message);
  try {
    const envelope = readEnvelope(parsed);
    if (envelope.debugTime !== undefined && !ctx.debug) return refusal(echo, 403, `head.${DEBUG_TIME} needs debug mode (belay-server --debug)`);
    const now = envelope.debugTime ?? ctx.clock.now();
    if (isDebugKind(envelope.kind)) {
      if (!ctx.debug) return refusal(echo, 403, `${envelope.kind} needs debug mode (belay-server --debug)`);
      const data = await runDebugKind(envelope.kind, envelope.data, now, ctx.debugTargets);
      return success(echo, data);
    }
    const kind = envelope.kind as PromiseKind;
    const extra = kind === "schedule.create" ? { nextRunAt: firstRun(envelope.data["cron"], now, ctx.store.capabilities.bounds.cronLength) } : {};
    const { request: storeRequest, actionCorrId } = toStoreRequest(kind, envelope.data, ctx.store.capabilities.bounds, extra);
    let response;
    try {
      response = await ctx.store.handle(storeRequest, now);
    } catch (error) {
      throw renameField(error);
    }
    return storeAnswer(echo, response, actionCorrId);
  } catch (error) {
    return errorReply(error, echo, ctx.logger);
  }
}

/** A new schedule's first run: the cron's first occurrence after `now` (400 naming `data.cron` when it has none). */
function firstRun(cron: unknown, now: number, maxLength: number): number {
  if (typeof cron !== "string") throw new InvalidInputError("data.cron", "must be a cron expression of 5 to 7 fields");
  if (cron.length > maxLength) throw new InvalidInputError("data.cron", `must be at most ${maxLength} characters, got ${cron.length}`);
  const next = nextOccurrence(cron, now, "data.cron");
  if (next === null) throw new InvalidInputError("data.cron", "has no occurrence in the future");
  return next;
}
