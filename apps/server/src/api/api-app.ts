import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { ServerContext } from "../context.js";
import { HttpError, badRequest, toHttpError } from "../http/errors.js";
import { validationError } from "./guard.js";
import { registerJobRoutes } from "./job-routes.js";
import { registerMonitoringRoutes } from "./monitoring-routes.js";
import { registerQueueRoutes } from "./queue-routes.js";
import { registerScheduleRoutes } from "./schedule-routes.js";

/** Renders any error as the API's JSON error body with its status. */
export function renderApiError(error: unknown, c: Context, ctx: ServerContext): Response {
  let http: HttpError;
  if (error instanceof HTTPException) {
    // Hono raises these for bodies it cannot read; `jsonBody` refuses them first, so this is a fallback.
    if (error.status === 415) http = new HttpError(415, { code: "BELAY_UNSUPPORTED_MEDIA_TYPE", field: "content-type", message: "the body must be JSON (application/json)" });
    else if (error.status === 413) http = new HttpError(413, { code: "BELAY_BODY_TOO_LARGE", field: "body", message: "the request body is too large" });
    else if (error.status >= 400 && error.status < 500) http = badRequest("body", error.message || "malformed request");
    else http = toHttpError(error);
  } else {
    http = toHttpError(error);
  }
  if (http.status >= 500 && http.status !== 503) {
    ctx.logger.error("api: unexpected error", { path: c.req.path, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
  return c.json(http.body, http.status as 400, { ...http.headers, "cache-control": "no-store" });
}

/**
 * The HTTP/JSON API (mounted at `/api/v1`) with its OpenAPI document at `/openapi.json`,
 * generated from the same schemas that validate the requests.
 */
export function createApiApp(ctx: ServerContext, options: { readonly bodyLimitBytes: number }): OpenAPIHono {
  const app = new OpenAPIHono({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error, result.target);
    },
  });
  app.use("*", async (c, next) => {
    await next();
    c.header("cache-control", "no-store");
  });
  app.use(
    "*",
    bodyLimit({
      maxSize: options.bodyLimitBytes,
      onError: (c) => {
        const actual = Number(c.req.header("content-length") ?? Number.NaN);
        const http = new HttpError(413, {
          code: "BELAY_BODY_TOO_LARGE",
          field: "body",
          message: `the request body exceeds ${options.bodyLimitBytes} bytes`,
          bound: "bodyBytes",
          limit: options.bodyLimitBytes,
          ...(Number.isSafeInteger(actual) ? { actual } : {}),
        });
        // The body is left unread: close the connection rather than leave it in front of the next request.
        return c.json(http.body, 413, { connection: "close" });
      },
    }),
  );
  registerJobRoutes(app, ctx);
  registerQueueRoutes(app, ctx);
  registerScheduleRoutes(app, ctx);
  registerMonitoringRoutes(app, ctx);
  app.doc("/openapi.json", {
    openapi: "3.0.3",
    info: {
      title: "Belay API",
      version: "1",
      description:
        "Enqueue jobs, operate queues and schedules, and read what the workers did. Writes and sensitive reads need `Authorization: Bearer <secret>`. Errors are `{ error: { code, field, message } }`; times are epoch milliseconds. Request bodies are JSON (`content-type: application/json`, UTF-8, nested at most 64 levels). Besides each operation's own answers: a method a path does not take gets 405 with `Allow`, and a path with `.` or `..` segments gets 400.",
    },
    servers: [{ url: "/api/v1" }],
    security: [{ bearer: [] }],
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  app.notFound((c) => c.json({ error: { code: "BELAY_NOT_FOUND", field: null, message: `no route ${c.req.method} ${c.req.path}` } }, 404));
  app.onError((error, c) => renderApiError(error, c, ctx));
  return app;
}
