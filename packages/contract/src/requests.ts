import type { Bounds } from "./bounds.js";
import { checkJobName, checkPayload, checkRetryDisposition, normalizeTags } from "./enqueue.js";
import { BoundExceededError, InvalidInputError, errorFromRejection } from "./errors.js";
import type { ClaimRequest, ExpireLeasesRequest, HeartbeatRequest, ReleaseRequest, ReportOutcomesRequest } from "./execution.js";
import {
  requireStorableString, requireArray, requireId, requireInstant, requireInteger, requireQueue, requireStates, requireText,
} from "./input.js";
import type { EnqueueRequest } from "./enqueue.js";
import type { FacetRequest, JobFilter, ListJobsRequest, SuggestTagsRequest } from "./monitoring.js";
import type { EnqueueWorkflowRequest, ListWorkflowsRequest } from "./workflows.js";
import type { ClaimObserverDeliveriesRequest, RegisterObserverRequest, ReportObserverDeliveriesRequest } from "./observers.js";
import type { JobActionRequest, ListAuditRequest, QueueActionRequest, SetConcurrencyLimitRequest } from "./operator.js";
import type { AcquireMaintainerLeaseRequest, ReleaseMaintainerLeaseRequest } from "./maintainer.js";
import type { PurgeTerminalRequest } from "./retention.js";
import {
  type MintDueRequest, type ScheduleDefinition, SCHEDULED_JOB_ID_SUFFIX_LENGTH, type TriggerScheduleRequest,
  type UpsertScheduleRequest,
} from "./schedules.js";

import { MAX_COUNT, MAX_DURATION_MS } from "./text.js";

// One assertion per operation, shared by every store so that a malformed request meets the same
// InvalidInputError (naming the same field) whichever store receives it. Each runs before the
// store touches data. Size bounds that clamp (batches, pages) are not errors.

function requireObject(value: unknown, field: string): void {
  if (typeof value !== "object" || value === null) throw new InvalidInputError(field, "must be an object");
}

function requireLeases(value: unknown, bounds: Bounds): void {
  const leases = requireArray<unknown>(value, "leases");
  for (const [i, lease] of leases.entries()) {
    requireObject(lease, `leases[${i}]`);
    const { jobId, attempt } = lease as { jobId: unknown; attempt: unknown };
    requireId(jobId, `leases[${i}].jobId`, bounds);
    requireInteger(attempt, `leases[${i}].attempt`, 1, MAX_COUNT);
  }
}

function requireQueues(value: unknown, field: string, bounds: Bounds): void {
  const queues = requireArray<unknown>(value, field);
  for (const [i, queue] of queues.entries()) requireQueue(queue, `${field}[${i}]`, bounds);
}

/** The terms of a claim (of jobs, of observer deliveries): up to `max`, under a lease of `leaseMs`, at `now`. */
function requireLeasedBatch(request: Pick<ClaimRequest, "max" | "leaseMs" | "now">): void {
  requireInteger(request.max, "max", 1);
  requireInteger(request.leaseMs, "leaseMs", 1, MAX_DURATION_MS);
  requireInstant(request.now, "now");
}

export function assertClaimRequest(request: ClaimRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.workerId, "workerId", bounds);
  requireQueues(request.queues, "queues", bounds);
  requireLeasedBatch(request);
}

export function assertReportOutcomesRequest(request: ReportOutcomesRequest, bounds: Bounds): void {
  requireObject(request, "request");
  const reports = requireArray<unknown>(request.reports, "reports");
  for (const [i, raw] of reports.entries()) {
    const at = `reports[${i}]`;
    requireObject(raw, at);
    const report = raw as ReportOutcomesRequest["reports"][number];
    requireId(report.jobId, `${at}.jobId`, bounds);
    requireId(report.workerId, `${at}.workerId`, bounds);
    requireInteger(report.attempt, `${at}.attempt`, 1, MAX_COUNT);
    requireObject(report.outcome, `${at}.outcome`);
    const { outcome } = report;
    switch (outcome.type) {
      case "succeeded":
        if (outcome.output != null) requireStorableString(outcome.output, `${at}.outcome.output`);
        break;
      case "failed":
        if (outcome.retryAt !== null) requireInstant(outcome.retryAt, `${at}.outcome.retryAt`);
        if (outcome.failureDetail != null && typeof outcome.failureDetail !== "string") {
          throw new InvalidInputError(`${at}.outcome.failureDetail`, "must be a string or null");
        }
        break;
      case "cancelled":
        break;
      case "unroutable":
        requireText(outcome.reason, `${at}.outcome.reason`);
        break;
      default:
        throw new InvalidInputError(`${at}.outcome.type`, "must be succeeded, failed, cancelled or unroutable");
    }
    if (report.addTags !== undefined) requireArray(report.addTags, `${at}.addTags`);
  }
  requireInstant(request.now, "now");
}

export function assertHeartbeatRequest(request: HeartbeatRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.workerId, "workerId", bounds);
  requireLeases(request.leases, bounds);
  requireInteger(request.leaseMs, "leaseMs", 1, MAX_DURATION_MS);
  requireInstant(request.now, "now");
}

export function assertReleaseRequest(request: ReleaseRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.workerId, "workerId", bounds);
  requireLeases(request.leases, bounds);
  requireInstant(request.now, "now");
}

export function assertExpireLeasesRequest(request: ExpireLeasesRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireInstant(request.now, "now");
  requireInteger(request.max, "max", 1);
  if (request.queues !== undefined) requireQueues(request.queues, "queues", bounds);
  requireObject(request.retry, "retry");
  requireInteger(request.retry.maxAttempts, "retry.maxAttempts", 1, MAX_COUNT);
  const delays = requireArray<unknown>(request.retry.delaysMs, "retry.delaysMs");
  for (const [i, delay] of delays.entries()) requireInteger(delay, `retry.delaysMs[${i}]`, 0, MAX_DURATION_MS);
}

/** Checks a schedule definition; the cron text itself is the Core's to parse. */
export function assertScheduleDefinition(schedule: ScheduleDefinition, bounds: Bounds): void {
  requireObject(schedule, "schedule");
  requireId(schedule.id, "schedule.id", bounds);
  const idLimit = bounds.idLength - SCHEDULED_JOB_ID_SUFFIX_LENGTH;
  if (schedule.id.length > idLimit) {
    throw new BoundExceededError("BELAY_ID_TOO_LONG", { field: "schedule.id", limit: idLimit, actual: schedule.id.length });
  }
  requireText(schedule.cron, "schedule.cron");
  requireText(schedule.timeZone, "schedule.timeZone");
  const nameProblem = checkJobName(schedule.jobName, "schedule.jobName", bounds);
  if (nameProblem) throw errorFromRejection(nameProblem);
  requireQueue(schedule.queue, "schedule.queue", bounds);
  const payloadProblem = checkPayload(schedule.payload, "schedule.payload", bounds);
  if (payloadProblem) throw errorFromRejection(payloadProblem);
  const tags = normalizeTags(schedule.tags ?? [], "schedule.tags", bounds);
  if (!tags.ok) throw errorFromRejection(tags.rejection);
  if (schedule.catchUp !== "skip" && schedule.catchUp !== "coalesce") {
    throw new InvalidInputError("schedule.catchUp", "must be skip or coalesce");
  }
  if (typeof schedule.noOverlap !== "boolean") throw new InvalidInputError("schedule.noOverlap", "must be a boolean");
  const retry = checkRetryDisposition(schedule.retry ?? null, "schedule.retry");
  if (retry !== null && "code" in retry) throw errorFromRejection(retry);
}

export function assertMintDueRequest(request: MintDueRequest, bounds: Bounds): void {
  requireObject(request, "request");
  const decisions = requireArray<unknown>(request.decisions, "decisions");
  for (const [i, raw] of decisions.entries()) {
    const at = `decisions[${i}]`;
    requireObject(raw, at);
    const decision = raw as MintDueRequest["decisions"][number];
    requireId(decision.scheduleId, `${at}.scheduleId`, bounds);
    requireInstant(decision.expectedCursor, `${at}.expectedCursor`);
    requireInstant(decision.newCursor, `${at}.newCursor`);
    if (decision.newCursor < decision.expectedCursor) {
      throw new InvalidInputError(`${at}.newCursor`, "must not move the cursor backwards");
    }
    for (const [j, tick] of requireArray<unknown>(decision.mint, `${at}.mint`).entries()) requireInstant(tick, `${at}.mint[${j}]`);
    for (const [j, tick] of requireArray<unknown>(decision.skip, `${at}.skip`).entries()) requireInstant(tick, `${at}.skip[${j}]`);
  }
  requireInstant(request.now, "now");
}

export function assertTriggerScheduleRequest(request: TriggerScheduleRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.scheduleId, "scheduleId", bounds);
  requireId(request.jobId, "jobId", bounds);
  requireText(request.actor, "actor");
  requireInstant(request.now, "now");
}

export function assertJobActionRequest(request: JobActionRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.jobId, "jobId", bounds);
  requireText(request.actor, "actor");
  requireInstant(request.now, "now");
}

export function assertQueueActionRequest(request: QueueActionRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireQueue(request.queue, "queue", bounds);
  requireText(request.actor, "actor");
  requireInstant(request.now, "now");
}

export function assertSetConcurrencyLimitRequest(request: SetConcurrencyLimitRequest, bounds: Bounds): void {
  assertQueueActionRequest(request, bounds);
  if (request.limit !== null) requireInteger(request.limit, "limit", 1, MAX_COUNT);
}

function requirePageLimit(limit: unknown, field = "limit"): void {
  if (limit !== undefined) requireInteger(limit, field, 1);
}

export function assertJobFilter(filter: JobFilter, field: string, bounds: Bounds): void {
  requireObject(filter, field);
  const prefix = field === "request" ? "" : `${field}.`;
  if (filter.ids !== undefined) {
    const ids = requireArray<unknown>(filter.ids, `${prefix}ids`);
    if (ids.length > bounds.monitorPage) throw new InvalidInputError(`${prefix}ids`, `must hold at most ${bounds.monitorPage} ids (monitorPage), got ${ids.length}`);
    for (const [i, id] of ids.entries()) requireId(id, `${prefix}ids[${i}]`, bounds);
  }
  if (filter.states !== undefined) requireStates(filter.states, `${prefix}states`);
  if (filter.queues !== undefined) requireQueues(filter.queues, `${prefix}queues`, bounds);
  if (filter.jobNames !== undefined) {
    for (const [i, name] of requireArray<unknown>(filter.jobNames, `${prefix}jobNames`).entries()) {
      requireText(name, `${prefix}jobNames[${i}]`);
    }
  }
  if (filter.scheduleId !== undefined) requireText(filter.scheduleId, `${prefix}scheduleId`);
  if (filter.workflowId !== undefined) requireText(filter.workflowId, `${prefix}workflowId`);
  if (filter.tags !== undefined) {
    for (const [i, predicate] of requireArray<unknown>(filter.tags, `${prefix}tags`).entries()) {
      requireObject(predicate, `${prefix}tags[${i}]`);
      const p = predicate as Record<string, unknown>;
      if ("label" in p) requireText(p["label"], `${prefix}tags[${i}].label`);
      else {
        requireText(p["key"], `${prefix}tags[${i}].key`);
        if ("value" in p) requireText(p["value"], `${prefix}tags[${i}].value`);
      }
    }
  }
}

export function assertListJobsRequest(request: ListJobsRequest, bounds: Bounds): void {
  assertJobFilter(request, "request", bounds);
  if (request.order !== undefined && request.order !== "oldestFirst" && request.order !== "newestFirst") {
    throw new InvalidInputError("order", "must be oldestFirst or newestFirst");
  }
  if (request.after !== undefined && typeof request.after !== "string") throw new InvalidInputError("after", "must be a cursor string");
  requirePageLimit(request.limit);
}

export function assertListAuditRequest(request: ListAuditRequest): void {
  requireObject(request, "request");
  if (request.target !== undefined) requireText(request.target, "target");
  if (request.targetKind !== undefined && !["job", "queue", "schedule"].includes(request.targetKind)) {
    throw new InvalidInputError("targetKind", "must be job, queue or schedule");
  }
  if (request.order !== undefined && request.order !== "oldestFirst" && request.order !== "newestFirst") {
    throw new InvalidInputError("order", "must be oldestFirst or newestFirst");
  }
  requirePageLimit(request.limit);
}

export function assertAcquireMaintainerLeaseRequest(request: AcquireMaintainerLeaseRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.holder, "holder", bounds);
  requireInteger(request.leaseMs, "leaseMs", 1, MAX_DURATION_MS);
  requireInstant(request.now, "now");
}

export function assertReleaseMaintainerLeaseRequest(request: ReleaseMaintainerLeaseRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.holder, "holder", bounds);
}

export function assertPurgeTerminalRequest(request: PurgeTerminalRequest): void {
  requireObject(request, "request");
  if (request.retentionClass !== "succeededOrCancelled" && request.retentionClass !== "deadLetteredOrQuarantined") {
    throw new InvalidInputError("retentionClass", "must be succeededOrCancelled or deadLetteredOrQuarantined");
  }
  requireInstant(request.before, "before");
  requireInteger(request.max, "max", 1);
}

export function assertRegisterObserverRequest(request: RegisterObserverRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireObject(request.subscription, "subscription");
  const { subscription } = request;
  requireId(subscription.observerId, "subscription.observerId", bounds);
  const states = requireStates(subscription.states, "subscription.states");
  if (states.length === 0) throw new InvalidInputError("subscription.states", "must name at least one state");
  if (subscription.jobNames !== undefined) {
    for (const [i, name] of requireArray<unknown>(subscription.jobNames, "subscription.jobNames").entries()) {
      requireText(name, `subscription.jobNames[${i}]`);
    }
  }
  if (subscription.queues !== undefined) requireQueues(subscription.queues, "subscription.queues", bounds);
  if (request.startAt !== undefined && request.startAt !== "beginning" && request.startAt !== "end") {
    throw new InvalidInputError("startAt", "must be beginning or end");
  }
  requireInstant(request.now, "now");
}

export function assertClaimObserverDeliveriesRequest(request: ClaimObserverDeliveriesRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.observerId, "observerId", bounds);
  requireId(request.workerId, "workerId", bounds);
  requireLeasedBatch(request);
}

export function assertReportObserverDeliveriesRequest(request: ReportObserverDeliveriesRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireId(request.observerId, "observerId", bounds);
  requireId(request.workerId, "workerId", bounds);
  for (const [i, raw] of requireArray<unknown>(request.outcomes, "outcomes").entries()) {
    requireObject(raw, `outcomes[${i}]`);
    const outcome = raw as ReportObserverDeliveriesRequest["outcomes"][number];
    requireInteger(outcome.position, `outcomes[${i}].position`, 1);
    if (outcome.outcome === "retry") requireInstant(outcome.retryAt, `outcomes[${i}].retryAt`);
    else if (outcome.outcome === "deadLettered") requireText(outcome.error, `outcomes[${i}].error`);
    else if (outcome.outcome !== "delivered") {
      throw new InvalidInputError(`outcomes[${i}].outcome`, "must be delivered, retry or deadLettered");
    }
  }
  requireInstant(request.now, "now");
}

export function assertEnqueueRequest(request: Omit<EnqueueRequest, "tx">): void {
  requireObject(request, "request");
  requireArray(request.jobs, "jobs");
  requireInstant(request.now, "now");
  if (request.actor !== undefined) requireText(request.actor, "actor");
}

export function assertEnqueueWorkflowRequest(request: Omit<EnqueueWorkflowRequest, "tx">): void {
  requireObject(request, "request");
  requireObject(request.workflow, "workflow");
  requireInstant(request.now, "now");
}

export function assertUpsertScheduleRequest(request: UpsertScheduleRequest, bounds: Bounds): void {
  requireObject(request, "request");
  assertScheduleDefinition(request.schedule, bounds);
  requireInstant(request.now, "now");
  if (request.actor !== undefined) requireText(request.actor, "actor");
}

/** Checks the id of a lookup (`getJob`, `getSchedule`, …): any string; an unknown id is a `null` answer, not an error. */
export function assertLookupId(value: unknown, field: string): void {
  requireStorableString(value, field);
}

export function assertFacetRequest(request: FacetRequest, bounds: Bounds): void {
  requireObject(request, "request");
  requireStorableString(request.key, "key");
  if (request.scope !== undefined) assertJobFilter(request.scope, "scope", bounds);
  requirePageLimit(request.max, "max");
}

export function assertSuggestTagsRequest(request: SuggestTagsRequest): void {
  requireObject(request, "request");
  requireStorableString(request.prefix, "prefix");
  if (request.key !== undefined) requireStorableString(request.key, "key");
  if (request.after !== undefined && typeof request.after !== "string") throw new InvalidInputError("after", "must be a cursor string");
  requirePageLimit(request.max, "max");
}

export function assertListWorkflowsRequest(request: ListWorkflowsRequest): void {
  requireObject(request, "request");
  if (request.after !== undefined && typeof request.after !== "string") throw new InvalidInputError("after", "must be a cursor string");
  requirePageLimit(request.limit, "limit");
}
