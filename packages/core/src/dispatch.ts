import { InvalidInputError } from "@belay/contract";

/**
 * How a worker group orders its queues. `strict`: the listed order, earlier queues first (a busy
 * early queue can starve later ones — by choice). `weighted`: smooth weighted round-robin over
 * the slots of each poll, deterministic. Both are work-conserving: a claim falls through to the
 * other queues when its own queue has nothing due.
 */
export type DispatchPolicy = "strict" | "weighted";

/** A queue a worker group serves, with its weight (weighted dispatch only; default 1). */
export interface ServedQueue {
  readonly name: string;
  readonly weight: number;
}

/** One claim to issue: queues in priority order and how many jobs to ask for. */
export interface PlannedClaim {
  readonly queues: readonly string[];
  readonly max: number;
}

/** Weighted round-robin credits, carried from poll to poll. */
export type DispatchCredits = readonly number[];

/** Validates a group's queues. Throws `InvalidInputError` naming the field. */
export function servedQueues(queues: readonly (string | ServedQueue)[]): readonly ServedQueue[] {
  if (!Array.isArray(queues) || queues.length === 0) throw new InvalidInputError("queues", "must name at least one queue");
  const seen = new Set<string>();
  return queues.map((q, i) => {
    const queue = typeof q === "string" ? { name: q, weight: 1 } : q;
    if (typeof queue.name !== "string" || queue.name.length === 0) throw new InvalidInputError(`queues[${i}]`, "must be a queue name");
    if (seen.has(queue.name)) throw new InvalidInputError(`queues[${i}]`, `repeats queue ${queue.name}`);
    if (!Number.isSafeInteger(queue.weight) || queue.weight < 1) throw new InvalidInputError(`queues[${i}].weight`, "must be an integer ≥ 1");
    seen.add(queue.name);
    return { name: queue.name, weight: queue.weight };
  });
}

/**
 * The claims for one poll with `slots` free. Strict: one claim, all queues in order. Weighted:
 * the slots are dealt one by one by smooth weighted round-robin (each queue gains its weight,
 * the richest wins a slot and pays the total weight; ties go to the earlier queue), then one
 * claim per queue that won slots, its own queue first and the others after it as fallthrough.
 * Returns the claims and the credits to carry into the next poll.
 */
export function planClaims(
  policy: DispatchPolicy,
  queues: readonly ServedQueue[],
  slots: number,
  credits: DispatchCredits,
): { readonly claims: readonly PlannedClaim[]; readonly credits: DispatchCredits } {
  if (slots <= 0) return { claims: [], credits };
  const names = queues.map((q) => q.name);
  if (policy === "strict" || queues.length === 1) return { claims: [{ queues: names, max: slots }], credits };

  const total = queues.reduce((sum, q) => sum + q.weight, 0);
  const next = queues.map((_, i) => credits[i] ?? 0);
  const won = new Array<number>(queues.length).fill(0);
  const order: number[] = [];
  for (let s = 0; s < slots; s++) {
    let best = 0;
    for (let i = 0; i < queues.length; i++) {
      next[i]! += queues[i]!.weight;
      if (next[i]! > next[best]!) best = i;
    }
    next[best]! -= total;
    if (won[best] === 0) order.push(best);
    won[best]!++;
  }
  const claims = order.map((i) => ({
    queues: [names[i]!, ...names.filter((_, j) => j !== i)],
    max: won[i]!,
  }));
  return { claims, credits: next };
}
