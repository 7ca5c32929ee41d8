import type { PostgresPool, PostgresPoolClient, PostgresQueryConfig } from "../src/index.js";

/**
 * A pool that counts the statements (round trips) its connections run, by text (BEGIN, COMMIT, …).
 * The outbox hints (a NOTIFY after a commit, coalesced, on a connection of its own) are no
 * operation's round trips: they are counted apart, in `hints`.
 */
export class CountingPool implements PostgresPool {
  readonly statements: string[] = [];
  /** Which connection (numbered from 0 as checked out) ran each of `statements`. */
  readonly connections: number[] = [];
  /** How many NOTIFY statements went out since the last reset. */
  hints = 0;
  /** How many connections were given back since the last reset. */
  released = 0;
  /** The connections checked out and not yet given back, by number (their backend pids). */
  readonly out = new Map<number, number>();
  #checkouts = 0;
  /** How long each of `statements` took, in milliseconds (client-side: the round trip and the server's work). */
  readonly durations: number[] = [];
  constructor(private readonly inner: PostgresPool) {}

  /** Forgets what was counted. */
  reset(): void {
    this.statements.length = 0;
    this.connections.length = 0;
    this.durations.length = 0;
    this.hints = 0;
    this.released = 0;
  }

  /** The statements run since the last reset, each as its first words (BEGIN, COMMIT, WITH aw …, SELECT …). */
  get count(): number {
    return this.statements.length;
  }

  async connect(): Promise<PostgresPoolClient> {
    const client = await this.inner.connect();
    const statements = this.statements;
    const durations = this.durations;
    const counting = this;
    const number = this.#checkouts++;
    this.out.set(number, (client as { readonly processID?: number }).processID ?? -1);
    return new Proxy(client, {
      get(target, property, receiver) {
        if (property === "release") {
          return (destroy?: boolean | Error) => {
            counting.released++;
            counting.out.delete(number);
            target.release(destroy);
          };
        }
        if (property === "query") {
          return async (config: PostgresQueryConfig) => {
            if (config.text.includes("pg_notify(")) {
              counting.hints++;
              return target.query(config);
            }
            statements.push(config.text.trim().split(/\s+/).slice(0, 3).join(" "));
            counting.connections.push(number);
            const start = performance.now();
            try {
              return await target.query(config);
            } finally {
              durations.push(performance.now() - start);
            }
          };
        }
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  end(): Promise<void> {
    return this.inner.end();
  }
}

/** Waits until `n` backends of the pool's database wait for a lock (20 s at most, for a loaded machine). */
export async function lockWaiters(pool: { query(text: string): Promise<{ rows: { n: number }[] }> }, n: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    if (rows[0]!.n >= n) return;
    if (Date.now() > deadline) throw new Error(`fewer than ${n} lock waiters after 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
