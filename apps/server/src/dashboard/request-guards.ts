import { textProblem } from "@belay/contract";
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { ServerContext } from "../context.js";
import { html } from "./html.js";
import type { DashboardEnv } from "./session-middleware.js";

// Checks every dashboard request passes before a page or an action sees it.

/** The largest form body an action or the sign-in form may have: a few fields, a token. */
export const FORM_LIMIT_BYTES = 64 * 1024;

/** A bare refusal page (also what a forced POST gets: no form on screen to come back to). */
export function refusal(c: Context<DashboardEnv>, status: 400 | 403 | 404 | 413, message: string, headers: Record<string, string> = {}): Response {
  const heading = status === 403 ? "Forbidden" : status === 413 ? "Too large" : "Refused";
  const body = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Refused</title></head><body><h1>${heading}</h1><p>${message}</p><p><a href="/">Back to the dashboard</a></p></body></html>`;
  return c.html(body.value, status, headers);
}

/** Whether percent-encoded text decodes as UTF-8 (a lone surrogate's bytes, `%ED%A0%80`, do not). */
function decodes(encoded: string): boolean {
  try {
    decodeURIComponent(encoded);
    return true;
  } catch {
    return false;
  }
}

/**
 * Refuses (400) a path or query holding text no store can hold (NUL, lone surrogates): pages
 * pass path segments and filters to the store, which would refuse them anyway, as an error the
 * page cannot show. A lone surrogate can only come percent-encoded as bytes that are not UTF-8,
 * which the router would otherwise pass on undecoded, as if they were the id's own characters.
 */
export function refuseUnstorableText(): MiddlewareHandler<DashboardEnv> {
  return async (c, next) => {
    const url = new URL(c.req.url);
    const raw = [url.pathname, ...url.search.slice(1).split("&").flatMap((pair) => pair.split("="))];
    if (!raw.every(decodes)) return refusal(c, 400, "The address is malformed: its text is not UTF-8 (a lone UTF-16 surrogate, or bytes that are not text).");
    const parts = [c.req.path, ...Object.entries(c.req.queries()).flatMap(([key, values]) => [key, ...values])];
    const problem = parts.map((part) => textProblem(part)).find((p) => p !== null);
    if (problem !== undefined && problem !== null) return refusal(c, 400, `The address is malformed: its text ${problem}.`);
    return next();
  };
}

/** The origins this server answers as: the request's own, and its HTTPS twin behind a TLS proxy. */
function ownOrigins(c: Context, ctx: ServerContext): Set<string> {
  const own = new URL(c.req.url);
  const origins = new Set([own.origin]);
  if (ctx.secureCookies) origins.add(`https://${own.host}`);
  return origins;
}

/**
 * Whether a POST came from another origin: its `Origin` (or, without one, its `Referer`) names
 * one that is not this server's. A request that names neither is let through: the session's
 * CSRF token still guards it.
 */
export function isCrossOrigin(c: Context, ctx: ServerContext): boolean {
  const origins = ownOrigins(c, ctx);
  const origin = c.req.header("origin");
  if (origin !== undefined) return !origins.has(origin.trim());
  const referer = c.req.header("referer");
  if (referer === undefined || referer.trim() === "") return false;
  try {
    return !origins.has(new URL(referer).origin);
  } catch {
    return true;
  }
}

/** For every POST: 403 when it comes from another origin, 413 when its form is over {@link FORM_LIMIT_BYTES}. */
export function guardPosts(ctx: ServerContext): MiddlewareHandler<DashboardEnv> {
  const limit = bodyLimit({
    maxSize: FORM_LIMIT_BYTES,
    onError: (c) => refusal(c as Context<DashboardEnv>, 413, `A dashboard form is at most ${FORM_LIMIT_BYTES / 1024} KiB.`, { connection: "close" }),
  });
  return async (c, next) => {
    if (c.req.method !== "POST") return next();
    if (isCrossOrigin(c, ctx)) return refusal(c, 403, "The form was sent from another site, so nothing changed.");
    return limit(c, next);
  };
}
