/**
 * `@belay/testing` — run Belay jobs on virtual time against the in-memory store.
 */
export { createTestHarness, TestHarness, DEFAULT_START } from "./test-harness.js";
export type { TestHarnessOptions } from "./test-harness.js";
export { VirtualClock } from "./virtual-clock.js";
export { ProtocolStream, streamPromiseIds, STREAM_SCHEDULE_IDS, parentOf, originOf } from "./differential/protocol-stream.js";
export type { StreamStep, ProtocolStreamOptions } from "./differential/protocol-stream.js";
export { SeededRandom } from "@belay/contract";
export { canonicalJson, sameJson } from "./differential/protocol-system.js";
export type { WireRequest, ProtocolAnswer, ProtocolSnapshot, ProtocolSystem, SnapshotTask, SnapshotMessage } from "./differential/protocol-system.js";
export { runDifferential, DifferentialMismatch } from "./differential/differential-run.js";
export type { DifferenceRule, DifferentialOptions, DifferentialReport, AnswerPair, SnapshotPair, RunContext, RequestContext } from "./differential/differential-run.js";
export { promiseStoreSystem, normalPromiseSnapshot } from "./differential/promise-store-system.js";
export type { PromiseStoreSystemOptions, NextOccurrence } from "./differential/promise-store-system.js";
export { sdkServerSystem } from "./differential/sdk-server-system.js";
export type { SdkServer, SdkServerSystem, SdkServerSystemOptions, SdkPromiseRow, SdkTaskRow, SdkRequest } from "./differential/sdk-server-system.js";
export { SDK_SERVER_DIFFERENCES } from "./differential/sdk-differences.js";
export { runSeed, runPlan, swarmPlan, replayCommand, replayPlanCommand, formatViolation } from "./simulator/run.js";
export type { SimHalf, SimRunOptions, SimResult } from "./simulator/run.js";
export { minimizePlan } from "./simulator/minimize.js";
export type { MinimizeOptions, MinimizeResult } from "./simulator/minimize.js";
export { parseSimFixture } from "./simulator/fixture.js";
export type { SimFixture } from "./simulator/fixture.js";
export { SABOTAGES, isSabotage } from "./simulator/sabotage.js";
export type { SabotageName } from "./simulator/sabotage.js";
export { ORACLES } from "./simulator/violations.js";
export type { OracleName, Violation } from "./simulator/violations.js";
export { parseSeed, formatSeed } from "./simulator/prng.js";
export type { Seed } from "./simulator/prng.js";
export type {
  SimPlan,
  JobsPlan,
  PromisesPlan,
  JobAxes,
  PromiseAxes,
  JobEvent,
  PromiseEvent,
  JobSpec,
  GroupSpec,
  ObserverSpec,
  ScheduleSpec,
  RootSpec,
  PlanRetry,
} from "./simulator/plan.js";
