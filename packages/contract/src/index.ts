/**
 * `@belay/contract` — the Storage Contract every Belay store honours. Start at `job-store.ts`:
 * the glossary, the rules and the `JobStore` interface, top to bottom.
 */
export type { JobStore, StoreCapabilities, HintListener, StepHook, MigrateResult } from "./job-store.js";

export { CheckedJobStore, checkedJobStore } from "./checked-store.js";
export type { JobStoreOperations } from "./checked-store.js";
export { DelegatingOperations, DELEGATED_OPERATIONS, defineOperations } from "./delegating-operations.js";
export type {
  DelegatedOperationName, DelegatedOperations, OperationFunctions, OperationName, OperationRequest, OperationAnswer,
} from "./delegating-operations.js";

export type {
  QueryRow,
  QueryExecutor,
  EnqueuedThrough,
  EnqueueThroughRequest,
  EnqueueWorkflowThroughRequest,
  EnqueueThroughOperations,
} from "./through.js";

export { Mutex } from "./mutex.js";
export { Listeners } from "./listeners.js";
export { RandomSource, SeededRandom, hashText32, seededUnit } from "./random.js";
export { encodeTags, decodeTags, encodeIds, decodeIds, encodeRetry, decodeRetry } from "./row-encodings.js";

export { schemaVersionOf, assertSchemaUsable, schemaSurfaces } from "./migrations.js";
export type { Migration, MigrationSurface, SchemaState } from "./migrations.js";

export {
  TERMINAL_CAUSES,
  terminalCauseText,
  terminalCauseSql,
  jobStateNameSql,
  leaseExpiryDisposition,
  outcomeDisposition,
} from "./terminal-causes.js";
export type { TerminalCauseKind, TerminalCauseFacts, ExpiryDisposition, OutcomeDisposition } from "./terminal-causes.js";

export {
  JOB_STATES,
  JOB_STATE_CODES,
  jobStateFromCode,
  DEPENDENCY_MODES,
  DEPENDENCY_MODE_CODES,
  dependencyModeFromCode,
  TRANSITION_CAUSES,
  TRANSITION_CAUSE_CODES,
  transitionCauseFromCode,
  outcomeCause,
  isTerminalState,
  countedAttempts,
  retryDelayMs,
} from "./job.js";
export type {
  Instant,
  JobState,
  InitialJobState,
  DependencyMode,
  Tag,
  JobSummary,
  JobRecord,
  TransitionRecord,
  HistoryPolicy,
  RetryDisposition,
  TransitionCause,
} from "./job.js";

export { DEFAULT_BOUNDS, resolveBounds, clampToBound, utf8ByteLength, truncateUtf8 } from "./bounds.js";
export type { Bounds } from "./bounds.js";

export {
  BelayError,
  isBelayError,
  TransientStoreError,
  InvalidInputError,
  BoundExceededError,
  UnknownParentError,
  JobExistsError,
  TransactionNotSupportedError,
  InvalidTransactionError,
  SchemaVersionError,
  SchemaNotMigratedError,
  StoreClosedError,
  CapabilityNotSupportedError,
  errorFromRejection,
  boundRejection,
  BOUND_OF_CODE,
} from "./errors.js";
export type { BelayErrorCode, ContractErrorCode, BoundErrorCode, Rejection, StepPoint } from "./errors.js";

export {
  validateNewJob,
  normalizeTags,
  checkId,
  checkQueueName,
  checkJobName,
  checkPayload,
  checkRetryDisposition,
  MAX_RETRY_DELAYS,
  isInstant,
  INSTANT_PROBLEM,
  planEnqueue,
  refusedEnqueue,
  unknownParentRejection,
} from "./enqueue.js";
export { textProblem, storableText, failureDetailText, MAX_INSTANT, MAX_COUNT, MAX_DURATION_MS } from "./text.js";
export type { NewJob, NormalizedNewJob, EnqueueRequest, EnqueueResult, EnqueuePlan } from "./enqueue.js";

export type {
  ClaimRequest,
  ClaimResult,
  ClaimedJob,
  Outcome,
  OutcomeReport,
  ReportOutcomesRequest,
  OutcomeResult,
  HeldLease,
  HeartbeatRequest,
  HeartbeatResult,
  ReleaseRequest,
  ReleaseResult,
  ExpireLeasesRequest,
  ExpireLeasesResult,
  ExpiredLease,
} from "./execution.js";

export { mintsOverLiveInstance, scheduledJobId, SCHEDULED_JOB_ID_SUFFIX_LENGTH } from "./schedules.js";
export type {
  CatchUpPolicy,
  ScheduleDefinition,
  ScheduleRecord,
  ScheduleWithPayload,
  UpsertScheduleRequest,
  UpsertScheduleResult,
  RemoveScheduleResult,
  MintDecision,
  MintDueRequest,
  MintResult,
  TriggerScheduleRequest,
  TriggerScheduleResult,
} from "./schedules.js";

export type {
  Actor,
  JobActionRequest,
  CancelResult,
  RequeueResult,
  QueueActionRequest,
  SetConcurrencyLimitRequest,
  QueueActionResult,
  QueueSettings,
  AuditAction,
  AuditRecord,
  ListAuditRequest,
  AuditPage,
} from "./operator.js";
export { enqueueAuditRecords } from "./operator.js";

export {
  encodeSeqCursor,
  decodeSeqCursor,
  encodeSuggestCursor,
  decodeSuggestCursor,
  foldAscii,
  compareSuggestionText,
  compareCodePoints,
} from "./monitoring.js";
export type {
  TagPredicate,
  JobFilter,
  ListJobsRequest,
  JobPage,
  JobCount,
  DependencyEdges,
  FacetRequest,
  FacetValue,
  SuggestTagsRequest,
  TagSuggestion,
  TagSuggestionPage,
} from "./monitoring.js";

export type {
  ObserverSubscription,
  RegisterObserverRequest,
  RegisterObserverResult,
  ClaimObserverDeliveriesRequest,
  ClaimObserverDeliveriesResult,
  ObserverDelivery,
  ObserverDeliveryOutcome,
  ReportObserverDeliveriesRequest,
  ReportObserverDeliveriesResult,
  ObserverStatus,
  ObserverDeadLetter,
} from "./observers.js";

export { workflowStatus, checkWorkflow, planWorkflowMembers } from "./workflows.js";
export type {
  NewWorkflow,
  EnqueueWorkflowRequest,
  EnqueueWorkflowResult,
  WorkflowStatus,
  WorkflowRecord,
  ListWorkflowsRequest,
  WorkflowPage,
} from "./workflows.js";

export type { RetentionClass, PurgeTerminalRequest, PurgeTerminalResult } from "./retention.js";

export { decideMaintainerLease, releasedMaintainerLease } from "./maintainer.js";
export type {
  MaintainerLease,
  AcquireMaintainerLeaseRequest,
  AcquireMaintainerLeaseResult,
  ReleaseMaintainerLeaseRequest,
  ReleaseMaintainerLeaseResult,
} from "./maintainer.js";

export {
  requireInstant,
  requireInteger,
  requireArray,
  requireId,
  requireQueue,
  requireText,
  requireStorableString,
  requireStates,
} from "./input.js";

export {
  assertEnqueueRequest,
  assertEnqueueWorkflowRequest,
  assertUpsertScheduleRequest,
  assertLookupId,
  assertFacetRequest,
  assertSuggestTagsRequest,
  assertListWorkflowsRequest,
  assertClaimRequest,
  assertReportOutcomesRequest,
  assertHeartbeatRequest,
  assertReleaseRequest,
  assertExpireLeasesRequest,
  assertScheduleDefinition,
  assertMintDueRequest,
  assertTriggerScheduleRequest,
  assertJobActionRequest,
  assertQueueActionRequest,
  assertSetConcurrencyLimitRequest,
  assertJobFilter,
  assertListJobsRequest,
  assertListAuditRequest,
  assertPurgeTerminalRequest,
  assertAcquireMaintainerLeaseRequest,
  assertReleaseMaintainerLeaseRequest,
  assertRegisterObserverRequest,
  assertClaimObserverDeliveriesRequest,
  assertReportObserverDeliveriesRequest,
} from "./requests.js";
export * from "./promises/index.js";
export * from "./sql-store-kit.js";
