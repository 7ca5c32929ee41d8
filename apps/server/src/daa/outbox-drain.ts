import type { Instant, OutboxDelivery, OutboxFilter, PromiseStore } from "@belay/contract";
import type { Clock, Logger } from "@belay/core";
import { parseAddress } from "./addresses.js";
import type { PollHub } from "./poll-hub.js";

// The outbox drain: takes messages from the promise store's outbox, delivers them and
// acknowledges what was delivered. The outbox is the truth, so delivery is at least once:
//
// - A pass takes only what this process can deliver (`PollHub.outboxFilter()`: its pollers'
//   addresses, and `http(s)://` targets), so processes sharing a database never hold each
//   other's messages. A message taken for a poller that left meanwhile is released at once, for
//   a process (or a later connection here) that has one.
// - An HTTP push that fails keeps its take until the lease lapses: the lease is the retry's
//   back-off. A lost `execute` is covered besides by its task's retry timer.
// - Now and then a sweep takes every message, whoever can deliver it: it delivers what it can,
//   drops what nobody ever will (an address this server cannot deliver to, `gcps://`,
//   `bash://`; an `unblock` past `unblockGiveUpMs` since it was written and taken before without
//   being delivered: its listener is gone, and the SDK registers its listeners again every
//   minute, which a settled promise answers with its record), and releases the rest at once.
//   What the store says of a message (`createdAt`, `takes`) decides: no process remembers.

/** Options of the drain. */
export interface OutboxDrainOptions {
  readonly store: PromiseStore;
  readonly hub: PollHub;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The URL the `execute` messages name as `head.serverUrl` (this listener's), when known. */
  readonly serverUrl: () => string | null;
  /** Messages per take. Default 100. */
  readonly batch?: number;
  /** How long a taken message stays invisible to other takes. Default 5 s. */
  readonly leaseMs?: number;
  /** Timeout of one HTTP push. Default 4 s, or 80% of a shorter lease. */
  readonly pushTimeoutMs?: number;
  /** How long after it was written an `unblock` nobody takes is given up. Default 10 min. */
  readonly unblockGiveUpMs?: number;
  /** How often a sweep runs. Default a tenth of `unblockGiveUpMs`, between 1 s and 1 min. */
  readonly sweepIntervalMs?: number;
}

/** What one pass did. */
export interface DrainPass {
  readonly taken: number;
  readonly delivered: number;
  /** Acknowledged undelivered: nobody will ever deliver them. */
  readonly dropped: number;
  /** Handed back at once, for another taker. */
  readonly released: number;
}

type Outcome = "delivered" | "dropped" | "released" | "kept";

/** POSTs `body` to `url`; `true` for a 2xx answer within `timeoutMs`. */
export async function pushHttp(url: string, body: string, timeoutMs: number): Promise<boolean> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body, signal: controller.signal, redirect: "manual" });
    await response.body?.cancel().catch(() => {});
    return response.status >= 200 && response.status < 300;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** The drain; `pass()` is one bounded pass (run by a `BackgroundLoop`). */
export class OutboxDrain {
  readonly #options: OutboxDrainOptions;
  readonly #batch: number;
  readonly #leaseMs: number;
  readonly #pushTimeoutMs: number;
  readonly #giveUpMs: number;
  readonly #sweepIntervalMs: number;
  #lastSweep: Instant | null = null;

  constructor(options: OutboxDrainOptions) {
    this.#options = options;
    this.#batch = options.batch ?? 100;
    this.#leaseMs = options.leaseMs ?? 5_000;
    this.#pushTimeoutMs = options.pushTimeoutMs ?? Math.min(4_000, Math.max(100, Math.floor(this.#leaseMs * 0.8)));
    this.#giveUpMs = options.unblockGiveUpMs ?? 10 * 60_000;
    this.#sweepIntervalMs = options.sweepIntervalMs ?? Math.min(60_000, Math.max(1_000, Math.floor(this.#giveUpMs / 10)));
  }

  /** One batch of what this process can deliver, and a sweep when one is due; `true` when the batch was full. */
  async pass(): Promise<boolean> {
    const drained = await this.drainOnce();
    const now = this.#options.clock.now();
    if (this.#lastSweep === null || now - this.#lastSweep >= this.#sweepIntervalMs || now < this.#lastSweep) {
      this.#lastSweep = now;
      await this.sweep();
    }
    return drained.taken >= this.#batch;
  }

  /** Takes up to one batch of what this process can deliver, delivers it, acknowledges or releases each. */
  async drainOnce(): Promise<DrainPass> {
    return this.#run(this.#options.hub.outboxFilter());
  }

  /** Takes up to one batch of every message: delivers what it can, drops what nobody will deliver, releases the rest. */
  async sweep(): Promise<DrainPass> {
    return this.#run(null);
  }

  async #run(filter: OutboxFilter | null): Promise<DrainPass> {
    const { store, clock } = this.#options;
    const now = clock.now();
    const deliveries = await store.takeOutbox({ now, max: this.#batch, leaseMs: this.#leaseMs, filter });
    if (deliveries.length === 0) return { taken: 0, delivered: 0, dropped: 0, released: 0 };
    const outcomes = await Promise.all(deliveries.map((delivery) => this.#deliver(delivery, now)));
    const ref = ({ key, address, token }: OutboxDelivery) => ({ key, address, token });
    const done = deliveries.filter((_, i) => outcomes[i] === "delivered" || outcomes[i] === "dropped");
    const back = deliveries.filter((_, i) => outcomes[i] === "released");
    if (done.length > 0) await store.acknowledgeOutbox({ deliveries: done.map(ref) });
    if (back.length > 0) await store.releaseOutbox({ deliveries: back.map(ref), now: clock.now() });
    const count = (outcome: Outcome) => outcomes.filter((o) => o === outcome).length;
    return { taken: deliveries.length, delivered: count("delivered"), dropped: count("dropped"), released: count("released") };
  }

  async #deliver(delivery: OutboxDelivery, now: Instant): Promise<Outcome> {
    const address = parseAddress(delivery.address);
    if (address.kind === "unsupported") {
      this.#options.logger.warn("outbox: dropping a message to an address this server cannot deliver to", { key: delivery.key, address: delivery.address });
      return "dropped";
    }
    const body = JSON.stringify(this.#wire(delivery));
    if (address.kind === "http") {
      if (await pushHttp(address.url, body, this.#pushTimeoutMs)) return "delivered";
      return this.#givenUp(delivery, now) ? "dropped" : "kept";
    }
    const poller = this.#options.hub.pick(address);
    if (poller !== null) {
      if (await poller.send(body)) return "delivered";
      // A write that failed ended the connection (its poller is gone from the hub); one that
      // somehow stays would be picked again by every pass.
      poller.close();
    }
    // Nobody here can take it now (a poller that just left; in a sweep, one connected
    // elsewhere or nowhere): hand it back at once, unless it is an unblock long given up.
    return this.#givenUp(delivery, now) ? "dropped" : "released";
  }

  /** An `unblock` written `unblockGiveUpMs` ago and taken before without being delivered: its listener is gone. */
  #givenUp(delivery: OutboxDelivery, now: Instant): boolean {
    if (delivery.message.kind !== "unblock" || delivery.takes < 2 || now - delivery.createdAt < this.#giveUpMs) return false;
    this.#options.logger.info("outbox: dropping an unblock nobody took", { key: delivery.key, address: delivery.address, ageMs: now - delivery.createdAt, takes: delivery.takes });
    return true;
  }

  /** The message as it goes over the wire: `{kind, head, data}`. */
  #wire(delivery: OutboxDelivery): unknown {
    const { message } = delivery;
    if (message.kind === "unblock") return { kind: "unblock", head: {}, data: message.data };
    const serverUrl = this.#options.serverUrl();
    return { kind: "execute", head: serverUrl === null ? {} : { serverUrl }, data: message.data };
  }
}
