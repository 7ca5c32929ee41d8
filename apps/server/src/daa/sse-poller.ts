import type { SSEStreamingApi } from "hono/streaming";
import type { Poller } from "./poll-hub.js";

// One `GET /poll/:group/:id` connection: messages go out as unnamed `data:` lines (one JSON
// message per event), with a comment line now and then so proxies and the client's reader see
// the connection alive. A write that does not complete within `writeTimeoutMs` (a client that
// stopped reading) ends the connection: the message stays in the outbox for the next pass.

const KEEP_ALIVE_MS = 15_000;

/** A poller over a Server-Sent Events stream. */
export class SsePoller implements Poller {
  readonly group: string;
  readonly id: string;
  readonly #writeTimeoutMs: number;
  #stream: SSEStreamingApi | null = null;
  #closed = false;
  #keepAlive: ReturnType<typeof setInterval> | null = null;
  #ended!: () => void;
  /** Settles when the connection ends (closed by either side). */
  readonly ended: Promise<void>;
  readonly #onClose: (poller: SsePoller) => void;

  constructor(group: string, id: string, options: { readonly writeTimeoutMs: number; readonly onClose: (poller: SsePoller) => void }) {
    this.group = group;
    this.id = id;
    this.#writeTimeoutMs = options.writeTimeoutMs;
    this.#onClose = options.onClose;
    this.ended = new Promise((resolve) => (this.#ended = resolve));
  }

  /** Binds the stream once the response has started. */
  async attach(stream: SSEStreamingApi): Promise<void> {
    if (this.#closed) return;
    this.#stream = stream;
    stream.onAbort(() => this.close());
    this.#keepAlive = setInterval(() => void this.#write(": keep-alive\n\n"), KEEP_ALIVE_MS);
    this.#keepAlive.unref?.();
    // A first line flushes the response head, so the client's EventSource opens at once.
    await this.#write(": connected\n\n");
  }

  send(data: string): Promise<boolean> {
    return this.#write(`data: ${data}\n\n`);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#keepAlive !== null) clearInterval(this.#keepAlive);
    this.#onClose(this);
    void this.#stream?.close().catch(() => {});
    this.#ended();
  }

  async #write(text: string): Promise<boolean> {
    const stream = this.#stream;
    if (this.#closed || stream === null || stream.aborted || stream.closed) return false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.#writeTimeoutMs)));
    try {
      const written = await Promise.race([stream.write(text).then(() => true as const), timedOut]);
      if (!written) this.close();
      return written;
    } catch {
      this.close();
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
