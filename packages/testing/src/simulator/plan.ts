import type { JobState } from "@belay/contract";

/**
 * A simulation plan: the scenario and its faults, as plain JSON. A swarm seed expands to one
 * (`swarmPlan`); the minimizer shrinks one; fixtures store one. Every fault is keyed by a stable
 * identity (a job's attempt, a node's n-th call of a kind) through the plan's own `seed`, so a
 * plan replays exactly, and dropping one of its events leaves the other faults where they were.
 */
export type SimPlan = JobsPlan | PromisesPlan;

/** A retry policy as data (a job's own, a schedule's, a worker group's). */
export interface PlanRetry {
  readonly maxAttempts: number;
  readonly delaysMs: readonly number[];
}

// ---- the job half --------------------------------------------------------------------------

/** How hard each fault axis of the job half pushes: a probability per occasion, or a size. */
export interface JobAxes {
  /** Per attempt: the handler fails, retryably. */
  readonly handlerFailure: number;
  /** Per attempt: the handler fails permanently (dead-lettered at once). */
  readonly permanentFailure: number;
  /** Per attempt: the handler hangs until aborted (or until the faults stop). */
  readonly handlerHang: number;
  /** Per attempt: the handler runs 1.2–3 leases long (it outlives its lease unless heartbeats hold it). */
  readonly longHandler: number;
  /** Per attempt: the handler ignores its abort signal and runs on. */
  readonly ignoreAbort: number;
  /** Per store call: a transient fault before the write (nothing committed). */
  readonly storeFault: number;
  /** Per store call: a lost acknowledgement (committed, the caller sees a transient fault). */
  readonly lostAck: number;
  /** Per store call: a non-transient fault (the pump fail-stops; its node is restarted). */
  readonly fatalStoreFault: number;
  /** Per heartbeat: the request is lost (the caller times out). */
  readonly heartbeatLoss: number;
  /** Largest one-way latency between a node and the store, ms. */
  readonly latencyMs: number;
  /** Per wake-up hint and pump: lost, duplicated, delayed (up to 2 s). */
  readonly hintLoss: number;
  readonly hintDuplicate: number;
  readonly hintDelay: number;
  /** Per observer callback: a transient failure; per transition: a poison one that always fails. */
  readonly observerFailure: number;
  readonly observerPoison: number;
}

export interface GroupSpec {
  readonly name: string;
  /** Queues in dispatch order (each queue is served by exactly one group). */
  readonly queues: readonly string[];
  readonly dispatch: "strict" | "weighted";
  readonly poolSize: number;
  readonly pumps: number;
  readonly prefetch: number;
}

/** A job the client enqueues. `name: "ghost"` has no handler (quarantined); `badPayload` is not JSON. */
export interface JobSpec {
  readonly id: string;
  readonly name: "work" | "ghost";
  readonly queue: string;
  readonly dueInMs: number;
  readonly parents?: readonly string[];
  readonly mode?: "onSuccess" | "onAnyTerminal";
  readonly retry?: PlanRetry | null;
  readonly badPayload?: boolean;
}

export interface ObserverSpec {
  readonly id: string;
  readonly states: readonly JobState[];
  readonly queues?: readonly string[];
  readonly retry: PlanRetry;
  readonly timeoutMs: number;
}

export interface ScheduleSpec {
  readonly id: string;
  /** Six fields (seconds first). */
  readonly cron: string;
  readonly queue: string;
  readonly catchUp: "skip" | "coalesce";
  readonly noOverlap: boolean;
  readonly retry: PlanRetry | null;
}

/**
 * One scripted event of the job half. Operator events that need a target (`cancel`, `requeue`)
 * name a job, or `pick` the n-th (mod count) eligible job as the operator sees it at that moment.
 */
export type JobEvent =
  | { readonly at: number; readonly kind: "enqueue"; readonly jobs: readonly JobSpec[] }
  | { readonly at: number; readonly kind: "workflow"; readonly id: string; readonly jobs: readonly JobSpec[] }
  | { readonly at: number; readonly kind: "cancel" | "requeue"; readonly job?: string; readonly pick?: number }
  | { readonly at: number; readonly kind: "pause" | "resume"; readonly queue: string }
  | { readonly at: number; readonly kind: "limit"; readonly queue: string; readonly limit: number | null }
  | { readonly at: number; readonly kind: "trigger"; readonly schedule: string }
  | { readonly at: number; readonly kind: "crash" | "stop"; readonly node: number; readonly downMs: number }
  | { readonly at: number; readonly kind: "isolate"; readonly node: number; readonly forMs: number };

export interface JobsPlan {
  readonly half: "jobs";
  /** The plan's dice: `0x` + 16 hex digits. */
  readonly seed: string;
  readonly nodes: number;
  readonly groups: readonly GroupSpec[];
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly maxPollMs: number;
  readonly maintenanceMs: number;
  readonly faultBackoffMaxMs: number;
  readonly groupRetry: PlanRetry;
  readonly retention: { readonly succeededOrCancelledMs: number | null; readonly deadLetteredOrQuarantinedMs: number | null };
  /** Each node's clock offset from true time, ms. */
  readonly skewMs: readonly number[];
  /** Faults and scripted events run in [0, activeMs); then the faults stop and the drain runs. */
  readonly activeMs: number;
  readonly drainMs: number;
  readonly axes: JobAxes;
  readonly observers: readonly ObserverSpec[];
  readonly schedules: readonly ScheduleSpec[];
  readonly events: readonly JobEvent[];
}

// ---- the promise half ----------------------------------------------------------------------

export interface PromiseAxes {
  /** Per request: a transient fault before (nothing done) / a lost acknowledgement (done, caller sees a fault). */
  readonly storeFault: number;
  readonly lostAck: number;
  /** Per outbox message delivery: lost / duplicated. */
  readonly messageLoss: number;
  readonly messageDuplicate: number;
  /** Per step of a function: the worker stalls past its lease. */
  readonly slowStep: number;
  /** Per heartbeat: lost. */
  readonly heartbeatLoss: number;
  readonly latencyMs: number;
}

/** A root call a client starts: a promise with a target (a task), its function's shape derived from its id. */
export interface RootSpec {
  readonly id: string;
  readonly timeoutInMs: number;
  /** Children per call (0–3) and how deep the call graph goes. */
  readonly fanout: number;
  readonly depth: number;
  /** The client listens for its settlement. */
  readonly listen: boolean;
}

export type PromiseEvent =
  | { readonly at: number; readonly kind: "root"; readonly root: RootSpec }
  | { readonly at: number; readonly kind: "crash"; readonly worker: number; readonly downMs: number }
  | { readonly at: number; readonly kind: "serverCrash"; readonly downMs: number }
  | { readonly at: number; readonly kind: "halt" | "continue"; readonly pick: number };

export interface PromisesPlan {
  readonly half: "promises";
  readonly seed: string;
  readonly workers: number;
  readonly ttlMs: number;
  readonly retryTimeoutMs: number;
  readonly scanMs: number;
  readonly skewMs: readonly number[];
  readonly activeMs: number;
  readonly drainMs: number;
  readonly axes: PromiseAxes;
  readonly events: readonly PromiseEvent[];
}
