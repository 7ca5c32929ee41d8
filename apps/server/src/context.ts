import type { JobStore } from "@belay/contract";
import type { Clock, Logger, WorkerHealth } from "@belay/core";
import type { Access } from "./auth/access.js";
import type { SessionCookies } from "./auth/sessions.js";
import type { LiveFeed } from "./monitor/live-feed.js";
import type { ThroughputRing } from "./monitor/throughput.js";
import type { JobCatalog } from "./operations/catalog.js";

/** What every route reads: the store, the job catalog, access control, clocks and monitors. */
export interface ServerContext {
  readonly store: JobStore;
  readonly catalog: JobCatalog;
  readonly access: Access;
  /** Seals and opens the dashboard's session cookies. */
  readonly sessions: SessionCookies;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly throughput: ThroughputRing;
  readonly live: LiveFeed;
  /** The embedded worker's health, `null` without one. */
  readonly workerHealth: () => WorkerHealth | null;
  /** Shown in the dashboard's header and title. */
  readonly title: string;
  /** Set the `Secure` attribute on cookies. */
  readonly secureCookies: boolean;
}

/** JSON text parsed, or the text itself when it is not JSON (it always is, from a Belay store). */
export function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
