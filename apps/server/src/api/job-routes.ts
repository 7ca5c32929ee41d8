import {
  type CancelResult, JOB_STATES, type JobActionRequest, type JobState, type ListJobsRequest, type RequeueResult, type TagPredicate,
} from "@belay/contract";
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { type ServerContext, parseJson } from "../context.js";
import { HttpError, badRequest, found, notFound, toHttpError } from "../http/errors.js";
import { jsonBody } from "../http/json-body.js";
import { enqueueJobs, enqueueWorkflow } from "../operations/enqueue.js";
import { maySeeSensitive, requirePermission, viewItem, viewRoutes } from "./guard.js";
import { errorResponses, jsonAnswer, jsonRequest } from "./route-docs.js";
import {
  ActionResultSchema, DependenciesSchema, EnqueueRequestSchema, EnqueueResponseSchema, IdParam, IntParam, JobDetailSchema,
  JobPageSchema, ListParam, TagListParam, WorkflowEnqueueResponseSchema, WorkflowRequestSchema, intParamDoc, text,
} from "./schemas.js";

/** `label`, `key=value` or `key=*` as a tag predicate. */
export function parseTagPredicate(text: string, field: string): TagPredicate {
  const at = text.indexOf("=");
  if (at < 0) return { label: text };
  const key = text.slice(0, at);
  const value = text.slice(at + 1);
  if (key.length === 0) throw badRequest(field, "a keyed tag needs a key before =");
  if (value === "*") return { key };
  if (value.length === 0) throw badRequest(field, "a keyed tag needs a value after = (or * for any)");
  return { key, value };
}

/** Parses states named in a query; 400 naming `field` for an unknown one. */
export function parseStates(values: readonly string[] | undefined, field: string): JobState[] | undefined {
  if (values === undefined) return undefined;
  for (const value of values) {
    if (!JOB_STATES.includes(value as JobState)) throw badRequest(field, `unknown state ${value} (known: ${JOB_STATES.join(", ")})`);
  }
  return values as JobState[];
}

/** 422 for a page size above the store's monitoring page bound. */
export function checkPageLimit(limit: number | undefined, bound: number, field = "limit"): void {
  if (limit !== undefined && limit > bound) {
    throw new HttpError(422, {
      code: "BELAY_PAGE_TOO_LARGE",
      field,
      message: `${field} exceeds monitorPage: ${limit} > ${bound}`,
      bound: "monitorPage",
      limit: bound,
      actual: limit,
    });
  }
}

/**
 * The paging part of a listing request (the cursor, the page size: 50 by default), from a query
 * whose page size was checked against the store's monitoring page bound first.
 */
export function pageOf(query: { readonly after?: string | undefined; readonly limit?: number | undefined }, bound: number): { after?: string; limit: number } {
  checkPageLimit(query.limit, bound);
  return { ...(query.after === undefined ? {} : { after: query.after }), limit: query.limit ?? 50 };
}

/**
 * A store's field of a jobs filter as the query names it (`scope.queues[0]` → `queue`), for
 * the errors a store raises about a filter the query passed on.
 */
export function filterField(field: string): string {
  const name = field.replace(/^scope\./, "").replace(/\[\d+\].*$/, "");
  const names: Record<string, string> = { states: "state", queues: "queue", jobNames: "jobName", tags: "tag" };
  return names[name] ?? name;
}

/** The query of `GET /jobs` (and of the tag facets, without paging). */
export const ListJobsQuery = z.object({
  state: ListParam.openapi({ description: "States (repeat or comma-separate)", type: "string" }),
  queue: ListParam.openapi({ type: "string" }),
  jobName: ListParam.openapi({ type: "string" }),
  scheduleId: text().min(1).optional(),
  workflowId: text().min(1).optional(),
  tag: TagListParam.openapi({ description: "Tags all jobs must have: label, key=value, or key=* (any value)", type: "string" }),
  order: z.enum(["newestFirst", "oldestFirst"]).optional().openapi({ description: "Default newestFirst" }),
  after: text().min(1).optional().openapi({ description: "nextCursor of the previous page" }),
  limit: IntParam.openapi(intParamDoc("Page size (default 50); above the store's monitorPage bound (default 200) gets 422")),
});

/** A listing request from the jobs query (shared by the dashboard). */
export function listRequestOf(query: z.output<typeof ListJobsQuery>, bound: number): ListJobsRequest {
  const page = pageOf(query, bound);
  const states = parseStates(query.state, "state");
  const tags = query.tag?.map((t) => parseTagPredicate(t, "tag"));
  return {
    ...(states === undefined ? {} : { states }),
    ...(query.queue === undefined ? {} : { queues: query.queue }),
    ...(query.jobName === undefined ? {} : { jobNames: query.jobName }),
    ...(query.scheduleId === undefined ? {} : { scheduleId: query.scheduleId }),
    ...(query.workflowId === undefined ? {} : { workflowId: query.workflowId }),
    ...(tags === undefined ? {} : { tags }),
    order: query.order ?? "newestFirst",
    ...page,
  };
}

/** The job routes: enqueue, list, show, dependencies, cancel, requeue, enqueue a workflow. */
export function registerJobRoutes(app: OpenAPIHono, ctx: ServerContext): void {
  const view = viewRoutes(app, ctx);
  const { store, catalog, clock } = ctx;

  app.openapi(
    createRoute({
      method: "post",
      path: "/jobs",
      tags: ["jobs"],
      summary: "Enqueue one or many jobs, atomically",
      description:
        "All jobs are written or none. A repeated id returns the existing job (`duplicate`). When the server knows the job definitions, each payload is validated by its job's schema and the queue defaults to the definition's.",
      middleware: [jsonBody],
      request: { body: jsonRequest(EnqueueRequestSchema) },
      responses: {
        201: jsonAnswer("At least one job created", EnqueueResponseSchema),
        200: jsonAnswer("Every job already existed", EnqueueResponseSchema),
        ...errorResponses(400, 401, 403, 413, 415, 422, 503),
      },
    }),
    async (c) => {
      await requirePermission(ctx, c, "enqueue");
      const { jobs } = c.req.valid("json");
      const receipts = await enqueueJobs(store, catalog, jobs, clock.now());
      return c.json({ jobs: receipts }, receipts.some((r) => r.status === "created") ? 201 : 200);
    },
  );

  view(
    createRoute({
      method: "get",
      path: "/jobs",
      tags: ["jobs"],
      summary: "List jobs (filters, keyset paging)",
      request: { query: ListJobsQuery },
      responses: {
        200: jsonAnswer("One page", JobPageSchema),
        ...errorResponses(400, 422, 503),
      },
    }),
    async (c) => {
      const request = listRequestOf(c.req.valid("query"), store.capabilities.bounds.monitorPage);
      const page = await store.listJobs(request).catch((e: unknown) => Promise.reject(toHttpError(e, filterField)));
      return c.json(page as never, 200);
    },
  );

  view(
    createRoute({
      method: "get",
      path: "/jobs/{id}",
      tags: ["jobs"],
      summary: "A job with its history and dependencies",
      description:
        "Payload, output and failure detail are included only for a caller with viewSensitive; `?sensitive=true` insists (401/403 otherwise).",
      request: {
        params: IdParam,
        query: z.object({ sensitive: z.enum(["true", "false"]).optional() }),
      },
      responses: {
        200: jsonAnswer("The job", JobDetailSchema),
        ...errorResponses(400, 401, 403, 404, 503),
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const { sensitive: insist } = c.req.valid("query");
      const sensitive = insist === "true" ? (await requirePermission(ctx, c, "viewSensitive"), true) : await maySeeSensitive(ctx, c);
      const job = found("job", id, await store.getJob(id));
      const [history, dependencies, output] = await Promise.all([
        store.getJobHistory(id),
        store.getDependencies(id),
        sensitive ? store.getJobOutput(id) : Promise.resolve(null),
      ]);
      const { payload, ...summary } = job;
      return c.json(
        {
          job: summary,
          sensitive,
          ...(sensitive ? { payload: parseJson(payload), output: parseJson(output) } : {}),
          history: history.map(({ jobId: _jobId, ...t }) => ({ ...t, failureDetail: sensitive ? t.failureDetail : null })),
          historyPolicy: store.capabilities.historyPolicy,
          dependencies: dependencies ?? { parents: [], children: [] },
        } as never,
        200,
      );
    },
  );

  viewItem(app, ctx, { path: "/jobs/{id}/dependencies", tag: "jobs", summary: "A job's parents and children with their states", answer: ["Edges", DependenciesSchema], kind: "job", get: (id) => store.getDependencies(id) }, (edges) => edges);

  // Cancel and requeue answer alike: the result's status, or 409 naming the state that refused the action.
  const jobActions = [
    {
      action: "cancel",
      summary: "Cancel a pending job, or ask a running one to stop",
      description: "`cancelled` at once, or `cancelRequested` for a leased job (its handler's signal fires). Audited.",
      done: "Done",
      refused: { status: "notCancellable", code: "BELAY_NOT_CANCELLABLE" },
      run: (request: JobActionRequest): Promise<CancelResult | RequeueResult> => store.cancelJob(request),
    },
    {
      action: "requeue",
      summary: "Schedule a dead-lettered or quarantined job again (attempts reset)",
      done: "Requeued",
      refused: { status: "notRequeueable", code: "BELAY_NOT_REQUEUEABLE" },
      run: (request: JobActionRequest): Promise<CancelResult | RequeueResult> => store.requeueJob(request),
    },
  ] as const;
  for (const { action, summary, done, refused, run, ...rest } of jobActions) {
    app.openapi(
      createRoute({
        method: "post",
        path: `/jobs/{id}/${action}`,
        tags: ["jobs"],
        summary,
        ...("description" in rest ? { description: rest.description } : {}),
        request: { params: IdParam },
        responses: { 200: jsonAnswer(done, ActionResultSchema), ...errorResponses(400, 401, 403, 404, 409, 413, 422, 503) },
      }),
      async (c) => {
        const actor = await requirePermission(ctx, c, action);
        const { id } = c.req.valid("param");
        const result = await run({ jobId: id, actor, now: clock.now() }).catch((e: unknown) => Promise.reject(toHttpError(e, () => "id")));
        if (result.status === "notFound") throw notFound("job", id);
        if (result.status === refused.status) {
          throw new HttpError(409, { code: refused.code, field: "id", message: `job ${id} is ${result.state}`, state: result.state });
        }
        return c.json({ status: result.status }, 200);
      },
    );
  }

  app.openapi(
    createRoute({
      method: "post",
      path: "/workflows",
      tags: ["workflows"],
      summary: "Enqueue a workflow: jobs joined by parents, written atomically",
      middleware: [jsonBody],
      request: { body: jsonRequest(WorkflowRequestSchema) },
      responses: {
        201: jsonAnswer("Created", WorkflowEnqueueResponseSchema),
        200: jsonAnswer("A workflow with this id exists; nothing changed", WorkflowEnqueueResponseSchema),
        ...errorResponses(400, 401, 403, 409, 413, 415, 422, 503),
      },
    }),
    async (c) => {
      await requirePermission(ctx, c, "enqueue");
      const body = c.req.valid("json");
      const result = await enqueueWorkflow(store, catalog, body, clock.now());
      return c.json(result as never, result.status === "created" ? 201 : 200);
    },
  );
}
