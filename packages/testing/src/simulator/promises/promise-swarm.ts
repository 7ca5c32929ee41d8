import type { PromiseAxes, PromiseEvent, PromisesPlan } from "../plan.js";
import { type Rng, type Seed, formatSeed } from "../prng.js";
import type { SabotageName } from "../sabotage.js";

const AXIS_ON = 0.35;

/**
 * A plan of the promise half from one seed, swarm style: each axis on with p = 0.35 at an
 * intensity from its band; roots (call graphs up to three deep), worker and server crashes, and
 * operator halts and continues at random instants of the active phase. `sabotage` forces on what
 * that sabotage needs to show.
 */
export function swarmPromisesPlan(seed: Seed, rng: Rng, sabotage: SabotageName | null = null): PromisesPlan {
  const on = () => rng.chance(AXIS_ON);
  const band = (lo: number, hi: number) => lo + (hi - lo) * rng.next();
  const axes: { -readonly [K in keyof PromiseAxes]: PromiseAxes[K] } = {
    storeFault: on() ? band(0.01, 0.08) : 0,
    lostAck: on() ? band(0.01, 0.08) : 0,
    messageLoss: on() ? band(0.05, 0.5) : 0,
    messageDuplicate: on() ? band(0.05, 0.4) : 0,
    slowStep: on() ? band(0.01, 0.1) : 0,
    heartbeatLoss: on() ? band(0.1, 0.5) : 0,
    latencyMs: on() ? Math.round(band(5, 150)) : 5,
  };
  // A stale fulfill or heartbeat needs an execution that outlives its lease.
  const fenced = sabotage === "staleFulfillApplied" || sabotage === "heartbeatIgnoresFence";
  if (fenced) axes.slowStep = 0.3;
  // A stale heartbeat reaches a task another worker holds: two workers at least, leases that lapse.
  if (sabotage === "heartbeatIgnoresFence") axes.heartbeatLoss = 0.5;
  const workers = Math.max(sabotage === "heartbeatIgnoresFence" ? 2 : 1, rng.int(1, 4));
  const activeMs = rng.int(15, 35) * 1_000;
  const ttlMs = rng.pick([2_000, 4_000, 6_000]);
  const at = () => Math.round(rng.next() * activeMs * 0.8);
  const events: PromiseEvent[] = [];
  for (let r = 0, n = rng.int(3, 12); r < n; r++) {
    events.push({
      at: at(),
      kind: "root",
      root: { id: `r${r}`, timeoutInMs: rng.int(20_000, 60_000), fanout: rng.int(0, 3), depth: rng.int(0, 2), listen: rng.chance(0.5) },
    });
  }
  if (on()) for (let c = 0, n = rng.int(1, 3); c < n; c++) events.push({ at: at(), kind: "crash", worker: rng.int(0, workers - 1), downMs: rng.int(200, 8_000) });
  if (on()) events.push({ at: at(), kind: "serverCrash", downMs: rng.int(500, 6_000) });
  if (on()) {
    for (let h = 0, n = rng.int(1, 3); h < n; h++) {
      const from = at();
      events.push({ at: from, kind: "halt", pick: rng.int(0, 1_000) }, { at: from + rng.int(500, 6_000), kind: "continue", pick: rng.int(0, 1_000) });
    }
  }
  events.sort((a, b) => a.at - b.at);
  return {
    half: "promises",
    seed: formatSeed(seed),
    workers,
    ttlMs,
    retryTimeoutMs: rng.pick([2_000, 5_000, 10_000]),
    scanMs: rng.pick([200, 500, 1_000]),
    skewMs: Array.from({ length: workers }, () => (on() ? rng.int(-200, 200) : 0)),
    activeMs,
    drainMs: 150_000,
    axes,
    events,
  };
}
