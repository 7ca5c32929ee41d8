import type { Context, MiddlewareHandler } from "hono";
import { type ErrorBody, HttpError } from "./errors.js";

// HTTP-level rules every route shares, API and dashboard alike.

const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** The request target as the client sent it, when the Node adapter hands it over (`c.env.incoming`). */
function rawTarget(c: Context): string | null {
  const incoming = (c.env as { incoming?: { url?: unknown } } | undefined)?.incoming;
  return typeof incoming?.url === "string" ? incoming.url : null;
}

/** Whether a raw request target has a `.` or `..` segment (also percent-encoded, also between backslashes). */
export function hasDotSegment(target: string): boolean {
  let path = target;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(path);
  if (scheme !== null) path = path.slice(scheme[0].length);
  const end = path.search(/[?#]/);
  if (end >= 0) path = path.slice(0, end);
  return path.split(/[/\\]/).some((segment) => DOT_SEGMENT.test(segment));
}

/**
 * Refuses (400) a request whose path has dot segments. URL parsing resolves them before routing
 * (`/api/v1/jobs/x/../../queues/q/pause` would reach the pause route), so a path that looks like
 * one route could act on another; the raw target is read where the adapter gives it.
 */
export function refuseDotSegments(): MiddlewareHandler {
  return async (c, next) => {
    const target = rawTarget(c);
    if (target === null || !hasDotSegment(target)) return next();
    const message = "the path must not have . or .. segments";
    if (target.includes("/api/")) {
      const error: ErrorBody = { error: { code: "BELAY_INVALID_INPUT", field: "path", message } };
      return c.json(error, 400, { "cache-control": "no-store", connection: "close" });
    }
    return c.text(message, 400, { connection: "close" });
  };
}

/**
 * Reads and discards what a route left of the request body (up to `limit` bytes) before the
 * answer goes out. A body left unread would sit in front of the next request on a keep-alive
 * connection; past `limit` the answer says `Connection: close` instead.
 */
export function drainUnreadBody(limit: number): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const request = c.req.raw;
    if (request.body === null || request.bodyUsed) return;
    // An answer that closes the connection anyway (a body over its bound) need not read it.
    if (c.res.headers.get("connection")?.toLowerCase() === "close") return;
    let size = 0;
    let closing = false;
    try {
      const reader = request.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > limit) {
          closing = true;
          await reader.cancel();
          break;
        }
      }
    } catch {
      closing = true;
    }
    if (closing) c.header("connection", "close");
  };
}

/** One registered route of an app: its method and its path pattern. */
interface RouteEntry {
  readonly method: string;
  readonly path: string;
}

function patternOf(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment === "*" ? ".*" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}/?$`);
}

/**
 * The methods `app` answers at `path`, for the `Allow` header of a 405 (`HEAD` wherever `GET`
 * is, as Hono answers it); empty when no route has that path at all (a 404). Middleware (method
 * `ALL`) is not a route.
 */
export function allowedMethods(app: { readonly routes: readonly RouteEntry[] }, path: string): string[] {
  const methods = new Set<string>();
  for (const route of app.routes) {
    if (route.method === "ALL" || route.path.endsWith("*")) continue;
    if (patternOf(route.path).test(path)) methods.add(route.method);
  }
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}

/** The API's 405, in its error shape. */
export function methodNotAllowed(method: string, path: string, allow: readonly string[]): HttpError {
  return new HttpError(
    405,
    { code: "BELAY_METHOD_NOT_ALLOWED", field: null, message: `${method} is not allowed on ${path} (allowed: ${allow.join(", ")})` },
    { allow: allow.join(", ") },
  );
}
