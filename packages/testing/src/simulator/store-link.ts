import { TransientStoreError } from "@belay/contract";
import type { KeyedDice } from "./prng.js";
import type { Scheduler } from "./scheduler.js";

/** How long a caller waits for an answer that never comes before it sees a timeout. */
export const CALL_TIMEOUT_MS = 2_500;

/** The faults of a link, read at each call (so they stop when the faults stop). */
export interface LinkFaults {
  /** A transient fault before the write: nothing is done. */
  readonly before: number;
  /** A lost acknowledgement: done, the caller sees a transient fault. */
  readonly after: number;
  /** A non-transient fault (the connection broke in a way the caller does not retry). */
  readonly fatal: number;
  /** The request is lost: the caller times out. */
  readonly drop: number;
  readonly latencyMs: number;
}

/** One call over a link. */
export interface LinkCall<T> {
  /** The operation, for fault keys and messages (`claim`, `heartbeat`, …). */
  readonly op: string;
  /** Runs the operation against the store, at the instant the request arrives. */
  readonly perform: () => Promise<T>;
  /** Right after `perform` (same step), with its result: what the oracles need to know of it. */
  readonly performed?: (result: T) => void;
  readonly answer: (result: T) => void;
  readonly fail: (error: unknown) => void;
  /** The caller is real async code: drain microtasks after its answer. */
  readonly settle?: boolean;
  /** The link's request-loss axis applies to this call (only heartbeats set it). */
  readonly drop?: boolean;
}

/**
 * The network between one caller (a node incarnation, the client, the operator, a promise
 * worker) and the store: latency both ways, transient faults before the write, lost
 * acknowledgements after it, lost requests (timeouts), isolation, and a crash that silences every
 * answer still on its way. A request already sent still reaches the store after its sender
 * crashed: the database does not know.
 */
export class StoreLink {
  readonly #scheduler: Scheduler;
  readonly #dice: KeyedDice;
  readonly #name: string;
  readonly #faults: () => LinkFaults | null;
  readonly #isolated: () => boolean;
  readonly #alive: () => boolean;
  readonly #onPerform: () => void;
  readonly #counters = new Map<string, number>();

  constructor(options: {
    scheduler: Scheduler;
    dice: KeyedDice;
    /** Stable name of the caller (with its incarnation): the fault keys. */
    name: string;
    /** The link's faults now; `null` once the faults have stopped. */
    faults: () => LinkFaults | null;
    isolated?: () => boolean;
    /** Whether the caller still exists to hear an answer. */
    alive?: () => boolean;
    /** Called after every performed operation (the step wrote to the store). */
    onPerform: () => void;
  }) {
    this.#scheduler = options.scheduler;
    this.#dice = options.dice;
    this.#name = options.name;
    this.#faults = options.faults;
    this.#isolated = options.isolated ?? (() => false);
    this.#alive = options.alive ?? (() => true);
    this.#onPerform = options.onPerform;
  }

  call<T>(call: LinkCall<T>): void {
    const n = this.#counters.get(call.op) ?? 0;
    this.#counters.set(call.op, n + 1);
    const key = [this.#name, call.op, n] as const;
    const faults = this.#faults();
    const dice = this.#dice;
    const latency = faults?.latencyMs ?? 2;
    const up = dice.int(0, latency, ...key, "up");
    const down = dice.int(0, latency, ...key, "down");
    const sentAt = this.#scheduler.now;
    const respond = (run: () => void) => {
      this.#scheduler.after(down, () => {
        if (!this.#alive()) return;
        // An answer to an isolated caller is lost on the way: it sees its own timeout instead.
        if (this.#isolated()) this.#timeout(call, sentAt);
        else run();
      }, call.settle);
    };
    let fault: "drop" | "before" | "after" | "fatal" | null = null;
    if (faults !== null) {
      if (call.drop === true && dice.chance(faults.drop, ...key, "drop")) fault = "drop";
      else if (dice.chance(faults.before, ...key, "before")) fault = "before";
      else if (dice.chance(faults.after, ...key, "after")) fault = "after";
      else if (dice.chance(faults.fatal, ...key, "fatal")) fault = "fatal";
    }
    this.#scheduler.after(up, async () => {
      if (fault === "drop" || this.#isolated()) {
        this.#timeout(call, sentAt);
        return;
      }
      if (fault === "before") {
        respond(() => call.fail(new TransientStoreError(`simulated: ${call.op} failed before it wrote (serialization failure)`)));
        return;
      }
      if (fault === "fatal") {
        respond(() => call.fail(new Error(`simulated: ${call.op} hit a broken connection`)));
        return;
      }
      let result: T;
      try {
        result = await call.perform();
      } catch (error) {
        this.#onPerform();
        respond(() => call.fail(error));
        return;
      }
      this.#onPerform();
      call.performed?.(result);
      if (fault === "after") respond(() => call.fail(new TransientStoreError(`simulated: ${call.op} committed, but the acknowledgement was lost`)));
      else respond(() => call.answer(result));
    });
  }

  #timeout(call: Pick<LinkCall<unknown>, "op" | "fail" | "settle">, sentAt: number): void {
    this.#scheduler.at(sentAt + CALL_TIMEOUT_MS, () => {
      if (this.#alive()) call.fail(new TransientStoreError(`simulated: ${call.op} timed out`));
    }, call.settle);
  }
}
