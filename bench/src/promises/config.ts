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

export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const round2 = (x: number | null): number | null => (x === null || !Number.isFinite(x) ? null : Math.round(x * 100) / 100);

export function median(xs: readonly (number | null | undefined)[]): number | null {
  const s = xs.filter((x): x is number => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
