import type { ObserverStatus, TagSuggestion } from "@belay/contract";
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { PERMISSIONS } from "../auth/permissions.js";
import type { ServerContext } from "../context.js";
import { toHttpError } from "../http/errors.js";
import { maySeeSensitive, viewCollection, viewItem, viewRoutes } from "./guard.js";
import { errorResponses, jsonAnswer } from "./route-docs.js";
import { ListJobsQuery, filterField, listRequestOf, pageOf } from "./job-routes.js";
import {
  AuditPageSchema, FacetsSchema, HealthSchema, IntParam, MeSchema, ObserverDetailSchema, ObserverSchema,
  SuggestionsSchema, ThroughputSchema, WorkflowDetailSchema, WorkflowPageSchema, intParamDoc, text,
} from "./schemas.js";

/** The paging fields of a listing query (keyset: a cursor and a page size). */
const PAGE_QUERY = {
  after: text().min(1).optional(),
  limit: IntParam.openapi(intParamDoc("Page size (default 50); above the store's monitorPage bound gets 422")),
};

/** An observer's status flattened for the API and the dashboard, with its lag. */
export function observerView(status: ObserverStatus, now: number) {
  const { subscription } = status;
  return {
    id: subscription.observerId,
    states: subscription.states,
    jobNames: subscription.jobNames ?? null,
    queues: subscription.queues ?? null,
    cursor: status.cursor,
    leaseOwner: status.leaseOwner,
    leaseExpiresAt: status.leaseExpiresAt,
    pending: status.pending,
    oldestPendingAt: status.oldestPendingAt,
    lagMs: status.oldestPendingAt === null ? null : Math.max(0, now - status.oldestPendingAt),
    deadLetters: status.deadLetters,
  };
}

/** The text form of a tag suggestion (what a filter box would hold). */
export function suggestionText(s: TagSuggestion): string {
  return s.kind === "label" ? s.value : s.kind === "key" ? `${s.key}=` : `${s.key}=${s.value}`;
}

/** The read-only routes: audit, workflows, tags, observers, throughput, health, me. */
export function registerMonitoringRoutes(app: OpenAPIHono, ctx: ServerContext): void {
  const view = viewRoutes(app, ctx);
  const { store, clock } = ctx;
  const bound = store.capabilities.bounds.monitorPage;

  view(
    createRoute({
      method: "get",
      path: "/audit",
      tags: ["audit"],
      summary: "The audit log of operator actions (keyset paging; newest first by default)",
      request: {
        query: z.object({
          target: text().min(1).optional(),
          targetKind: z.enum(["job", "queue", "schedule"]).optional(),
          order: z.enum(["newestFirst", "oldestFirst"]).optional(),
          ...PAGE_QUERY,
        }),
      },
      responses: { 200: jsonAnswer("One page", AuditPageSchema), ...errorResponses(400, 422, 503) },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const paging = pageOf(q, bound);
      const page = await store.listAuditRecords({
        ...(q.target === undefined ? {} : { target: q.target }),
        ...(q.targetKind === undefined ? {} : { targetKind: q.targetKind }),
        order: q.order ?? "newestFirst",
        ...paging,
      });
      return c.json(page as never, 200);
    },
  );

  view(
    createRoute({
      method: "get",
      path: "/workflows",
      tags: ["workflows"],
      summary: "Workflows, oldest first, with their derived status",
      request: {
        query: z.object({
          ...PAGE_QUERY,
        }),
      },
      responses: { 200: jsonAnswer("One page", WorkflowPageSchema), ...errorResponses(400, 422, 503) },
    }),
    async (c) => {
      const page = await store.listWorkflows(pageOf(c.req.valid("query"), bound));
      return c.json(page as never, 200);
    },
  );

  viewItem(app, ctx, { path: "/workflows/{id}", tag: "workflows", summary: "A workflow and its member jobs (first page, oldest first)", answer: ["The workflow", WorkflowDetailSchema], kind: "workflow", get: (id) => store.getWorkflow(id) }, async (workflow, id) => {
    const page = await store.listJobs({ workflowId: id, order: "oldestFirst", limit: bound });
    return { workflow, jobs: page.jobs, nextCursor: page.nextCursor };
  });

  view(
    createRoute({
      method: "get",
      path: "/tags/facets",
      tags: ["tags"],
      summary: "Distinct jobs per value of one tag key (key empty = labels), within the jobs filter",
      request: {
        query: ListJobsQuery.omit({ order: true, after: true, limit: true }).extend({
          key: text().optional().openapi({ description: "Tag key; omit or empty for labels" }),
          max: IntParam.openapi(intParamDoc("Top values kept (default 20)")),
        }),
      },
      responses: { 200: jsonAnswer("Facet values", FacetsSchema), ...errorResponses(400, 422, 503) },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const { order: _o, after: _a, limit: _l, ...scope } = listRequestOf(q, bound);
      const key = q.key ?? "";
      const values = await store.facetTags({ key, scope, max: q.max ?? 20 }).catch((e: unknown) => Promise.reject(toHttpError(e, filterField)));
      return c.json({ key, values } as never, 200);
    },
  );

  view(
    createRoute({
      method: "get",
      path: "/tags/suggestions",
      tags: ["tags"],
      summary: "Prefix completion over every tag: labels then keys, or one key's values",
      request: {
        query: z.object({
          prefix: text().optional(),
          key: text().optional(),
          after: text().min(1).optional(),
          max: IntParam.openapi(intParamDoc("Suggestions per page")),
        }),
      },
      responses: { 200: jsonAnswer("Suggestions", SuggestionsSchema), ...errorResponses(400, 503) },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const page = await store.suggestTags({
        prefix: q.prefix ?? "",
        ...(q.key === undefined ? {} : { key: q.key }),
        ...(q.after === undefined ? {} : { after: q.after }),
        ...(q.max === undefined ? {} : { max: q.max }),
      });
      return c.json({ suggestions: page.suggestions.map((s) => ({ ...s, text: suggestionText(s) })), nextCursor: page.nextCursor } as never, 200);
    },
  );

  viewCollection(app, ctx, { name: "observers", item: ObserverSchema, summary: "Transition observers: cursor, lag, dead letters" }, async (now) =>
    (await store.listObservers()).map((o) => observerView(o, now)),
  );

  viewItem(app, ctx, { path: "/observers/{id}", tag: "observers", summary: "One observer with its dead letters (their errors with viewSensitive)", answer: ["The observer", ObserverDetailSchema], kind: "observer", get: (id) => store.getObserver(id) }, async (status, id, c) => {
    const sensitive = await maySeeSensitive(ctx, c);
    const deadLetters = (await store.listObserverDeadLetters(id)).map(({ observerId: _id, ...d }) => ({
      ...d,
      error: sensitive ? d.error : null,
    }));
    return { observer: observerView(status, clock.now()), deadLetters };
  });

  view(
    createRoute({
      method: "get",
      path: "/throughput",
      tags: ["monitoring"],
      summary: "Executions finished per 5-second bucket over the last 5 minutes (this process's view)",
      responses: { 200: jsonAnswer("Buckets, oldest first", ThroughputSchema) },
    }),
    async (c) => {
      return c.json({ bucketSeconds: 5, buckets: ctx.throughput.series(clock.now(), 5, 60) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/health",
      tags: ["monitoring"],
      summary: "The server's store and embedded worker",
      responses: { 200: jsonAnswer("Health", HealthSchema) },
    }),
    async (c) => c.json({ status: "ok" as const, store: store.capabilities.name, worker: ctx.workerHealth() } as never, 200),
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/me",
      tags: ["monitoring"],
      summary: "Who the bearer token is and what it may do",
      responses: { 200: jsonAnswer("Actor and permissions", MeSchema) },
    }),
    async (c) => {
      const results = await Promise.all(PERMISSIONS.map(async (p) => [p, await ctx.access.check(c.req.raw, p)] as const));
      const actor = results.find(([, r]) => r.allowed)?.[1].actor ?? results[0]![1].actor;
      return c.json({ actor, permissions: results.filter(([, r]) => r.allowed).map(([p]) => p) }, 200);
    },
  );

}
