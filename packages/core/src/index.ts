/**
 * `@belay/core` — typed jobs, the client, the worker, and the pure Core they stand on.
 */
export { defineJob } from "./define-job.js";
export type { JobDefinition, AnyJobDefinition, JobHandler, PayloadOf, OutputOf } from "./define-job.js";
export { JobAbortedError, PermanentJobError } from "./job-context.js";
export type { JobContext } from "./job-context.js";
export { Client, PayloadInvalidError, request, encodePayload } from "./client.js";
export type { CoreErrorCode } from "./client.js";
export type {
  EnqueueOptions,
  EnqueueReceipt,
  JobRequest,
  ScheduleOptions,
  TransactionOptions,
  ActorOptions,
} from "./client.js";
export { Worker } from "./worker.js";
export type { WorkerOptions, WorkerGroupOptions, WorkerEvent, WorkerHealth, PumpHealth } from "./worker.js";
export type { ObserverOptions, ObserversHealth } from "./observer-dispatcher.js";
export { belayTelemetry, BelayTelemetry, TELEMETRY_SCOPE } from "./telemetry.js";
export type { BelayTelemetryOptions } from "./telemetry.js";
export type { OtelApi, OtelTracerProvider, OtelMeterProvider } from "./otel-api.js";
export { formatTraceContext, parseTraceContext } from "./trace-context.js";
export type { CarriedSpanContext } from "./trace-context.js";
export { parseTags, formatTag } from "./tags.js";
export type { TagInput } from "./tags.js";
export { systemClock } from "./clock.js";
export type { Clock, TimerHandle } from "./clock.js";
export { consoleLogger, silentLogger } from "./logger.js";
export type { Logger } from "./logger.js";
export { createJobId } from "./ids.js";

// The pure Core: decisions without I/O or clocks.
export {
  retryPolicy,
  decideFailure,
  jitteredDelay,
  toDisposition,
  effectiveRetryPolicy,
  DEFAULT_RETRY_POLICY,
  DEFAULT_DELAYS_MS,
} from "./retry.js";
export type { RetryPolicy, RetryOptions, FailureDecision } from "./retry.js";
export { planClaims, servedQueues } from "./dispatch.js";
export type { DispatchPolicy, ServedQueue, PlannedClaim } from "./dispatch.js";
export { parseCron, planSchedule, MISSED_TICK_THRESHOLD_MS, MAX_TICKS_PER_PASS } from "./cron-planner.js";
export type { CronSchedule, PlannableSchedule } from "./cron-planner.js";
export { NodeDriver } from "./driver.js";
export { classifyStoreFault } from "./fault-policy.js";
export type {
  DriverConfig,
  DriverEvent,
  DriverCommand,
  DriverSnapshot,
  ExecutionResult,
  MaintenanceTask,
  AbortReason,
  StoreFault,
} from "./driver-types.js";
