import type { JobState } from "@belay/contract";
import type { GroupSpec, JobAxes, JobEvent, JobSpec, JobsPlan, ObserverSpec, PlanRetry, ScheduleSpec } from "../plan.js";
import { type Rng, formatSeed, type Seed } from "../prng.js";
import type { SabotageName } from "../sabotage.js";

/** Which fault axes a swarm seed turns on: each with this probability, at a banded intensity. */
const AXIS_ON = 0.35;

const NO_AXES: JobAxes = {
  handlerFailure: 0,
  permanentFailure: 0,
  handlerHang: 0,
  longHandler: 0,
  ignoreAbort: 0,
  storeFault: 0,
  lostAck: 0,
  fatalStoreFault: 0,
  heartbeatLoss: 0,
  latencyMs: 5,
  hintLoss: 0,
  hintDuplicate: 0,
  hintDelay: 0,
  observerFailure: 0,
  observerPoison: 0,
};

/** The scenario features a swarm seed turns on (also with {@link AXIS_ON} each). */
interface Features {
  crashes: boolean;
  stops: boolean;
  isolation: boolean;
  skew: boolean;
  operator: boolean;
  pauses: boolean;
  limits: boolean;
  schedules: boolean;
  workflows: boolean;
  dependencies: boolean;
  quarantine: boolean;
  observers: boolean;
  retention: boolean;
  delays: boolean;
}

/**
 * A plan of the job half from one seed, swarm style: every fault axis and scenario feature is
 * on with p = 0.35, at an intensity drawn from its band, so seeds differ in kind and not only in
 * detail. `sabotage` forces on what that sabotage needs to show (a paused queue, a schedule, …).
 */
export function swarmJobsPlan(seed: Seed, rng: Rng, sabotage: SabotageName | null = null): JobsPlan {
  const on = () => rng.chance(AXIS_ON);
  const band = (lo: number, hi: number) => lo + (hi - lo) * rng.next();
  const f: Features = {
    crashes: on(),
    stops: on(),
    isolation: on(),
    skew: on(),
    operator: on(),
    pauses: on(),
    limits: on(),
    schedules: on(),
    workflows: on(),
    dependencies: on(),
    quarantine: on(),
    observers: on(),
    retention: rng.chance(0.2),
    delays: on(),
  };
  const axes: MutableAxes = { ...NO_AXES };
  if (on()) axes.handlerFailure = band(0.05, 0.4);
  if (on()) axes.permanentFailure = band(0.02, 0.15);
  if (on()) axes.handlerHang = band(0.02, 0.1);
  if (on()) axes.longHandler = band(0.02, 0.15);
  if (on()) axes.ignoreAbort = band(0.1, 0.6);
  if (on()) axes.storeFault = band(0.01, 0.08);
  if (on()) axes.lostAck = band(0.01, 0.08);
  if (rng.chance(0.15)) axes.fatalStoreFault = band(0.001, 0.005);
  if (on()) axes.heartbeatLoss = band(0.1, 0.5);
  if (on()) axes.latencyMs = Math.round(band(5, 150));
  if (on()) axes.hintLoss = band(0.2, 1);
  if (on()) axes.hintDuplicate = band(0.1, 0.5);
  if (on()) axes.hintDelay = band(0.1, 0.5);
  if (on()) axes.observerFailure = band(0.05, 0.4);
  if (on()) axes.observerPoison = band(0.02, 0.1);
  applyProfile(sabotage, f, axes);

  const nodes = rng.int(2, 4);
  const queueCount = rng.int(1, 4);
  const queues = Array.from({ length: queueCount }, (_, i) => `q${i}`);
  const groups: GroupSpec[] = [];
  const split = queueCount > 1 && rng.chance(0.5) ? rng.int(1, queueCount - 1) : queueCount;
  for (const [g, served] of [queues.slice(0, split), queues.slice(split)].entries()) {
    if (served.length === 0) continue;
    const poolSize = sabotage === "fireAndForget" ? 1 : rng.int(1, 6);
    groups.push({
      name: `g${g}`,
      queues: rng.chance(0.5) ? served : [...served].reverse(),
      dispatch: rng.chance(0.5) ? "strict" : "weighted",
      poolSize,
      pumps: rng.int(1, 2),
      prefetch: rng.chance(0.5) ? 0 : rng.int(1, 4 * poolSize),
    });
  }
  const leaseMs = rng.pick([3_000, 5_000, 8_000]);
  const pollMs = rng.pick([200, 500, 1_000]);
  const activeMs = rng.int(15, 35) * 1_000;
  const retry = (): PlanRetry => ({ maxAttempts: rng.int(1, 3), delaysMs: [rng.int(50, 800), rng.int(100, 1_500)] });
  const groupRetry: PlanRetry = { maxAttempts: rng.int(3, 6), delaysMs: [200, 500, 1_000] };
  const at = (until = activeMs * 0.85) => Math.round(rng.next() * until);

  const schedules: ScheduleSpec[] = [];
  if (f.schedules) {
    for (let s = 0, n = rng.int(1, 2); s < n; s++) {
      const every = sabotage === "plannerBlind" ? 1 : rng.int(1, 5);
      schedules.push({
        id: `s${s}`,
        cron: every === 1 ? "* * * * * *" : `*/${every} * * * * *`,
        queue: rng.pick(queues),
        catchUp: rng.chance(0.5) ? "skip" : "coalesce",
        noOverlap: sabotage === "plannerBlind" || rng.chance(0.5),
        retry: rng.chance(0.5) ? retry() : null,
      });
    }
  }

  const observers: ObserverSpec[] = [];
  if (f.observers) {
    const choices: JobState[][] = [["deadLettered", "quarantined"], ["succeeded", "cancelled"], ["leased", "scheduled"], ["succeeded", "deadLettered", "cancelled", "quarantined"]];
    for (let o = 0, n = rng.int(1, 2); o < n; o++) {
      observers.push({
        id: `o${o}`,
        states: rng.pick(choices),
        ...(rng.chance(0.3) ? { queues: rng.some(queues, 1, queueCount) } : {}),
        retry: { maxAttempts: rng.int(2, 3), delaysMs: [rng.int(100, 500), rng.int(200, 1_000)] },
        timeoutMs: 1_000,
      });
    }
  }

  const events: JobEvent[] = [];
  const ids: string[] = [];
  let nextId = 0;
  const job = (queue = rng.pick(queues)): JobSpec => {
    const id = `j${nextId++}`;
    const parents = f.dependencies && ids.length > 0 && rng.chance(0.3) ? rng.some(ids, 1, 2) : [];
    const spec: JobSpec = {
      id,
      name: f.quarantine && rng.chance(0.06) ? "ghost" : "work",
      queue,
      dueInMs: f.delays && rng.chance(0.4) ? rng.int(0, 5_000) : 0,
      ...(parents.length > 0 ? { parents, mode: rng.chance(0.7) ? ("onSuccess" as const) : ("onAnyTerminal" as const) } : {}),
      retry: rng.chance(sabotage === "groupPolicyWins" ? 0.9 : 0.4) ? retry() : null,
      ...(f.quarantine && rng.chance(0.04) ? { badPayload: true } : {}),
    };
    ids.push(id);
    return spec;
  };
  // Batches in time order, so a job's parents were asked for before it.
  const batchTimes = Array.from({ length: rng.int(6, 20) }, () => at()).sort((a, b) => a - b);
  for (const time of batchTimes) events.push({ at: time, kind: "enqueue", jobs: Array.from({ length: rng.int(1, 4) }, () => job()) });
  if (f.workflows) {
    for (let w = 0, n = rng.int(1, 3); w < n; w++) {
      const members: JobSpec[] = [];
      const memberIds: string[] = [];
      for (let m = 0, size = rng.int(2, 5); m < size; m++) {
        const id = `w${w}.${m}`;
        const parents = memberIds.length > 0 && rng.chance(0.7) ? rng.some(memberIds, 1, 2) : [];
        members.push({ id, name: "work", queue: rng.pick(queues), dueInMs: 0, ...(parents.length > 0 ? { parents } : {}), retry: rng.chance(0.5) ? retry() : null });
        memberIds.push(id);
      }
      events.push({ at: at(), kind: "workflow", id: `w${w}`, jobs: members });
    }
  }
  if (f.operator) {
    for (let o = 0, n = rng.int(2, 8); o < n; o++) events.push({ at: at(), kind: rng.chance(0.5) ? "cancel" : "requeue", pick: rng.int(0, 1_000) });
    for (const schedule of schedules) if (rng.chance(0.7)) events.push({ at: at(), kind: "trigger", schedule: schedule.id });
  }
  if (f.pauses) {
    for (let p = 0, n = rng.int(1, 3); p < n; p++) {
      const queue = rng.pick(queues);
      const from = at();
      events.push({ at: from, kind: "pause", queue }, { at: from + rng.int(500, 8_000), kind: "resume", queue });
    }
  }
  if (f.limits) {
    for (let l = 0, n = rng.int(1, 3); l < n; l++) events.push({ at: at(), kind: "limit", queue: rng.pick(queues), limit: rng.chance(0.2) ? null : rng.int(1, 3) });
  }
  if (f.crashes) for (let c = 0, n = rng.int(1, 3); c < n; c++) events.push({ at: at(), kind: "crash", node: rng.int(0, nodes - 1), downMs: rng.int(200, 8_000) });
  if (f.stops) for (let c = 0, n = rng.int(1, 2); c < n; c++) events.push({ at: at(), kind: "stop", node: rng.int(0, nodes - 1), downMs: rng.int(200, 5_000) });
  if (f.isolation) for (let c = 0, n = rng.int(1, 2); c < n; c++) events.push({ at: at(), kind: "isolate", node: rng.int(0, nodes - 1), forMs: rng.int(1_000, 2 * leaseMs) });
  events.sort((a, b) => a.at - b.at);

  return {
    half: "jobs",
    seed: formatSeed(seed),
    nodes,
    groups,
    leaseMs,
    pollMs,
    maxPollMs: rng.chance(0.5) ? pollMs : pollMs * 8,
    maintenanceMs: rng.pick([500, 1_000, 2_000]),
    faultBackoffMaxMs: rng.int(2_000, 5_000),
    groupRetry,
    retention: f.retention
      ? { succeededOrCancelledMs: rng.int(1_000, 8_000), deadLetteredOrQuarantinedMs: rng.chance(0.5) ? rng.int(2_000, 10_000) : null }
      : { succeededOrCancelledMs: null, deadLetteredOrQuarantinedMs: null },
    skewMs: Array.from({ length: nodes }, () => (f.skew ? rng.int(-300, 300) : 0)),
    activeMs,
    drainMs: 150_000,
    axes,
    observers,
    schedules,
    events,
  };
}

type MutableAxes = { -readonly [K in keyof JobAxes]: JobAxes[K] };

/** A handler outliving its lease, its heartbeats lost, its node cut off: a stale holder. */
const STALE_HOLDER = { f: { isolation: true }, axes: { longHandler: 0.3, heartbeatLoss: 0.5 } };

/** What each sabotage needs to show itself, forced on: scenario features and fault axes. */
const PROFILES: Partial<Record<SabotageName, { readonly f?: Partial<Features>; readonly axes?: Partial<JobAxes> }>> = {
  claimIgnoresLimit: { f: { limits: true } },
  claimIgnoresPause: { f: { pauses: true } },
  unauditedResume: { f: { pauses: true } },
  claimQuarantined: { f: { quarantine: true } },
  cursorRewind: { f: { schedules: true, retention: true } },
  plannerBlind: { f: { schedules: true }, axes: { longHandler: 0.5 } },
  deliveriesReordered: { f: { observers: true } },
  deadLetterDelivered: { f: { observers: true } },
  observerSkips: { f: { observers: true } },
  inflatedDeliveryAttempts: { f: { observers: true }, axes: { observerFailure: 0.3 } },
  groupPolicyWins: { axes: { handlerFailure: 0.6 } },
  attemptRewind: { axes: { handlerFailure: 0.6 } },
  sweepRequeuesDead: { axes: { permanentFailure: 0.3 } },
  claimIgnoresLease: STALE_HOLDER,
  unfencedReport: STALE_HOLDER,
  doubleDisposal: STALE_HOLDER,
  idleSleepsForever: { f: { delays: true } },
};

function applyProfile(sabotage: SabotageName | null, f: Features, axes: MutableAxes): void {
  const profile = sabotage === null ? undefined : PROFILES[sabotage];
  Object.assign(f, profile?.f);
  Object.assign(axes, profile?.axes);
}
