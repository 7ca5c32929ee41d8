import { describe, expect, it } from "vitest";
import { DELEGATED_OPERATIONS, DelegatingOperations, type OperationFunctions } from "../src/index.js";

interface Ctx {
  readonly label: string;
}

/** Functions that answer what they were called with, under their own name. */
const echoing = Object.fromEntries(
  DELEGATED_OPERATIONS.map((name) => [name, async (ctx: Ctx, ...args: unknown[]) => ({ name, ctx: ctx.label, args })]),
) as unknown as OperationFunctions<Ctx>;

class Echo extends DelegatingOperations<Ctx> {
  readonly runs: string[] = [];
  open = true;

  constructor() {
    super(echoing);
  }

  protected override async run<T>(operation: (ctx: Ctx) => Promise<T>): Promise<T> {
    if (!this.open) throw new Error("closed");
    this.runs.push("run");
    return operation({ label: "ctx" });
  }
}

describe("DelegatingOperations", () => {
  it("defines every delegated operation as its function of the context, through run", async () => {
    const echo = new Echo();
    for (const name of DELEGATED_OPERATIONS) {
      const operation = echo[name] as (...args: unknown[]) => Promise<unknown>;
      await expect(operation("a", 2)).resolves.toEqual({ name, ctx: "ctx", args: ["a", 2] });
    }
    expect(echo.runs).toHaveLength(DELEGATED_OPERATIONS.length);
  });

  it("lets run refuse the call (a closed store) before the function runs", async () => {
    const echo = new Echo();
    echo.open = false;
    await expect(echo.claim({ workerId: "w", queues: ["q"], max: 1, leaseMs: 1, now: 0 })).rejects.toThrow("closed");
  });

  it("names no operation a store writes itself", () => {
    for (const own of ["enqueue", "migrate", "close", "subscribeHints", "setStepHook", "capabilities"]) {
      expect(DELEGATED_OPERATIONS as readonly string[]).not.toContain(own);
    }
  });
});
