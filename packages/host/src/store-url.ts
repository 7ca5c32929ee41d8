import { type Bounds, type HistoryPolicy, InvalidInputError, type JobStore, type PromiseBounds, type PromiseSettings, type PromiseStore } from "@belay/contract";

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
  const common = {
    ...(options.historyPolicy === undefined ? {} : { historyPolicy: options.historyPolicy }),
    ...(options.bounds === undefined ? {} : { bounds: options.bounds }),
  };
  return openParsed<JobStore>(url, {
    memory: ({ MemoryStore }) => new MemoryStore({ ...common, wakeUpHints: true }),
    sqlite: ({ SqliteStore }, file) => new SqliteStore({ ...file, ...common }),
    postgres: ({ PostgresStore }, connection) => new PostgresStore({ ...connection, ...common }),
  });
}

/** Options every store URL accepts for a promise store. */
export interface OpenPromiseStoreOptions {
  readonly bounds?: Partial<PromiseBounds>;
  readonly settings?: Partial<PromiseSettings>;
}

/**
 * Opens the promise store (the storage of durable promises, `PromiseStore`) a URL names, with the
 * same grammar as {@link openStore}: `memory:` (a `MemoryPromiseStore`, nothing survives the
 * process), `sqlite:<path>` (a `SqlitePromiseStore` in the same file and under the same table
 * prefix as the URL's job store) or `postgres://…` (a `PostgresPromiseStore` in the same schema).
 * The promise tables have migrations of their own: call `migrate()` on the store this returns.
 *
 * @example
 * ```ts
 * const promises = await openPromiseStore("sqlite:./belay.db");
 * await promises.migrate();
 * ```
 */
export async function openPromiseStore(url: string, options: OpenPromiseStoreOptions = {}): Promise<PromiseStore> {
  const front = {
    ...(options.bounds === undefined ? {} : { bounds: options.bounds }),
    ...(options.settings === undefined ? {} : { settings: options.settings }),
  };
  return openParsed<PromiseStore>(url, {
    memory: ({ MemoryPromiseStore }) => new MemoryPromiseStore(front),
    sqlite: ({ SqlitePromiseStore }, file) => new SqlitePromiseStore({ ...file, ...front }),
    postgres: ({ PostgresPromiseStore }, connection) => new PostgresPromiseStore({ ...connection, ...front }),
  });
}

/** A store URL, read: which store it names and that store's options. */
type ParsedStoreUrl =
  | { readonly kind: "memory" }
  | { readonly kind: "sqlite"; readonly file: { readonly path: string; readonly tablePrefix?: string; readonly synchronous?: "normal" | "full" } }
  | { readonly kind: "postgres"; readonly connection: { readonly connectionString: string; readonly schema?: string } };

/** How a store of each kind is made from its package and the URL's options. */
interface StoreMakers<T> {
  memory(pkg: typeof import("@belay/memory")): T;
  sqlite(pkg: typeof import("@belay/sqlite"), file: Extract<ParsedStoreUrl, { kind: "sqlite" }>["file"]): T;
  postgres(pkg: typeof import("@belay/postgres"), connection: Extract<ParsedStoreUrl, { kind: "postgres" }>["connection"]): T;
}

/** Reads the URL and makes its store with the package it names, imported only now. */
async function openParsed<T>(url: string, make: StoreMakers<T>): Promise<T> {
  const parsed = parseStoreUrl(url);
  switch (parsed.kind) {
    case "memory":
      return make.memory(await import("@belay/memory"));
    case "sqlite":
      return make.sqlite(await importAdapter("sqlite:", "@belay/sqlite better-sqlite3", () => import("@belay/sqlite")), parsed.file);
    case "postgres":
      return make.postgres(await importAdapter("postgres:", "@belay/postgres pg", () => import("@belay/postgres")), parsed.connection);
  }
}

/** Reads a store URL; throws `InvalidInputError` naming `store`. */
function parseStoreUrl(url: string): ParsedStoreUrl {
  if (typeof url !== "string" || url.length === 0) throw new InvalidInputError("store", "needs a store URL (memory:, sqlite:<path>, postgres://…)");
  if (url.startsWith("memory:")) return { kind: "memory" };
  if (url.startsWith("sqlite:")) {
    const [rawPath = "", query = ""] = url.slice("sqlite:".length).replace(/^\/\//, "").split("?");
    if (rawPath.length === 0) throw new InvalidInputError("store", "sqlite: needs a file path, e.g. sqlite:./belay.db");
    const params = new URLSearchParams(query);
    const synchronous = params.get("synchronous");
    if (synchronous !== null && synchronous !== "normal" && synchronous !== "full") {
      throw new InvalidInputError("store", "sqlite: synchronous must be normal or full");
    }
    const prefix = params.get("prefix");
    return {
      kind: "sqlite",
      file: { path: decodeURIComponent(rawPath), ...(prefix === null ? {} : { tablePrefix: prefix }), ...(synchronous === null ? {} : { synchronous }) },
    };
  }
  if (url.startsWith("postgres://") || url.startsWith("postgresql://")) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new InvalidInputError("store", "is not a valid postgres:// URL");
    }
    const schema = parsed.searchParams.get("schema");
    parsed.searchParams.delete("schema");
    return { kind: "postgres", connection: { connectionString: parsed.toString(), ...(schema === null ? {} : { schema }) } };
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
