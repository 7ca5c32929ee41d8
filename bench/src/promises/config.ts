// What main.ts hands each runner of `pnpm bench:promises`, and the small numeric helpers both use.
import type { ShapeName } from "./shapes.js";

/** Settings of one runner (one system, one run). */
export interface PromiseChildConfig {
  /** The store driven: a Belay store or the SDK's in-memory server. */
  readonly system: "sqlite" | "postgres" | "sdk-server";
  /** The system's name in the results (e.g. `sqlite-roots`). */
  readonly label: string;
  readonly run: number;
  /** Pending targeted promises created before each cell's warm-up and left pending. */
  readonly liveRoots: number;
  readonly shapes: readonly ShapeName[];
  readonly callers: readonly number[];
  /** Each measured window runs at least this long… */
  readonly seconds: number;
  /** …and at least this many lifecycles (capped at 4 × seconds). */
  readonly minLifecycles: number;
  readonly warmupSeconds: number;
  /** Pause between a cell's warm-up and its window. */
  readonly cellPauseMs: number;
  /** Where SQLite files go. */
  readonly scratch: string;
  readonly pg: {
    /** The benchmark database, for the store. */
    readonly connectionString: string;
    readonly database: string;
    /** The `postgres` database, for the harness's counters (so its own commits are not counted). */
    readonly adminConnectionString: string;
    readonly postmasterPid: number;
  } | null;
}

export { median, percentile, round2 } from "../stats.js";
