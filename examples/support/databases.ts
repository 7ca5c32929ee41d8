import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";

type PgClient = { connect(): Promise<unknown>; query(sql: string, values?: unknown[]): Promise<unknown>; end(): Promise<unknown> };
const pg = createRequire(new URL("../../packages/postgres/package.json", import.meta.url))("pg") as {
  Client: new (config: { connectionString: string | undefined }) => PgClient;
};

async function withClient(url: string, fn: (client: PgClient) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.end();
  }
}

/** Databases of their own for example runs, on the project's PostgreSQL (`serverUrl`); `dropAll()` at the end. */
export class ExampleDatabases {
  readonly #made: string[] = [];

  constructor(readonly serverUrl: string | undefined) {}

  /** A fresh database for one run: its URL. */
  async create(name: string): Promise<string> {
    if (this.serverUrl === undefined) throw new Error("no PostgreSQL for the examples");
    const database = `belay_example_${name.replace(/\W/g, "_")}_${randomBytes(4).toString("hex")}`;
    await withClient(this.serverUrl, async (client) => void (await client.query(`CREATE DATABASE "${database}"`)));
    this.#made.push(database);
    const url = new URL(this.serverUrl);
    url.pathname = `/${database}`;
    return url.toString();
  }

  async dropAll(): Promise<void> {
    if (this.#made.length === 0 || this.serverUrl === undefined) return;
    await withClient(this.serverUrl, async (client) => {
      for (const database of this.#made.splice(0)) {
        await client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [database]);
        await client.query(`DROP DATABASE IF EXISTS "${database}"`);
      }
    });
  }
}
