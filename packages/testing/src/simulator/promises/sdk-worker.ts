import type { PromiseRequest } from "@belay/contract";
import { StoreLink } from "../store-link.js";
import { type Answer, NO_WRITE, type PromiseWorld } from "./promise-world.js";

/** The address of the worker group every targeted promise names. */
export const TARGET = "poll://any@workers";

/**
 * A worker process shaped like the Resonate SDK's: it hears `execute` messages, acquires the
 * task at the message's version, runs the promise's function — fenced creates of its children,
 * then a fulfill once they have settled, or a suspend on the ones still pending (a 300 means
 * one settled meanwhile: look again) — and heartbeats its leases. A crash drops everything it
 * holds; a restart is a new process (a new pid).
 */
export class SdkWorker {
  readonly index: number;
  readonly skewMs: number;
  incarnation = 0;
  up = false;
  pid = "";
  #link: StoreLink | null = null;
  /** Tasks this process holds: id → the version it acquired. */
  readonly #held = new Map<string, number>();
  readonly #world: PromiseWorld;

  constructor(world: PromiseWorld, index: number) {
    this.#world = world;
    this.index = index;
    this.skewMs = world.plan.skewMs[index] ?? 0;
  }

  now(): number {
    return this.#world.scheduler.now + this.skewMs;
  }

  start(): void {
    if (this.up) return;
    const world = this.#world;
    this.incarnation++;
    this.up = true;
    this.pid = `w${this.index}.${this.incarnation}`;
    const incarnation = this.incarnation;
    const alive = () => this.up && this.incarnation === incarnation;
    this.#link = new StoreLink({ scheduler: world.scheduler, dice: world.dice, name: this.pid, faults: () => world.linkFaults(true), alive, onPerform: NO_WRITE });
    const beat = () => {
      if (!alive()) return;
      if (this.#held.size > 0) {
        const tasks = [...this.#held].map(([id, version]) => ({ id, version }));
        void this.#request({ kind: "task.heartbeat", pid: this.pid, tasks }, true);
      }
      world.scheduler.after(Math.floor(world.plan.ttlMs / 3), beat);
    };
    world.scheduler.after(Math.floor(world.plan.ttlMs / 3), beat);
  }

  crash(): void {
    this.up = false;
    this.#held.clear();
  }

  /** An `execute` message reached this process. */
  deliverExecute(id: string, version: number): void {
    if (this.up) void this.#execute(id, version, this.incarnation);
  }

  #request<R extends PromiseRequest>(request: R, heartbeat = false): Promise<Answer> {
    return this.#world.request(this.#link!, request, () => this.now(), heartbeat);
  }

  async #execute(id: string, version: number, incarnation: number): Promise<void> {
    const world = this.#world;
    const { ttlMs } = world.plan;
    const acquired = await this.#request({ kind: "task.acquire", id, version, pid: this.pid, ttl: ttlMs });
    if (!acquired.ok || acquired.status !== 200) return; // someone else has it, or the lease will lapse and it comes again
    const held = (acquired.data as { task: { version: number } }).task.version;
    this.#held.set(id, held);
    try {
      await this.#run(id, held);
    } finally {
      if (this.incarnation === incarnation && this.#held.get(id) === held) this.#held.delete(id);
    }
  }

  /** One execution of a promise's function, at `version`. Gives up (the lease lapses) on a fault it cannot get past. */
  async #run(id: string, version: number): Promise<void> {
    const world = this.#world;
    const program = world.programOf(id);
    let step = 0;
    for (const child of program) {
      let created = false;
      for (let tries = 0; tries < 3 && !created; tries++) {
        await world.stepDelay(id, version, step++, () => this.up);
        const answer = await this.#request({
          kind: "task.fence",
          id,
          version,
          action: { kind: "promise.create", id: child.id, timeoutAt: this.now() + child.timeoutMs, param: { data: child.kind }, tags: child.tags },
        });
        if (answer.ok && answer.status !== 200) return; // the fence refused: this execution lost its task
        created = answer.ok;
      }
      if (!created) return;
    }
    for (let round = 0; round < 6; round++) {
      await world.stepDelay(id, version, step++, () => this.up);
      const pending: string[] = [];
      let rejected = false;
      for (const child of program) {
        const answer = await this.#request({ kind: "promise.get", id: child.id });
        const state = answer.ok && answer.status === 200 ? (answer.data as { promise: { state: string } }).promise.state : "pending";
        if (state === "pending") pending.push(child.id);
        else if (state !== "resolved") rejected = true;
      }
      if (pending.length === 0) {
        await this.#request({
          kind: "task.fulfill",
          id,
          version,
          action: { kind: "promise.settle", id, state: rejected ? "rejected" : "resolved", value: { data: `${id}@${version}` } },
        });
        return;
      }
      const suspended = await this.#request({
        kind: "task.suspend",
        id,
        version,
        actions: pending.map((awaited) => ({ kind: "promise.register_callback" as const, awaited, awaiter: id })),
      });
      if (!suspended.ok) continue; // not known: look again (a repeated suspend is harmless)
      if (suspended.status === 300) continue; // something awaited settled meanwhile
      return; // parked (200) or refused (the task is no longer ours)
    }
  }
}
