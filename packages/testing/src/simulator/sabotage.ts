import type { OracleName } from "./violations.js";

/**
 * The sabotage switches: each one a deliberate bug, injected into the store or the driver's shell
 * through a wrapper or a flag of the simulator (never into shipped code), and each one proven to
 * trip its oracle by a test. `profile` names what a scenario needs for the bug to show (a
 * schedule, a paused queue, …); the swarm generator honours it.
 */
export const SABOTAGES = {
  // ---- the job half: store wrappers ----
  unloggedClaim: { half: "jobs", oracle: "legalTransition", bug: "the store's transition log leaves out some claims" },
  initialLeased: { half: "jobs", oracle: "legalInitialState", bug: "the store logs some new jobs as born leased" },
  attemptRewind: { half: "jobs", oracle: "attemptMonotonic", bug: "a retry is logged at the attempt before the one that failed" },
  claimIgnoresLease: { half: "jobs", oracle: "exclusiveExecution", bug: "a claim also hands out a job another worker holds a live lease on" },
  unfencedReport: { half: "jobs", oracle: "effectOnce", bug: "a stale outcome is applied under the current lease holder's fence" },
  sweepRequeuesDead: { half: "jobs", oracle: "terminalStable", bug: "the lease-expiry sweep requeues a dead-lettered job" },
  claimIgnoresLimit: { half: "jobs", oracle: "concurrencyLimit", bug: "a claim ignores the queue's concurrency limit" },
  doubleDisposal: { half: "jobs", oracle: "slotReleasedOnce", bug: "an expired lease is disposed of twice" },
  claimIgnoresPause: { half: "jobs", oracle: "pausedQueue", bug: "a claim takes jobs from a paused queue" },
  claimQuarantined: { half: "jobs", oracle: "quarantineFinal", bug: "a claim hands out a quarantined job" },
  unauditedResume: { half: "jobs", oracle: "auditComplete", bug: "resuming a queue writes no audit record" },
  cursorRewind: { half: "jobs", oracle: "tickOnce", bug: "minting re-mints ticks whose jobs were purged" },
  plannerBlind: { half: "jobs", oracle: "noOverlap", bug: "schedules are loaded without their live-instance flag, and the store mints them as if they allowed overlap" },
  deliveriesReordered: { half: "jobs", oracle: "observerOrder", bug: "observer deliveries come out of commit order" },
  deadLetterDelivered: { half: "jobs", oracle: "observerResolution", bug: "a delivered transition is recorded as dead-lettered" },
  inflatedDeliveryAttempts: { half: "jobs", oracle: "observerRetryBudget", bug: "observer deliveries carry inflated attempt numbers" },
  observerSkips: { half: "jobs", oracle: "liveness", bug: "observer claims silently drop some transitions" },
  // ---- the job half: driver and shell flags ----
  groupPolicyWins: { half: "jobs", oracle: "attemptCeiling", bug: "the driver decides retries by the group's policy, not the job's own" },
  fireAndForget: { half: "jobs", oracle: "poolCap", bug: "the shell reports a handler finished as soon as it starts" },
  hotLoop: { half: "jobs", oracle: "runaway", bug: "the shell re-arms the driver's timer at once after every step" },
  idleSleepsForever: { half: "jobs", oracle: "liveness", bug: "an idle pump drops its wake-ups and hints, so it never polls again" },
  // ---- the promise half: backend wrappers ----
  staleSettleRead: { half: "promises", oracle: "settlementWriteOnce", bug: "a settle reads a settled promise as still pending (no lock)" },
  acquireKeepsVersion: { half: "promises", oracle: "versionFence", bug: "an acquire does not raise the task's version" },
  heartbeatIgnoresFence: { half: "promises", oracle: "versionFence", bug: "a heartbeat renews a task's lease whoever holds it, at whatever version" },
  staleFulfillApplied: { half: "promises", oracle: "versionFence", bug: "a fulfill refused for its stale version is applied at the task's current one" },
  settleForgetsAwaiters: { half: "promises", oracle: "awaiterWoken", bug: "a settlement loads no awaiters, so none is woken" },
  noRetryTimer: { half: "promises", oracle: "executeNotLost", bug: "a pending task is written without its retry timer" },
  scanSkipsDeadlines: { half: "promises", oracle: "deadlineFires", bug: "the timer scan finds no due promise deadlines" },
} as const satisfies Record<string, { half: "jobs" | "promises"; oracle: OracleName; bug: string }>;

export type SabotageName = keyof typeof SABOTAGES;

/** Whether `name` is a sabotage switch. */
export function isSabotage(name: string): name is SabotageName {
  return Object.hasOwn(SABOTAGES, name);
}
