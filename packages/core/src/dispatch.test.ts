import { describe, expect, it } from "vitest";
import { type DispatchCredits, type ServedQueue, planClaims, servedQueues } from "./dispatch.js";

/** The field of the `InvalidInputError` `servedQueues(queues)` throws. */
function invalidField(queues: readonly (string | ServedQueue)[]): string {
  try {
    servedQueues(queues);
  } catch (error) {
    expect((error as { code?: string }).code).toBe("BELAY_INVALID_INPUT");
    return (error as { field: string }).field;
  }
  throw new Error(`servedQueues(${JSON.stringify(queues)}) did not throw`);
}

/** Runs `polls` weighted polls of `slots` each, carrying credits; returns the queue of every slot dealt. */
function deal(queues: readonly ServedQueue[], polls: number, slots: number): string[] {
  const dealt: string[] = [];
  let credits: DispatchCredits = [];
  for (let p = 0; p < polls; p++) {
    const plan = planClaims("weighted", queues, slots, credits);
    credits = plan.credits;
    for (const claim of plan.claims) for (let i = 0; i < claim.max; i++) dealt.push(claim.queues[0]!);
  }
  return dealt;
}

function count(names: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

const ABC = servedQueues([
  { name: "a", weight: 5 },
  { name: "b", weight: 1 },
  { name: "c", weight: 1 },
]);

describe("dispatch: strict", () => {
  it("strict: one claim, every queue in the listed order, for all the slots", () => {
    const queues = servedQueues(["critical", "default", "bulk"]);
    const plan = planClaims("strict", queues, 7, []);
    expect(plan.claims).toEqual([{ queues: ["critical", "default", "bulk"], max: 7 }]);
    expect(plan.credits).toEqual([]);
  });

  it("strict: weights do not change the order", () => {
    const queues = servedQueues([
      { name: "x", weight: 1 },
      { name: "y", weight: 50 },
    ]);
    expect(planClaims("strict", queues, 3, []).claims).toEqual([{ queues: ["x", "y"], max: 3 }]);
  });

  it("no free slots: no claims, credits unchanged", () => {
    const credits = [1, -2, 1];
    expect(planClaims("strict", ABC, 0, credits)).toEqual({ claims: [], credits });
    expect(planClaims("weighted", ABC, 0, credits)).toEqual({ claims: [], credits });
  });
});

describe("dispatch: weighted", () => {
  it("weighted: weights 5,1,1 over 7 single-slot polls give a,a,b,a,c,a,a (nginx smooth WRR)", () => {
    // Worked by hand (credits a,b,c; each round adds the weights, the richest wins and pays 7,
    // ties to the earlier queue):
    //   1: 5, 1, 1 → a → -2, 1, 1      2: 3, 2, 2 → a → -4, 2, 2
    //   3: 1, 3, 3 → b → 1,-4, 3       4: 6,-3, 4 → a → -1,-3, 4
    //   5: 4,-2, 5 → c → 4,-2,-2       6: 9,-1,-1 → a → 2,-1,-1
    //   7: 7, 0, 0 → a → 0, 0, 0      (back to the start: the cycle repeats)
    expect(deal(ABC, 7, 1)).toEqual(["a", "a", "b", "a", "c", "a", "a"]);
    expect(deal(ABC, 14, 1)).toEqual(["a", "a", "b", "a", "c", "a", "a", "a", "a", "b", "a", "c", "a", "a"]);
  });

  it("weighted: credits are carried across polls (without them every single-slot poll goes to a)", () => {
    const first = planClaims("weighted", ABC, 1, []);
    expect(first.credits).toEqual([-2, 1, 1]);
    const second = planClaims("weighted", ABC, 1, first.credits);
    expect(second.credits).toEqual([-4, 2, 2]);
    const third = planClaims("weighted", ABC, 1, second.credits);
    expect(third.claims[0]!.queues[0]).toBe("b");
    // The same third poll with the credits dropped:
    expect(planClaims("weighted", ABC, 1, []).claims[0]!.queues[0]).toBe("a");
  });

  it("weighted: one 7-slot poll deals 5,1,1, one claim per queue that won, in order of first win", () => {
    const plan = planClaims("weighted", ABC, 7, []);
    expect(plan.claims).toEqual([
      { queues: ["a", "b", "c"], max: 5 },
      { queues: ["b", "a", "c"], max: 1 },
      { queues: ["c", "a", "b"], max: 1 },
    ]);
    expect(plan.credits).toEqual([0, 0, 0]);
  });

  it("weighted: each claim lists its own queue first, then the others in order (fallthrough)", () => {
    const queues = servedQueues(["q1", "q2", "q3", "q4"]);
    const plan = planClaims("weighted", queues, 4, []);
    expect(plan.claims).toEqual([
      { queues: ["q1", "q2", "q3", "q4"], max: 1 },
      { queues: ["q2", "q1", "q3", "q4"], max: 1 },
      { queues: ["q3", "q1", "q2", "q4"], max: 1 },
      { queues: ["q4", "q1", "q2", "q3"], max: 1 },
    ]);
    for (const claim of plan.claims) expect([...claim.queues].sort()).toEqual(["q1", "q2", "q3", "q4"]);
  });

  it("weighted: over many polls slots are shared in proportion to the weights", () => {
    expect(count(deal(ABC, 700, 1))).toEqual({ a: 500, b: 100, c: 100 });
    expect(count(deal(ABC, 100, 7))).toEqual({ a: 500, b: 100, c: 100 });
    // Poll sizes that do not divide the cycle still converge (within one cycle's worth).
    const odd = count(deal(ABC, 233, 3)); // 699 slots
    expect(Math.abs(odd.a! - (699 * 5) / 7)).toBeLessThanOrEqual(5);
    expect(Math.abs(odd.b! - 699 / 7)).toBeLessThanOrEqual(1);
    expect(Math.abs(odd.c! - 699 / 7)).toBeLessThanOrEqual(1);
    const three = servedQueues([
      { name: "x", weight: 3 },
      { name: "y", weight: 2 },
    ]);
    expect(count(deal(three, 500, 1))).toEqual({ x: 300, y: 200 });
  });

  it("weighted: the same inputs give the same plan (deterministic)", () => {
    const credits = [3, -1, -2];
    expect(planClaims("weighted", ABC, 5, credits)).toEqual(planClaims("weighted", ABC, 5, credits));
    expect(credits).toEqual([3, -1, -2]);
  });

  it("weighted: a single queue is one claim for all the slots", () => {
    const plan = planClaims("weighted", servedQueues([{ name: "only", weight: 4 }]), 6, []);
    expect(plan.claims).toEqual([{ queues: ["only"], max: 6 }]);
  });
});

describe("dispatch: servedQueues", () => {
  it("servedQueues: names become weight 1; explicit weights are kept", () => {
    expect(servedQueues(["a", { name: "b", weight: 3 }])).toEqual([
      { name: "a", weight: 1 },
      { name: "b", weight: 3 },
    ]);
  });

  it("servedQueues: an empty list is rejected naming queues", () => {
    expect(invalidField([])).toBe("queues");
  });

  it("servedQueues: a repeated queue is rejected naming its position", () => {
    expect(invalidField(["a", "b", "a"])).toBe("queues[2]");
    expect(invalidField(["a", { name: "a", weight: 2 }])).toBe("queues[1]");
  });

  it("servedQueues: weight 0 (or negative, or fractional) is rejected naming the weight", () => {
    expect(invalidField([{ name: "a", weight: 0 }])).toBe("queues[0].weight");
    expect(invalidField(["x", { name: "a", weight: -1 }])).toBe("queues[1].weight");
    expect(invalidField([{ name: "a", weight: 1.5 }])).toBe("queues[0].weight");
  });

  it("servedQueues: an empty queue name is rejected", () => {
    expect(invalidField([""])).toBe("queues[0]");
  });
});
