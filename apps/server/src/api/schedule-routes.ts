import type { ScheduleRecord } from "@belay/contract";
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { createJobId } from "@belay/core";
import { type ServerContext, parseJson } from "../context.js";
import { notFound, toHttpError } from "../http/errors.js";
import { jsonBody } from "../http/json-body.js";
import { nextTicks, upsertSchedule } from "../operations/schedules.js";
import { maySeeSensitive, requirePermission, viewCollection, viewItem, viewRoutes } from "./guard.js";
import { errorResponses, jsonAnswer, jsonRequest } from "./route-docs.js";
import { IdParam, ScheduleRequestSchema, ScheduleSchema, TriggerResponseSchema, UpsertScheduleResponseSchema } from "./schemas.js";

/** A stored schedule with its next three fire times. */
export function withNextTicks(schedule: ScheduleRecord, now: number) {
  return { ...schedule, nextTicks: nextTicks(schedule, now, 3) };
}

/** The schedule routes: list, show, create or redefine, remove, trigger. */
export function registerScheduleRoutes(app: OpenAPIHono, ctx: ServerContext): void {
  const view = viewRoutes(app, ctx);
  const { store, clock, catalog } = ctx;

  viewCollection(app, ctx, { name: "schedules", item: ScheduleSchema, summary: "Every schedule with its cursor, skipped ticks and next ticks" }, async (now) =>
    (await store.listSchedules()).map((s) => withNextTicks(s, now)),
  );

  viewItem(app, ctx, { path: "/schedules/{id}", tag: "schedules", summary: "One schedule (its payload template with viewSensitive)", answer: ["The schedule", ScheduleSchema], kind: "schedule", get: (id) => store.getSchedule(id) }, async ({ payload, ...record }, _id, c) => {
    const sensitive = await maySeeSensitive(ctx, c);
    return { ...withNextTicks(record, clock.now()), ...(sensitive ? { payload: parseJson(payload) } : {}) };
  });

  app.openapi(
    createRoute({
      method: "put",
      path: "/schedules/{id}",
      tags: ["schedules"],
      summary: "Create or redefine a schedule (a redefinition keeps its cursor)",
      description: "The cron expression (5 fields, or 6 with seconds first) and the IANA time zone are validated before anything is written.",
      middleware: [jsonBody],
      request: { params: IdParam, body: jsonRequest(ScheduleRequestSchema) },
      responses: {
        201: jsonAnswer("Created", UpsertScheduleResponseSchema),
        200: jsonAnswer("Redefined", UpsertScheduleResponseSchema),
        ...errorResponses(400, 401, 403, 413, 415, 422, 503),
      },
    }),
    async (c) => {
      const actor = await requirePermission(ctx, c, "manageSchedules");
      const { id } = c.req.valid("param");
      const result = await upsertSchedule(store, catalog, id, c.req.valid("json"), clock.now(), actor);
      return c.json(result, result.status === "created" ? 201 : 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/schedules/{id}",
      tags: ["schedules"],
      summary: "Remove a schedule (its minted jobs stay)",
      request: { params: IdParam },
      responses: {
        200: jsonAnswer("Removed", z.object({ status: z.literal("removed") })),
        ...errorResponses(400, 401, 403, 404, 413, 422, 503),
      },
    }),
    async (c) => {
      await requirePermission(ctx, c, "manageSchedules");
      const { id } = c.req.valid("param");
      const result = await store.removeSchedule({ scheduleId: id }).catch((e: unknown) => Promise.reject(toHttpError(e, () => "id")));
      if (result.status === "notFound") throw notFound("schedule", id);
      return c.json({ status: "removed" as const }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/schedules/{id}/trigger",
      tags: ["schedules"],
      summary: "Run one extra instance now (the cursor and future ticks are untouched); audited",
      request: { params: IdParam },
      responses: {
        200: jsonAnswer("Triggered", TriggerResponseSchema),
        ...errorResponses(400, 401, 403, 404, 413, 422, 503),
      },
    }),
    async (c) => {
      const actor = await requirePermission(ctx, c, "triggerSchedule");
      const { id } = c.req.valid("param");
      const now = clock.now();
      const result = await store
        .triggerSchedule({ scheduleId: id, jobId: createJobId(now), actor, now })
        .catch((e: unknown) => Promise.reject(toHttpError(e, () => "id")));
      if (result.status === "notFound") throw notFound("schedule", id);
      return c.json({ status: "triggered" as const, jobId: result.jobId }, 200);
    },
  );
}
