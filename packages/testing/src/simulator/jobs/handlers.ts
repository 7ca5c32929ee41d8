import type { ExecutionResult } from "@belay/core";
import type { JobAxes } from "../plan.js";
import type { KeyedDice } from "../prng.js";

/** What a simulated handler does on one attempt. */
export interface Behaviour {
  /** `hang`: runs until aborted (or until the faults stop). */
  readonly kind: "succeed" | "fail" | "permanent" | "hang";
  readonly durationMs: number;
  /** Runs on when told to abort (a lost lease, a cancel, a stop), to its natural end. */
  readonly ignoresAbort: boolean;
}

/**
 * The behaviour of attempt `attempt` of job `jobId`, by identity: the same in every run of the
 * same plan. While the faults run, the axes decide; after, handlers behave (mostly succeed,
 * quickly), so the drain can show that everything ends.
 */
export function behaviourOf(dice: KeyedDice, axes: JobAxes, leaseMs: number, jobId: string, attempt: number, faulty: boolean): Behaviour {
  const u = dice.unit("handler", jobId, attempt);
  const durationMs = dice.int(2, 400, "duration", jobId, attempt);
  if (!faulty) return { kind: u < 0.1 ? "fail" : "succeed", durationMs, ignoresAbort: false };
  const ignoresAbort = dice.chance(axes.ignoreAbort, "ignoreAbort", jobId, attempt);
  let edge = axes.permanentFailure;
  if (u < edge) return { kind: "permanent", durationMs, ignoresAbort };
  if (u < (edge += axes.handlerFailure)) return { kind: "fail", durationMs, ignoresAbort };
  if (u < (edge += axes.handlerHang)) return { kind: "hang", durationMs: Infinity, ignoresAbort };
  if (u < (edge += axes.longHandler)) {
    return { kind: "succeed", durationMs: Math.round(leaseMs * (1.2 + 1.8 * dice.unit("long", jobId, attempt))), ignoresAbort };
  }
  return { kind: "succeed", durationMs, ignoresAbort };
}

/** What the pump makes of a handler that ends as `behaviour` says (mirrors `Pump#run`). */
export function resultOf(behaviour: Behaviour, jobId: string, attempt: number): ExecutionResult {
  switch (behaviour.kind) {
    case "succeed":
    case "hang":
      return { type: "succeeded", output: attempt % 2 === 0 ? null : JSON.stringify({ jobId, attempt }), addTags: [] };
    case "fail":
      return { type: "failed", failureDetail: `Error: simulated failure of ${jobId} at attempt ${attempt}`, addTags: [], retryable: true };
    case "permanent":
      return { type: "failed", failureDetail: `PermanentJobError: simulated permanent failure of ${jobId}`, addTags: [], retryable: false };
  }
}
