import type { Instant, OutboxDelivery, PromiseStore } from "@belay/contract";
import type { Clock, Logger } from "@belay/core";
import { parseAddress } from "./addresses.js";
import type { PollHub } from "./poll-hub.js";

// The outbox drain: takes messages from the promise store's outbox, delivers them and
// acknowledges what was delivered. The outbox is the truth, so delivery is at least once:
//
// - A message whose poller is not connected here (or whose HTTP target failed) is left alone;
//   its take lease lapses and a later pass — of this process or another sharing the database —
//   takes it again. A lost `execute` is covered besides by its task's retry timer.
// - An `unblock` is retried so until it is delivered or its listener is gone: no poller of its
//   address reached for `unblockGiveUpMs` (the SDK registers its listeners again every minute,
//   and a settled promise answers that with its record).
// - A message to an address this server cannot deliver to (`gcps://`, `bash://`, …) is
//   acknowledged and logged: it would never be delivered.

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
  /** How long an `unblock` with nobody to take it is retried. Default 10 min. */
  readonly unblockGiveUpMs?: number;
}

/** What one pass did. */
export interface DrainPass {
  readonly taken: number;
  readonly delivered: number;
  readonly dropped: number;
}

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
  /** Undelivered unblocks: key + address → when this process first failed to deliver it. */
  readonly #missedSince = new Map<string, Instant>();

  constructor(options: OutboxDrainOptions) {
    this.#options = options;
    this.#batch = options.batch ?? 100;
    this.#leaseMs = options.leaseMs ?? 5_000;
    this.#pushTimeoutMs = options.pushTimeoutMs ?? Math.min(4_000, Math.max(100, Math.floor(this.#leaseMs * 0.8)));
    this.#giveUpMs = options.unblockGiveUpMs ?? 10 * 60_000;
  }

  /** Takes up to one batch, delivers it, acknowledges what is done; `true` when the batch was full. */
  async pass(): Promise<boolean> {
    return (await this.drainOnce()).taken >= this.#batch;
  }

  /** One pass, with what it did. */
  async drainOnce(): Promise<DrainPass> {
    const { store, clock } = this.#options;
    const now = clock.now();
    const deliveries = await store.takeOutbox({ now, max: this.#batch, leaseMs: this.#leaseMs });
    if (deliveries.length === 0) return { taken: 0, delivered: 0, dropped: 0 };
    const outcomes = await Promise.all(deliveries.map((delivery) => this.#deliver(delivery, now)));
    const done = deliveries.filter((_, i) => outcomes[i] !== "kept");
    if (done.length > 0) await store.acknowledgeOutbox({ deliveries: done.map(({ key, address, token }) => ({ key, address, token })) });
    this.#prune(now);
    return { taken: deliveries.length, delivered: outcomes.filter((o) => o === "delivered").length, dropped: outcomes.filter((o) => o === "dropped").length };
  }

  /** Forgets what the drain remembers of undelivered messages (`debug.reset`). */
  forget(): void {
    this.#missedSince.clear();
  }

  async #deliver(delivery: OutboxDelivery, now: Instant): Promise<"delivered" | "kept" | "dropped"> {
    const address = parseAddress(delivery.address);
    const miss = `${delivery.key}\n${delivery.address}`;
    if (address.kind === "unsupported") {
      this.#options.logger.warn("outbox: dropping a message to an address this server cannot deliver to", { key: delivery.key, address: delivery.address });
      return "dropped";
    }
    const body = JSON.stringify(this.#wire(delivery));
    let delivered: boolean;
    if (address.kind === "poll") {
      const poller = this.#options.hub.pick(address);
      delivered = poller !== null && (await poller.send(body));
    } else {
      delivered = await pushHttp(address.url, body, this.#pushTimeoutMs);
    }
    if (delivered) {
      this.#missedSince.delete(miss);
      return "delivered";
    }
    if (delivery.message.kind !== "unblock") return "kept";
    const since = this.#missedSince.get(miss);
    if (since === undefined) {
      this.#missedSince.set(miss, now);
      return "kept";
    }
    if (now - since < this.#giveUpMs) return "kept";
    this.#missedSince.delete(miss);
    this.#options.logger.info("outbox: dropping an unblock nobody took", { key: delivery.key, address: delivery.address, sinceMs: now - since });
    return "dropped";
  }

  /** The message as it goes over the wire: `{kind, head, data}`. */
  #wire(delivery: OutboxDelivery): unknown {
    const { message } = delivery;
    if (message.kind === "unblock") return { kind: "unblock", head: {}, data: message.data };
    const serverUrl = this.#options.serverUrl();
    return { kind: "execute", head: serverUrl === null ? {} : { serverUrl }, data: message.data };
  }

  #prune(now: Instant): void {
    if (this.#missedSince.size < 1_000) return;
    // Entries whose message another process delivered are never deleted by a delivery here.
    for (const [miss, since] of this.#missedSince) if (now - since > 2 * this.#giveUpMs) this.#missedSince.delete(miss);
  }
}
