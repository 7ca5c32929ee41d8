// What main.ts hands the client process of `pnpm bench:promises-http`, and the record it sends back.

/** Settings of one client process (one system, one run, one client count). */
export interface HttpClientConfig {
  /** The system's name in the results. */
  readonly label: string;
  readonly run: number;
  /** `http://127.0.0.1:<port>`: the listener serving `POST /`. */
  readonly url: string;
  /** Concurrent clients, each with its own keep-alive connection, running lifecycles one after another. */
  readonly clients: number;
  readonly warmupSeconds: number;
  /** Pause between the warm-up and the window. */
  readonly pauseMs: number;
  /** The window runs at least this long… */
  readonly seconds: number;
  /** …and at least this many lifecycles (capped at 4 × seconds). */
  readonly minLifecycles: number;
  /** The server process, for its CPU time across the window (`/proc`). */
  readonly serverPid: number;
  /** The PostgreSQL postmaster, for the cluster's CPU time across the window (`/proc`), or null. */
  readonly postmasterPid: number | null;
  /** The cluster's `postgres` database, for its WAL position and next transaction id across the window, or null. */
  readonly pgAdmin: string | null;
}

/** One cell's measurement, as the client prints it (`@@bench {json}`). */
export interface HttpCellRecord {
  readonly system: string;
  readonly run: number;
  readonly clients: number;
  readonly error?: string;
  readonly lifecycles?: number;
  readonly requests?: number;
  readonly ms?: number;
  readonly lifecycles_per_s?: number | null;
  readonly p50_ms?: number | null;
  readonly p95_ms?: number | null;
  readonly p99_ms?: number | null;
  readonly max_ms?: number | null;
  /** p50 of each request kind, ms, at the client (send to parsed answer). */
  readonly op_p50_ms?: Record<string, number | null>;
  readonly client_cpu_ms_per_lifecycle?: number | null;
  readonly server_cpu_ms_per_lifecycle?: number | null;
  readonly postgres_cpu_ms_per_lifecycle?: number | null;
  /** Transaction ids assigned (= write transactions committed or aborted) per lifecycle, cluster-wide. */
  readonly pg_write_xacts_per_lifecycle?: number | null;
  readonly pg_wal_kb_per_lifecycle?: number | null;
  readonly loadavg1?: number;
  readonly [key: string]: unknown;
}

export { median, percentile, round2 } from "../stats.js";
