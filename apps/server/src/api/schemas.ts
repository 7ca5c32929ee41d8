import { JOB_STATES, MAX_COUNT, MAX_INSTANT, TRANSITION_CAUSES, type TransitionCause, textProblem } from "@belay/contract";
import { z } from "@hono/zod-openapi";
import { ISO_INSTANT_FORM, ISO_INSTANT_PATTERN, parseIsoInstant } from "./instants.js";

// The request and response shapes of the HTTP API. The OpenAPI document is generated from them,
// so what is validated is what is documented. Times are epoch milliseconds (UTC).

/**
 * Text a store holds faithfully (no NUL, no lone UTF-16 surrogate): the contract refuses other
 * text too, but checking it here names the request's own field (`id`, `tag`, `jobs[0].queue`)
 * and keeps it away from every store, whatever its driver would do with it.
 */
export function text() {
  return z.string().superRefine((value, ctx) => {
    const problem = textProblem(value);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  });
}

/** A path parameter: storable, non-empty text. */
export function pathParam(name: string) {
  return text().min(1).openapi({ param: { name, in: "path" } });
}

/** The `{id}` of a route's path. */
export const IdParam = z.object({ id: pathParam("id") });

/** Why `tag` is not `"label"` or `"key=value"`, with the part at fault (`value` for `"key="`). */
export function tagTextProblem(tag: string): { readonly part: "tag" | "value"; readonly message: string } | null {
  if (tag.length === 0) return { part: "tag", message: "a tag must not be empty" };
  const at = tag.indexOf("=");
  if (at === 0) return { part: "tag", message: 'a keyed tag needs a key before "="' };
  if (at === tag.length - 1) return { part: "value", message: 'a keyed tag needs a value after "="' };
  return null;
}

const TAG_PATTERN = "^[^=]+(=[\\s\\S]+)?$";

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "BELAY_INVALID_INPUT" }),
      field: z.string().nullable().openapi({ example: "jobs[0].payload" }),
      message: z.string(),
      bound: z.string().optional(),
      limit: z.number().int().optional(),
      actual: z.number().int().optional(),
      state: z.string().optional(),
    }),
  })
  .openapi("Error");

export const JobStateSchema = z.enum(JOB_STATES as [string, ...string[]]).openapi("JobState");

const TagText = text()
  .superRefine((tag, ctx) => {
    const problem = tagTextProblem(tag);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem.message, ...(problem.part === "value" ? { path: ["value"] } : {}) });
  })
  .openapi({ description: '"label" or "key=value" (the value may hold "=")', example: "tenant=acme", pattern: TAG_PATTERN });

/** A time: epoch milliseconds or strict ISO 8601 text, from 1970 to the end of year 9999. */
const InstantInput = z.union(
  [
    z
      .number()
      .int("must be a whole number of epoch milliseconds")
      .min(0, "must not be before 1970-01-01T00:00:00Z (0)")
      .max(MAX_INSTANT, `must not be after 9999-12-31T23:59:59.999Z (${MAX_INSTANT})`),
    text()
      .superRefine((value, ctx) => {
        const parsed = parseIsoInstant(value);
        if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.problem });
      })
      .openapi({ format: "date-time", pattern: ISO_INSTANT_PATTERN, example: "2030-01-01T09:00:00Z" }),
  ],
  { error: `must be epoch milliseconds or an ISO 8601 time ${ISO_INSTANT_FORM}` },
);

export const EnqueueJobSchema = z
  .object({
    id: text().optional().openapi({ description: "Idempotency key; a repeat returns the existing job (`duplicate`)." }),
    jobName: text().openapi({ example: "email.welcome" }),
    queue: text().optional().openapi({ description: "Default: the job definition's queue, else `default`." }),
    payload: z.unknown().optional().openapi({ description: "Any JSON value (validated by the job's schema when the server knows it)." }),
    runAt: InstantInput.optional().openapi({
      description: `Epoch milliseconds, or ISO 8601 text ${ISO_INSTANT_FORM} (a finer fraction is truncated to milliseconds); from 1970 to 9999-12-31T23:59:59.999Z. Exclusive with delayMs.`,
    }),
    delayMs: z
      .number()
      .int()
      .min(0)
      .max(MAX_INSTANT)
      .optional()
      .openapi({ description: "Due this many milliseconds from now; now + delayMs must not pass 9999-12-31T23:59:59.999Z." }),
    parents: z.array(text()).optional().openapi({ description: "Ids of jobs that must end first." }),
    dependencyMode: z.enum(["onSuccess", "onAnyTerminal"]).optional(),
    tags: z.array(TagText).optional(),
    traceContext: text().optional(),
  })
  .strict()
  .openapi("EnqueueJob");

export const EnqueueRequestSchema = z.object({ jobs: z.array(EnqueueJobSchema).min(1) }).strict().openapi("EnqueueRequest");

export const ReceiptSchema = z
  .object({ id: z.string(), status: z.enum(["created", "duplicate"]), state: JobStateSchema })
  .openapi("EnqueueReceipt");

export const EnqueueResponseSchema = z.object({ jobs: z.array(ReceiptSchema) }).openapi("EnqueueResponse");

export const WorkflowRequestSchema = z
  .object({ id: text().optional(), name: text(), jobs: z.array(EnqueueJobSchema).min(1) })
  .strict()
  .openapi("EnqueueWorkflowRequest");

export const WorkflowEnqueueResponseSchema = z
  .object({ id: z.string(), status: z.enum(["created", "duplicate"]), jobs: z.array(ReceiptSchema) })
  .openapi("EnqueueWorkflowResponse");

const TagSchema = z.object({ key: z.string(), value: z.string() }).openapi("Tag");

const RetryPolicySchema = z
  .object({ maxAttempts: z.number().int(), delaysMs: z.array(z.number().int()) })
  .openapi("RetryPolicy", { description: "The attempt ceiling (counted attempts: claims minus graceful releases) and the delay after each failed attempt; the last delay repeats." });

export const JobSummarySchema = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    jobName: z.string(),
    queue: z.string(),
    state: JobStateSchema,
    dueAt: z.number().int(),
    attempt: z.number().int(),
    releases: z.number().int(),
    leaseOwner: z.string().nullable(),
    leaseExpiresAt: z.number().int().nullable(),
    cancelRequested: z.boolean(),
    enqueuedAt: z.number().int(),
    terminalAt: z.number().int().nullable(),
    terminalCause: z.string().nullable(),
    parentIds: z.array(z.string()),
    dependencyMode: z.enum(["onSuccess", "onAnyTerminal"]),
    tags: z.array(TagSchema),
    traceContext: z.string().nullable(),
    scheduleId: z.string().nullable(),
    workflowId: z.string().nullable(),
    retry: RetryPolicySchema.nullable().openapi({ description: "The job's own retry policy (its job type's), or null: the worker group's applies." }),
  })
  .openapi("JobSummary");

export const JobPageSchema = z
  .object({ jobs: z.array(JobSummarySchema), nextCursor: z.string().nullable() })
  .openapi("JobPage");

export const TransitionSchema = z
  .object({
    ordinal: z.number().int(),
    position: z.number().int(),
    at: z.number().int(),
    state: JobStateSchema,
    cause: z
      .enum(TRANSITION_CAUSES as [TransitionCause, ...TransitionCause[]])
      .nullable()
      .openapi({ description: "Why the job entered this state; null only for a transition stored before causes were recorded." }),
    workerId: z.string().nullable().openapi({ description: "The worker whose write this was (for leaseExpired: the owner of the lapsed lease)." }),
    attempt: z.number().int(),
    failureDetail: z.string().nullable().openapi({ description: "Only with viewSensitive; else null." }),
  })
  .openapi("Transition");

export const DependenciesSchema = z
  .object({
    parents: z.array(z.object({ jobId: z.string(), state: JobStateSchema, gating: z.boolean() })),
    children: z.array(z.object({ jobId: z.string(), state: JobStateSchema })),
  })
  .openapi("Dependencies");

export const JobDetailSchema = z
  .object({
    job: JobSummarySchema,
    sensitive: z.boolean().openapi({ description: "Whether payload, output and failure detail are included." }),
    payload: z.unknown().optional().openapi({ description: "The payload JSON (viewSensitive only)." }),
    output: z.unknown().optional().openapi({ description: "The output JSON of a succeeded job (viewSensitive only)." }),
    history: z.array(TransitionSchema),
    historyPolicy: z.enum(["off", "transitions", "transitionsAndFailureDetail"]),
    dependencies: DependenciesSchema,
  })
  .openapi("JobDetail");

export const ActionResultSchema = z.object({ status: z.string() }).openapi("ActionResult");

export const CountsSchema = z
  .object({
    counts: z.array(z.object({ queue: z.string(), state: JobStateSchema, count: z.number().int() })),
    totals: z.record(z.string(), z.number().int()),
  })
  .openapi("Counts");

export const QueueSchema = z
  .object({
    queue: z.string(),
    paused: z.boolean(),
    concurrencyLimit: z.number().int().nullable(),
    counts: z.record(z.string(), z.number().int()),
    live: z.number().int(),
    total: z.number().int(),
  })
  .openapi("Queue");

export const LimitRequestSchema = z
  .object({ limit: z.number().int().min(1).max(MAX_COUNT).nullable().openapi({ description: "null removes the limit" }) })
  .strict()
  .openapi("ConcurrencyLimitRequest");

export const ScheduleSchema = z
  .object({
    id: z.string(),
    cron: z.string(),
    timeZone: z.string(),
    jobName: z.string(),
    queue: z.string(),
    tags: z.array(TagSchema),
    catchUp: z.enum(["skip", "coalesce"]),
    noOverlap: z.boolean(),
    retry: RetryPolicySchema.nullable().openapi({ description: "The retry policy every job it mints carries, or null." }),
    cursor: z.number().int(),
    skippedTicks: z.array(z.number().int()),
    hasLiveInstance: z.boolean(),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
    nextTicks: z.array(z.number().int()),
    payload: z.unknown().optional().openapi({ description: "viewSensitive only" }),
  })
  .openapi("Schedule");

export const ScheduleRequestSchema = z
  .object({
    cron: text().openapi({ example: "*/10 * * * * *", description: "5 fields, or 6 with seconds first" }),
    timeZone: text().optional().openapi({ example: "Europe/Paris" }),
    jobName: text(),
    queue: text().optional(),
    payload: z.unknown().optional(),
    tags: z.array(TagText).optional(),
    catchUp: z.enum(["skip", "coalesce"]).optional(),
    noOverlap: z.boolean().optional(),
  })
  .strict()
  .openapi("ScheduleRequest");

export const UpsertScheduleResponseSchema = z
  .object({ status: z.enum(["created", "updated"]), cursor: z.number().int() })
  .openapi("UpsertScheduleResult");

export const TriggerResponseSchema = z.object({ status: z.literal("triggered"), jobId: z.string() }).openapi("TriggerResult");

export const AuditPageSchema = z
  .object({
    records: z.array(
      z.object({
        seq: z.number().int(),
        at: z.number().int(),
        actor: z.string(),
        action: z.string(),
        targetKind: z.enum(["job", "queue", "schedule"]),
        target: z.string(),
        detail: z.string().nullable(),
      }),
    ),
    nextCursor: z.string().nullable(),
  })
  .openapi("AuditPage");

export const WorkflowSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    createdAt: z.number().int(),
    status: z.enum(["running", "succeeded", "failed", "cancelled"]),
    jobCount: z.number().int(),
    counts: z.record(z.string(), z.number().int()),
  })
  .openapi("Workflow");

export const WorkflowPageSchema = z
  .object({ workflows: z.array(WorkflowSchema), nextCursor: z.string().nullable() })
  .openapi("WorkflowPage");

export const WorkflowDetailSchema = z
  .object({ workflow: WorkflowSchema, jobs: z.array(JobSummarySchema), nextCursor: z.string().nullable() })
  .openapi("WorkflowDetail");

export const FacetsSchema = z
  .object({ key: z.string(), values: z.array(z.object({ value: z.string(), count: z.number().int() })) })
  .openapi("TagFacets");

export const SuggestionsSchema = z
  .object({
    suggestions: z.array(
      z.object({ kind: z.enum(["label", "key", "value"]), key: z.string().optional(), value: z.string().optional(), text: z.string() }),
    ),
    nextCursor: z.string().nullable(),
  })
  .openapi("TagSuggestions");

export const ObserverSchema = z
  .object({
    id: z.string(),
    states: z.array(JobStateSchema),
    jobNames: z.array(z.string()).nullable(),
    queues: z.array(z.string()).nullable(),
    cursor: z.number().int(),
    leaseOwner: z.string().nullable(),
    leaseExpiresAt: z.number().int().nullable(),
    pending: z.number().int(),
    oldestPendingAt: z.number().int().nullable(),
    lagMs: z.number().int().nullable(),
    deadLetters: z.number().int(),
  })
  .openapi("Observer");

export const ObserverDetailSchema = z
  .object({
    observer: ObserverSchema,
    deadLetters: z.array(
      z.object({
        position: z.number().int(),
        jobId: z.string(),
        state: JobStateSchema,
        attempt: z.number().int(),
        at: z.number().int(),
        deliveryAttempts: z.number().int(),
        deadLetteredAt: z.number().int(),
        error: z.string().nullable().openapi({ description: "viewSensitive only" }),
      }),
    ),
  })
  .openapi("ObserverDetail");

export const ThroughputSchema = z
  .object({
    bucketSeconds: z.number().int(),
    buckets: z.array(z.object({ at: z.number().int(), succeeded: z.number().int(), failed: z.number().int() })),
  })
  .openapi("Throughput");

export const HealthSchema = z
  .object({
    status: z.literal("ok"),
    store: z.string(),
    worker: z.unknown().nullable().openapi({ description: "The embedded worker's health, or null" }),
  })
  .openapi("Health");

export const MeSchema = z
  .object({ actor: z.string(), permissions: z.array(z.string()) })
  .openapi("Me");

/** A query parameter that may repeat (`?state=a&state=b`) or list values with commas; empty items are dropped. */
export const ListParam = z
  .union([text(), z.array(text())])
  .optional()
  .transform((v) => (v === undefined ? undefined : (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(",")).filter((s) => s.length > 0)));

/** Like {@link ListParam}, for tag filters: an empty item is a malformed tag, refused instead of dropped. */
export const TagListParam = z
  .union([text(), z.array(text())])
  .optional()
  .transform((v, ctx) => {
    if (v === undefined) return undefined;
    const items = (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(","));
    if (items.some((s) => s.length === 0)) {
      ctx.addIssue({ code: "custom", message: "a tag filter must not be empty (label, key=value or key=*)" });
      return z.NEVER;
    }
    return items;
  });

/** A query parameter holding an integer from 1 to 2^31 − 1 (what a 32-bit column holds). */
export const IntParam = z
  .string()
  .regex(/^\d{1,10}$/, `must be an integer from 1 to ${MAX_COUNT}`)
  .transform(Number)
  .refine((n) => n >= 1 && n <= MAX_COUNT, `must be an integer from 1 to ${MAX_COUNT}`)
  .optional();

/** The OpenAPI form of an {@link IntParam}. */
export function intParamDoc(description?: string) {
  return { type: "integer" as const, minimum: 1, maximum: MAX_COUNT, ...(description === undefined ? {} : { description }) };
}
