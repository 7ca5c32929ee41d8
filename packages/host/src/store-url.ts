import { type Bounds, type HistoryPolicy, InvalidInputError, type JobStore } from "@belay/contract";

/** Options every store URL accepts. */
export interface OpenStoreOptions {
  readonly historyPolicy?: HistoryPolicy;
  readonly bounds?: Partial<Bounds>;
}

/**
 * Opens the store a URL names: `memory:` (tests and demos only: nothing survives the process),
 * `sqlite:<path>` (e.g. `sqlite:./belay.db`; `?prefix=` sets the table prefix, `?synchronous=full`),
 * or `postgres://user@host:5432/db` (`?schema=` sets the schema). Store packages (and so their
 * drivers) are imported lazily, so a host needs only the one its URL names; when that package is
 * not installed, the error (`BELAY_INVALID_INPUT`, field `store`) says what to install.
 *
 * @example
 * ```ts
 * const store = await openStore("sqlite:./belay.db");
 * await store.migrate();
 * ```
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<JobStore> {
  if (typeof url !== "string" || url.length === 0) throw new InvalidInputError("store", "needs a store URL (memory:, sqlite:<path>, postgres://…)");
  const common = {
    ...(options.historyPolicy === undefined ? {} : { historyPolicy: options.historyPolicy }),
    ...(options.bounds === undefined ? {} : { bounds: options.bounds }),
  };
  if (url === "memory:" || url.startsWith("memory:")) {
    const { MemoryStore } = await import("@belay/memory");
    return new MemoryStore({ ...common, wakeUpHints: true });
  }
  if (url.startsWith("sqlite:")) {
    const [rawPath = "", query = ""] = url.slice("sqlite:".length).replace(/^\/\//, "").split("?");
    if (rawPath.length === 0) throw new InvalidInputError("store", "sqlite: needs a file path, e.g. sqlite:./belay.db");
    const params = new URLSearchParams(query);
    const synchronous = params.get("synchronous");
    if (synchronous !== null && synchronous !== "normal" && synchronous !== "full") {
      throw new InvalidInputError("store", "sqlite: synchronous must be normal or full");
    }
    const { SqliteStore } = await importAdapter("sqlite:", "@belay/sqlite better-sqlite3", () => import("@belay/sqlite"));
    return new SqliteStore({
      path: decodeURIComponent(rawPath),
      ...common,
      ...(params.get("prefix") === null ? {} : { tablePrefix: params.get("prefix")! }),
      ...(synchronous === null ? {} : { synchronous }),
    });
  }
  if (url.startsWith("postgres://") || url.startsWith("postgresql://")) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get("schema");
    parsed.searchParams.delete("schema");
    const { PostgresStore } = await importAdapter("postgres:", "@belay/postgres pg", () => import("@belay/postgres"));
    return new PostgresStore({
      connectionString: parsed.toString(),
      ...common,
      ...(schema === null ? {} : { schema }),
    });
  }
  throw new InvalidInputError("store", `unknown store URL ${url}: use memory:, sqlite:<path> or postgres://…`);
}

/** The URL with any password masked, for logs. */
export function redactStoreUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, "$1***@");
}

/**
 * Imports a store package, turning "not installed" into an error that names what to install.
 * Any other failure (a driver's native addon that does not load, say) is passed on unchanged.
 */
async function importAdapter<T>(scheme: string, install: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const packageName = install.split(" ")[0]!;
    if ((code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && String((error as Error).message).includes(packageName)) {
      const refused = new InvalidInputError("store", `${scheme} store URLs need ${packageName}, which is not installed: npm install ${install}`);
      refused.cause = error;
      throw refused;
    }
    throw error;
  }
}
