import { createHash } from "node:crypto";
import type { HintListener } from "@belay/contract";
import type { PostgresClient, PostgresNotification, PostgresPool, PostgresPoolClient } from "./pool.js";
import { TYPE_PARSERS } from "./session.js";

// Wake-up hints are lossy by contract: they only make an idle worker poll sooner. Everything
// here is transport — timers and reconnects live in this file and decide nothing about jobs.

/** The NOTIFY channel of one schema: a short identifier derived from the schema name. */
export function hintChannel(schemaName: string): string {
  return `belay_hints_${createHash("sha1").update(schemaName).digest("hex").slice(0, 16)}`;
}

/**
 * The NOTIFY channel of one schema's outbox (`PostgresPromiseStore#subscribeOutbox`): its only
 * payload is {@link OUTBOX_WAITING}, "a message waiting" — the outbox table stays the truth.
 */
export function outboxChannel(schemaName: string): string {
  return `belay_outbox_${createHash("sha1").update(schemaName).digest("hex").slice(0, 16)}`;
}

/** The one payload of an outbox channel. */
export const OUTBOX_WAITING = "outbox";

/** `text` as an SQL string literal (as pg's escapeLiteral does). */
function quoteLiteral(text: string): string {
  const hasBackslash = text.includes("\\");
  const body = text.replace(/'/g, "''").replace(/\\/g, "\\\\");
  return hasBackslash ? ` E'${body}'` : `'${body}'`;
}

/** Least time between two NOTIFY statements of one store: bursts of enqueues share one. */
const MIN_NOTIFY_INTERVAL_MS = 5;

/**
 * Sends hints after Belay's own commits, coalesced: queues pile up while a NOTIFY is in flight
 * or was sent less than a few milliseconds ago, and go out together in one statement. A NOTIFY
 * inside a busy transaction would serialize commits behind the cluster-wide notification lock;
 * a separate tiny one, a few hundred times a second at most, does not.
 *
 * It goes out on the store's own LISTEN connection when that one is open — never queued behind
 * the enqueues and claims waiting for a pool connection, and heard by this process's workers too
 * (PostgreSQL delivers a notification to the session that sent it) — and on a pool connection
 * otherwise (a store nobody in this process listens to).
 */
export class HintPublisher {
  readonly #pool: PostgresPool;
  readonly #channel: string;
  readonly #dedicated: () => PostgresClient | null;
  readonly #pending = new Set<string>();
  #flushing: Promise<void> | null = null;
  #lastSentAt = 0;

  /** @param dedicated the open LISTEN connection, if any (used without being borrowed). */
  constructor(pool: PostgresPool, channel: string, dedicated: () => PostgresClient | null = () => null) {
    this.#pool = pool;
    this.#channel = channel;
    this.#dedicated = dedicated;
  }

  /** Queues that now hold due work (already committed). */
  publish(queues: Iterable<string>): void {
    for (const queue of queues) this.#pending.add(queue);
    if (this.#pending.size > 0 && this.#flushing === null) this.#flushing = this.#flush();
  }

  /** Resolves once nothing is pending or in flight. */
  async drain(): Promise<void> {
    while (this.#flushing !== null) await this.#flushing;
  }

  async #flush(): Promise<void> {
    try {
      while (this.#pending.size > 0) {
        const wait = this.#lastSentAt + MIN_NOTIFY_INTERVAL_MS - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const queues = [...this.#pending];
        this.#pending.clear();
        this.#lastSentAt = Date.now();
        await this.#send(queues);
      }
    } finally {
      this.#flushing = null;
    }
  }

  async #send(queues: string[]): Promise<void> {
    // One simple-protocol string, so SET LOCAL covers its implicit transaction: a hint needs no
    // durability, and with synchronous_commit off its commit does not wait for a WAL flush
    // (a NOTIFY takes a transaction id, so its commit would otherwise cost an fsync).
    const list = queues.map(quoteLiteral).join(", ");
    const text = `SET LOCAL synchronous_commit = off; SELECT pg_notify(${quoteLiteral(this.#channel)}, q) FROM unnest(ARRAY[${list}]::text[]) AS q`;
    const dedicated = this.#dedicated();
    if (dedicated !== null) {
      try {
        await dedicated.query({ text, types: TYPE_PARSERS });
      } catch {
        // Lost (the subscription notices a broken connection on its own and reconnects).
      }
      return;
    }
    let client: PostgresPoolClient | undefined;
    try {
      client = await this.#pool.connect();
      await client.query({ text, types: TYPE_PARSERS });
      client.release();
    } catch (error) {
      // A lost hint costs latency only; the workers' polling still finds the work.
      client?.release(error instanceof Error ? error : true);
    }
  }
}

/**
 * One LISTEN connection per store, opened while someone subscribes and reopened on its own
 * (with backoff) whenever it breaks. Losing it only costs latency: workers keep polling.
 */
export class HintSubscription {
  readonly #acquire: () => Promise<PostgresPoolClient>;
  readonly #channel: string;
  readonly #listeners = new Set<HintListener>();
  #client: PostgresPoolClient | null = null;
  #closeClient: (() => void) | null = null;
  #connecting: Promise<void> | null = null;
  #retry: ReturnType<typeof setTimeout> | null = null;
  #backoffMs = 0;
  #closed = false;

  constructor(acquire: () => Promise<PostgresPoolClient>, channel: string) {
    this.#acquire = acquire;
    this.#channel = channel;
  }

  /** Whether a LISTEN connection is currently open. */
  get connected(): boolean {
    return this.#client !== null;
  }

  /** The open LISTEN connection (held by this subscription; never release it), or `null`. */
  get client(): PostgresClient | null {
    return this.#client;
  }

  /**
   * Hands this process's own hints to its listeners at once, without waiting for the server to
   * echo the `NOTIFY` (which then is not delivered twice: see the notification handler).
   */
  deliver(queues: Iterable<string>): void {
    if (this.#listeners.size === 0) return;
    for (const queue of queues) this.#emit(queue);
  }

  #emit(queue: string): void {
    for (const listener of this.#listeners) {
      try {
        listener(queue);
      } catch {
        // A failing listener must not break delivery to the others.
      }
    }
  }

  subscribe(listener: HintListener): () => void {
    this.#listeners.add(listener);
    this.#open();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#shut();
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
    this.#shut();
    await this.#connecting;
  }

  #open(): void {
    if (this.#closed || this.#listeners.size === 0 || this.#client !== null || this.#connecting !== null || this.#retry !== null) return;
    this.#connecting = this.#connect().finally(() => {
      this.#connecting = null;
    });
  }

  #shut(): void {
    if (this.#retry !== null) clearTimeout(this.#retry);
    this.#retry = null;
    this.#closeClient?.();
  }

  #reconnectLater(): void {
    if (this.#closed || this.#listeners.size === 0 || this.#retry !== null) return;
    this.#backoffMs = Math.min(Math.max(this.#backoffMs * 2, 100), 5_000);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.#open();
    }, this.#backoffMs);
    this.#retry.unref?.();
  }

  async #connect(): Promise<void> {
    let client: PostgresPoolClient;
    try {
      client = await this.#acquire();
    } catch {
      this.#reconnectLater();
      return;
    }
    let released = false;
    // Destroyed, never returned to the pool: a pooled connection must not keep listening.
    const finish = (error: Error | true, reconnect: boolean) => {
      if (released) return;
      released = true;
      if (this.#client === client) {
        this.#client = null;
        this.#closeClient = null;
      }
      client.release(error);
      if (reconnect) this.#reconnectLater();
    };
    const drop = (error?: Error) => finish(error ?? true, true);
    const ownPid = (client as { processID?: unknown }).processID;
    client.on("notification", (message: PostgresNotification) => {
      if (message.channel !== this.#channel || !message.payload) return;
      // Sent on this very connection by this store's publisher: already delivered in-process.
      if (ownPid !== undefined && message.processId === ownPid) return;
      this.#emit(message.payload);
    });
    client.on("error", (error: Error) => drop(error));
    client.on("end", () => drop());
    try {
      await client.query({ text: `LISTEN "${this.#channel}"` });
    } catch (error) {
      drop(error instanceof Error ? error : undefined);
      return;
    }
    if (released) return;
    if (this.#closed || this.#listeners.size === 0) {
      finish(true, false);
      return;
    }
    this.#client = client;
    this.#closeClient = () => finish(true, false);
    this.#backoffMs = 0;
  }
}
