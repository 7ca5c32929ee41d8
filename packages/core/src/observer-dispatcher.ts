import {
  type ClaimObserverDeliveriesResult, type JobState, type JobStore, type ObserverDelivery, type ObserverDeliveryOutcome,
  InvalidInputError,
} from "@belay/contract";
import type { Clock } from "./clock.js";
import { type Backoff, type FaultBackoffRange, FaultState, classifyStoreFault, nextBackoff } from "./fault-policy.js";
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

/**
 * The observer dispatcher's state, for health endpoints. It follows the pumps' fault policy: a
 * transient store fault makes it `degraded` while it backs off and retries; any other store fault
 * stops it (`stopped`, with the fault in `halted`) — its delivery leases lapse to peers — while
 * the worker's pumps keep running. Errors of an observer's own callback are not store faults:
 * they are retried and dead-lettered per transition.
 */
export interface ObserversHealth {
  /** `stopped` after a non-transient store fault (see `halted`) or once the worker has stopped. */
  readonly status: "running" | "degraded" | "stopped";
  /** The store fault that stopped the dispatcher, or `null`. */
  readonly halted: string | null;
  /** The latest store fault, kept after recovery; `null` before any. */
  readonly lastError: string | null;
  /** The ids of the observers this worker dispatches. */
  readonly ids: readonly string[];
}

interface Loop {
  readonly options: ObserverOptions;
  readonly policy: RetryPolicy;
  /** The backoff after this observer's last transient store fault; `null` once a round succeeds. */
  backoff: Backoff | null;
}

/** How one round ended: the store call that failed is named, for the log. */
type Round =
  | { readonly status: "done"; /** The claim was full: more may wait. */ readonly full: boolean }
  | { readonly status: "storeFault"; readonly operation: string; readonly error: unknown };

/** Runs every observer of a worker: claim deliveries, call back in order, report, repeat. */
export class ObserverDispatcher {
  readonly #store: JobStore;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #workerId: string;
  readonly #pollIntervalMs: number;
  readonly #faultBackoffMs: FaultBackoffRange;
  readonly #loops: Loop[];
  /** One fault state for all observers, as a pump has one for all its store calls. */
  readonly #faults = new FaultState();
  #stopping = false;
  #stopped = false;
  #busy = 0;
  readonly #running: Promise<void>[] = [];
  readonly #wakers = new Set<() => void>();

  constructor(options: {
    store: JobStore;
    clock: Clock;
    logger: Logger;
    workerId: string;
    pollIntervalMs: number;
    /** Backoff after a transient store fault (the pumps' range). */
    faultBackoffMs: FaultBackoffRange;
    observers: readonly ObserverOptions[];
  }) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#workerId = options.workerId;
    this.#pollIntervalMs = options.pollIntervalMs;
    this.#faultBackoffMs = options.faultBackoffMs;
    const ids = new Set<string>();
    this.#loops = options.observers.map((o, i) => {
      if (typeof o.handle !== "function") throw new InvalidInputError(`observers[${i}].handle`, "must be a function");
      if (ids.has(o.id)) throw new InvalidInputError(`observers[${i}].id`, `repeats observer ${o.id}`);
      ids.add(o.id);
      return { options: o, policy: retryPolicy(o.retry), backoff: null };
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

  /** The dispatcher's state under the fault policy (see {@link ObserversHealth}). */
  health(): ObserversHealth {
    const status = this.#stopped ? "stopped" : this.#faults.status;
    return { status, halted: this.#faults.stopped, lastError: this.#faults.lastFault, ids: this.#loops.map((l) => l.options.id) };
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    for (const wake of this.#wakers) wake();
    await Promise.all(this.#running);
    this.#stopped = true;
  }

  async #run(loop: Loop): Promise<void> {
    while (!this.#stopping) {
      let round: Round;
      this.#busy++;
      try {
        round = await this.#cycle(loop);
      } catch (error) {
        // Callback errors never get here (each is retried or dead-lettered); nothing but a store
        // call is expected to throw, so whatever does falls under the store fault policy.
        round = { status: "storeFault", operation: "observerCycle", error };
      } finally {
        this.#busy--;
      }
      if (round.status === "done") {
        loop.backoff = null;
        this.#faults.recovered();
        if (!round.full) await this.#sleep(this.#pollIntervalMs);
        continue;
      }
      if (!this.#onStoreFault(loop, round)) return;
      await this.#sleep(loop.backoff!.ms);
    }
  }

  /** Applies the fault policy; returns whether this observer goes on (after its backoff). */
  #onStoreFault(loop: Loop, { operation, error }: Extract<Round, { status: "storeFault" }>): boolean {
    if (this.#faults.stopped !== null) return false; // stopped meanwhile by another observer's fault
    const observerId = loop.options.id;
    const fault = classifyStoreFault(error);
    if (this.#faults.record(fault).type === "backOff") {
      loop.backoff = nextBackoff(loop.backoff, this.#clock.now(), this.#faultBackoffMs);
      this.#logger.warn("transient store fault", { operation, observerId, error: fault.message, retryInMs: loop.backoff.ms });
      return true;
    }
    this.#logger.error("store fault: the observer dispatcher stops", { operation, observerId, error: fault.message, workerId: this.#workerId });
    // Fail-stop: every observer stops claiming and reporting; its delivery leases lapse to peers.
    this.#stopping = true;
    for (const wake of this.#wakers) wake();
    return false;
  }

  /** One claim → deliver → report round. */
  async #cycle({ options, policy }: Loop): Promise<Round> {
    let claim: ClaimObserverDeliveriesResult;
    try {
      claim = await this.#store.claimObserverDeliveries({
        observerId: options.id,
        workerId: this.#workerId,
        max: BATCH,
        leaseMs: LEASE_MS,
        now: this.#clock.now(),
      });
    } catch (error) {
      return { status: "storeFault", operation: "claimObserverDeliveries", error };
    }
    if (claim.status !== "acquired" || claim.deliveries.length === 0) return { status: "done", full: false };
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
    // After a fail-stop nothing more is reported: the deliveries come again, at least once.
    if (outcomes.length > 0 && this.#faults.stopped === null) {
      try {
        await this.#store.reportObserverDeliveries({ observerId: options.id, workerId: this.#workerId, outcomes, now: this.#clock.now() });
      } catch (error) {
        return { status: "storeFault", operation: "reportObserverDeliveries", error };
      }
    }
    return { status: "done", full: claim.deliveries.length >= BATCH && outcomes.every((o) => o.outcome !== "retry") };
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
