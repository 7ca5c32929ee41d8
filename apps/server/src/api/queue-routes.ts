import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { ServerContext } from "../context.js";
import { notFound, toHttpError } from "../http/errors.js";
import { jsonBody } from "../http/json-body.js";
import { type QueueOverview, loadQueueOverviews, totalsOf } from "../monitor/queues.js";
import { requirePermission, viewCollection, viewRoutes } from "./guard.js";
import { errorResponses, jsonAnswer, jsonRequest } from "./route-docs.js";
import { ActionResultSchema, CountsSchema, LimitRequestSchema, QueueSchema, pathParam } from "./schemas.js";

const QueueParam = z.object({ queue: pathParam("queue") });

/**
 * The queue's overview, or 404: a queue is known when it has jobs or settings, or a known job
 * type or a schedule names it. Actions on unknown queues are refused so a typo does not create one.
 */
export async function knownQueue(ctx: ServerContext, queue: string): Promise<QueueOverview> {
  const found = (await loadQueueOverviews(ctx.store, ctx.catalog)).find((q) => q.queue === queue);
  if (found === undefined) throw notFound("queue", queue, "queue");
  return found;
}

/** The queue routes: counts, queues, pause, resume, concurrency limit. */
export function registerQueueRoutes(app: OpenAPIHono, ctx: ServerContext): void {
  const view = viewRoutes(app, ctx);
  const { store, clock } = ctx;

  view(
    createRoute({
      method: "get",
      path: "/counts",
      tags: ["queues"],
      summary: "Jobs per queue and state",
      responses: { 200: jsonAnswer("Counts", CountsSchema), ...errorResponses(503) },
    }),
    async (c) => {
      const counts = await store.countJobs();
      return c.json({ counts, totals: totalsOf(counts) } as never, 200);
    },
  );

  viewCollection(app, ctx, { name: "queues", item: QueueSchema, summary: "Every queue with its settings and depth per state" }, () =>
    loadQueueOverviews(store, ctx.catalog),
  );

  view(
    createRoute({
      method: "get",
      path: "/queues/{queue}",
      tags: ["queues"],
      summary: "One queue",
      request: { params: QueueParam },
      responses: { 200: jsonAnswer("The queue", QueueSchema), ...errorResponses(400, 404, 503) },
    }),
    async (c) => {
      return c.json((await knownQueue(ctx, c.req.valid("param").queue)) as never, 200);
    },
  );

  for (const action of ["pause", "resume"] as const) {
    app.openapi(
      createRoute({
        method: "post",
        path: `/queues/{queue}/${action}`,
        tags: ["queues"],
        summary: action === "pause" ? "Pause a queue: claims skip it (running jobs finish)" : "Resume a paused queue",
        request: { params: QueueParam },
        responses: {
          200: jsonAnswer("Applied (idempotent, audited)", ActionResultSchema),
          ...errorResponses(400, 401, 403, 404, 413, 503),
        },
      }),
      async (c) => {
        const actor = await requirePermission(ctx, c, "pauseQueue");
        const { queue } = c.req.valid("param");
        await knownQueue(ctx, queue);
        const request = { queue, actor, now: clock.now() };
        const result = await (action === "pause" ? store.pauseQueue(request) : store.resumeQueue(request)).catch((e: unknown) =>
          Promise.reject(toHttpError(e)),
        );
        return c.json({ status: result.status }, 200);
      },
    );
  }

  app.openapi(
    createRoute({
      method: "put",
      path: "/queues/{queue}/concurrency-limit",
      tags: ["queues"],
      summary: "Cap the jobs of a queue leased at once, cluster-wide (null removes the cap)",
      middleware: [jsonBody],
      request: { params: QueueParam, body: jsonRequest(LimitRequestSchema) },
      responses: {
        200: jsonAnswer("Applied (audited)", ActionResultSchema),
        ...errorResponses(400, 401, 403, 404, 413, 415, 422, 503),
      },
    }),
    async (c) => {
      const actor = await requirePermission(ctx, c, "pauseQueue");
      const { queue } = c.req.valid("param");
      const { limit } = c.req.valid("json");
      await knownQueue(ctx, queue);
      const result = await store.setConcurrencyLimit({ queue, limit, actor, now: clock.now() });
      return c.json({ status: result.status }, 200);
    },
  );
}
