import {
  type JobState,
  type JobStore,
  type ObserverDelivery,
  type ObserverDeliveryOutcome,
  InvalidInputError,
  isBelayError,
} from "@belay/contract";
import type { Clock } from "./clock.js";
import type { Logger } from "./logger.js";
import { type RetryOptions, type RetryPolicy, decideFailure, retryPolicy } from "./retry.js";

/**
 * Application code told when jobs reach chosen states (e.g. dead-lettered → page someone).
 * Delivered at least once, in commit order per observer; a failing callback is retried with its
 * policy while later transitions wait (head-of-line), then dead-lettered.
 */
export interface ObserverOptions {
  /** Stable id: the observer's cursor is stored under it. */
  readonly id: string;
  readonly states: readonly JobState[];
  readonly jobNames?: readonly string[];
  readonly queues?: readonly string[];
  /** A new observer starts at the end of the log (default) or replays it from the beginning. */
  readonly startAt?: "beginning" | "end";
  /** Default: 10 attempts, `min(2^n, 300)` s apart. */
  readonly retry?: RetryOptions;
  /** A callback running longer than this counts as failed. Default 30 s. */
  readonly timeoutMs?: number;
  readonly handle: (delivery: ObserverDelivery, ctx: { readonly signal: AbortSignal }) => void | Promise<void>;
}

const BATCH = 32;
const LEASE_MS = 60_000;

interface Loop {
  readonly options: ObserverOptions;
  readonly policy: RetryPolicy;
}

/** Runs every observer of a worker: claim deliveries, call back in order, report, repeat. */
export class ObserverDispatcher {
  readonly #store: JobStore;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #workerId: string;
  readonly #pollIntervalMs: number;
  readonly #loops: Loop[];
  #stopping = false;
  #busy = 0;
  readonly #running: Promise<void>[] = [];
  readonly #wakers = new Set<() => void>();

  constructor(options: {
    store: JobStore;
    clock: Clock;
    logger: Logger;
    workerId: string;
    pollIntervalMs: number;
    observers: readonly ObserverOptions[];
  }) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#workerId = options.workerId;
    this.#pollIntervalMs = options.pollIntervalMs;
    const ids = new Set<string>();
    this.#loops = options.observers.map((o, i) => {
      if (typeof o.handle !== "function") throw new InvalidInputError(`observers[${i}].handle`, "must be a function");
      if (ids.has(o.id)) throw new InvalidInputError(`observers[${i}].id`, `repeats observer ${o.id}`);
      ids.add(o.id);
      return { options: o, policy: retryPolicy(o.retry) };
    });
    if (this.#loops.length > 0 && options.store.capabilities.historyPolicy === "off") {
      throw new InvalidInputError("observers", "observers need a store whose history policy records transitions");
    }
  }

  async start(): Promise<void> {
    for (const { options } of this.#loops) {
      await this.#store.registerObserver({
        subscription: {
          observerId: options.id,
          states: options.states,
          ...(options.jobNames ? { jobNames: options.jobNames } : {}),
          ...(options.queues ? { queues: options.queues } : {}),
        },
        startAt: options.startAt ?? "end",
        now: this.#clock.now(),
      });
    }
    for (const loop of this.#loops) this.#running.push(this.#run(loop));
  }

  /** Observer cycles under way. */
  get inflight(): number {
    return this.#busy;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    for (const wake of this.#wakers) wake();
    await Promise.all(this.#running);
  }

  async #run(loop: Loop): Promise<void> {
    while (!this.#stopping) {
      let full = false;
      this.#busy++;
      try {
        full = await this.#cycle(loop);
      } catch (error) {
        const transient = isBelayError(error, "BELAY_TRANSIENT_STORE");
        this.#logger.warn("observer cycle failed", { observerId: loop.options.id, transient, error: String(error) });
      } finally {
        this.#busy--;
      }
      if (!full) await this.#sleep(this.#pollIntervalMs);
    }
  }

  /** One claim → deliver → report round. Returns whether the claim was full (more may wait). */
  async #cycle({ options, policy }: Loop): Promise<boolean> {
    const claim = await this.#store.claimObserverDeliveries({
      observerId: options.id,
      workerId: this.#workerId,
      max: BATCH,
      leaseMs: LEASE_MS,
      now: this.#clock.now(),
    });
    if (claim.status !== "acquired" || claim.deliveries.length === 0) return false;
    const outcomes: ObserverDeliveryOutcome[] = [];
    for (const delivery of claim.deliveries) {
      if (this.#stopping) break;
      try {
        await this.#call(options, delivery);
        outcomes.push({ position: delivery.position, outcome: "delivered" });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const decision = decideFailure(policy, `${options.id}#${delivery.position}`, delivery.deliveryAttempt, this.#clock.now());
        if (decision.type === "retry") {
          outcomes.push({ position: delivery.position, outcome: "retry", retryAt: decision.retryAt, error: message });
          break; // later transitions wait behind this one
        }
        this.#logger.error("observer gave up on a transition", { observerId: options.id, position: delivery.position, error: message });
        outcomes.push({ position: delivery.position, outcome: "deadLettered", error: message || "failed" });
      }
    }
    if (outcomes.length > 0) {
      await this.#store.reportObserverDeliveries({ observerId: options.id, workerId: this.#workerId, outcomes, now: this.#clock.now() });
    }
    return claim.deliveries.length >= BATCH && outcomes.every((o) => o.outcome !== "retry");
  }

  async #call(options: ObserverOptions, delivery: ObserverDelivery): Promise<void> {
    const controller = new AbortController();
    const timeoutMs = options.timeoutMs ?? 30_000;
    let timer: { cancel(): void } | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.#clock.setTimer(this.#clock.now() + timeoutMs, () => {
        controller.abort();
        reject(new Error(`observer callback timed out after ${timeoutMs} ms`));
      });
    });
    try {
      await Promise.race([Promise.resolve(options.handle(delivery, { signal: controller.signal })), timeout]);
    } finally {
      timer?.cancel();
    }
  }

  #sleep(ms: number): Promise<void> {
    if (this.#stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.#wakers.delete(wake);
        handle.cancel();
        resolve();
      };
      const handle = this.#clock.setTimer(this.#clock.now() + ms, wake);
      this.#wakers.add(wake);
    });
  }
}
