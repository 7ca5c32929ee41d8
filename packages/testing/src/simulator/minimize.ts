import type { JobEvent, JobSpec, JobsPlan, PromisesPlan, SimPlan } from "./plan.js";
import { runPlan } from "./run.js";
import type { SabotageName } from "./sabotage.js";
import type { OracleName, Violation } from "./violations.js";

export interface MinimizeOptions {
  /** The sabotage the plan runs under (as when it failed). */
  readonly sabotage?: SabotageName | null;
  /** The oracle that must still trip; default: the first one the plan trips. */
  readonly oracle?: OracleName;
  /** Give up shrinking after this many runs (default 600); the smallest plan so far is kept. */
  readonly maxRuns?: number;
  /** Called after every smaller plan found. */
  readonly onProgress?: (plan: SimPlan, runs: number) => void;
}

export interface MinimizeResult {
  readonly plan: SimPlan;
  readonly oracle: OracleName;
  /** The oracle's finding on the minimized plan. */
  readonly violation: Violation;
  /** Plans run while shrinking. */
  readonly runs: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Shrinks a failing plan: removes scripted events (halves, quarters, … then one by one), jobs
 * from batches and workflows, observers, schedules, nodes or workers, node skews, and turns fault
 * axes off — keeping each cut only if the same oracle still trips. Faults are keyed by identity,
 * so most cuts leave the remaining faults where they were. Deterministic: the same plan and
 * options give the same result. Throws a `RangeError` when the plan trips no oracle.
 *
 * @example
 * const { plan, oracle } = await minimizePlan(swarmPlan(seed, "jobs"), { sabotage: "claimIgnoresPause" });
 */
export async function minimizePlan(plan: SimPlan, options: MinimizeOptions = {}): Promise<MinimizeResult> {
  const sabotage = options.sabotage ?? null;
  const maxRuns = options.maxRuns ?? 600;
  let runs = 0;
  const first = await runPlan(plan, { sabotage });
  runs++;
  const oracle = options.oracle ?? first.violations[0]?.oracle;
  let violation = first.violations.find((v) => v.oracle === oracle);
  if (oracle === undefined || violation === undefined) {
    throw new RangeError(`the plan trips ${options.oracle ? `no ${options.oracle} violation` : "no oracle"}${sabotage ? ` under ${sabotage}` : ""}`);
  }
  let best = plan;
  /** Keeps `candidate` if it still trips the oracle. */
  const attempt = async (candidate: SimPlan): Promise<boolean> => {
    if (runs >= maxRuns) return false;
    runs++;
    let found: Violation | undefined;
    try {
      found = (await runPlan(candidate, { sabotage })).violations.find((v) => v.oracle === oracle);
    } catch {
      return false; // a cut the simulator cannot run is no smaller failing plan
    }
    if (found === undefined) return false;
    best = candidate;
    violation = found;
    options.onProgress?.(best, runs);
    return true;
  };

  for (let changed = true; changed && runs < maxRuns; ) {
    changed = false;
    // Events: chunks from half the list down to single events.
    for (let size = Math.max(1, Math.floor(best.events.length / 2)); size >= 1; size = Math.floor(size / 2)) {
      for (let start = 0; start < best.events.length; ) {
        const events = [...best.events];
        events.splice(start, size);
        if (await attempt({ ...best, events } as SimPlan)) changed = true;
        else start += size;
      }
      if (size === 1) break;
    }
    const cuts = (best.half === "jobs" ? jobCuts(best) : promiseCuts(best)) as ((p: SimPlan) => SimPlan)[];
    for (const cut of cuts) {
      // Each cut applies to the best plan so far; one that changes nothing is not run.
      const candidate = cut(best);
      if (candidate !== best && (await attempt(candidate))) changed = true;
    }
  }
  return { plan: best, oracle, violation: violation!, runs };
}

/** Cuts of a job plan other than whole events, found in `start`, each applied to the best plan so far. */
function jobCuts(start: JobsPlan): ((p: JobsPlan) => JobsPlan)[] {
  const cuts: ((p: JobsPlan) => JobsPlan)[] = [];
  const track = (cut: (p: JobsPlan) => JobsPlan) => cuts.push(cut);
  // Jobs one by one (their ids leave the parents of the others too).
  const ids = start.events.flatMap((e) => (e.kind === "enqueue" || e.kind === "workflow" ? e.jobs.map((j) => j.id) : []));
  for (const id of ids) track((p) => withoutJob(p, id));
  for (const o of start.observers) {
    track((p) => (p.observers.some((x) => x.id === o.id) ? { ...p, observers: p.observers.filter((x) => x.id !== o.id) } : p));
  }
  for (const s of start.schedules) {
    track((p) =>
      p.schedules.some((x) => x.id === s.id)
        ? { ...p, schedules: p.schedules.filter((x) => x.id !== s.id), events: p.events.filter((e) => !(e.kind === "trigger" && e.schedule === s.id)) }
        : p,
    );
  }
  cuts.push(...axisAndMemberCuts(start, (p) => p.nodes, (p, n) => ({ ...p, nodes: n, events: p.events.filter((e) => !("node" in e) || e.node < n) })));
  return cuts;
}

/**
 * The cuts both halves have, in this order: each fault axis off; fewer members (nodes or workers:
 * `members` counts them, `keep` keeps the first `n` and their events), each down to one; each
 * member's clock skew zeroed.
 */
function axisAndMemberCuts<P extends JobsPlan | PromisesPlan>(start: P, members: (p: P) => number, keep: (p: P, n: number) => P): ((p: P) => P)[] {
  const cuts: ((p: P) => P)[] = [];
  const axes = (p: P) => p.axes as unknown as Readonly<Record<string, number>>;
  for (const key of Object.keys(start.axes)) {
    if (axes(start)[key] !== 0) cuts.push((p) => (axes(p)[key] === 0 ? p : { ...p, axes: { ...p.axes, [key]: 0 } }));
  }
  for (let n = members(start) - 1; n >= 1; n--) cuts.push((p) => (members(p) <= n ? p : keep({ ...p, skewMs: p.skewMs.slice(0, n) }, n)));
  for (let i = 0; i < start.skewMs.length; i++) {
    cuts.push((p) => (p.skewMs[i] ? { ...p, skewMs: p.skewMs.map((s, j) => (j === i ? 0 : s)) } : p));
  }
  return cuts;
}

function withoutJob(plan: JobsPlan, id: string): JobsPlan {
  if (!plan.events.some((e) => (e.kind === "enqueue" || e.kind === "workflow") && e.jobs.some((j) => j.id === id))) return plan;
  const strip = (spec: JobSpec): JobSpec => {
    if (!spec.parents?.includes(id)) return spec;
    const parents = spec.parents.filter((p) => p !== id);
    const { parents: _p, mode: _m, ...rest } = spec;
    return parents.length > 0 ? { ...rest, parents, ...(spec.mode ? { mode: spec.mode } : {}) } : rest;
  };
  const events: JobEvent[] = [];
  for (const e of plan.events) {
    if (e.kind !== "enqueue" && e.kind !== "workflow") {
      events.push(e.kind === "cancel" || e.kind === "requeue" ? (e.job === id ? { at: e.at, kind: e.kind, pick: 0 } : e) : e);
      continue;
    }
    const jobs = e.jobs.filter((j) => j.id !== id).map(strip);
    if (jobs.length > 0) events.push({ ...e, jobs });
  }
  return { ...plan, events };
}

function promiseCuts(start: PromisesPlan): ((p: PromisesPlan) => PromisesPlan)[] {
  const cuts: ((p: PromisesPlan) => PromisesPlan)[] = [];
  const track = (cut: (p: PromisesPlan) => PromisesPlan) => cuts.push(cut);
  cuts.push(...axisAndMemberCuts(start, (p) => p.workers, (p, n) => ({ ...p, workers: n, events: p.events.filter((e) => e.kind !== "crash" || e.worker < n) })));
  // Roots: fewer children, shallower, not listened to.
  for (const e of start.events) {
    if (e.kind !== "root") continue;
    const id = e.root.id;
    const edit = (change: (root: Mutable<Extract<PromisesPlan["events"][number], { kind: "root" }>["root"]>) => void) =>
      track((p) => {
        let changed = false;
        const events = p.events.map((x) => {
          if (x.kind !== "root" || x.root.id !== id) return x;
          const root = { ...x.root };
          change(root);
          if (root.fanout === x.root.fanout && root.depth === x.root.depth && root.listen === x.root.listen) return x;
          changed = true;
          return { ...x, root };
        });
        return changed ? { ...p, events } : p;
      });
    for (let f = e.root.fanout - 1; f >= 0; f--) edit((r) => void (r.fanout = Math.min(r.fanout, f)));
    for (let d = e.root.depth - 1; d >= 0; d--) edit((r) => void (r.depth = Math.min(r.depth, d)));
    if (e.root.listen) edit((r) => void (r.listen = false));
  }
  return cuts;
}
