import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, inject } from "vitest";
import { configOfUrl } from "../src/driver.js";
import type { MssqlPool } from "../src/index.js";
import "./sqlserver-global-setup.js";

/** The project's SQL Server (see `sqlserver-global-setup.ts`): `url` is `undefined` when there is none. */
export function sqlServerTarget(): { readonly url: string | undefined; readonly reason: string } {
  const provided = inject("belaySqlServer");
  return { url: provided?.url ?? undefined, reason: provided?.reason ?? "no global setup" };
}

/** A fresh schema name owned by one test file or one store. */
export function randomSchema(prefix: string): string {
  return `belay_test_${prefix}_${randomBytes(5).toString("hex")}`;
}

type Driver = { ConnectionPool: new (config: object) => MssqlPool & { connect(): Promise<MssqlPool>; on(event: "error", listener: () => void): unknown } };

/** A connected pool on `url`, its idle-connection errors ignored. */
export async function testPool(url: string, max = 10): Promise<MssqlPool> {
  const module = (await import("mssql")) as unknown as Driver & { default?: Driver };
  const pool = new (module.default ?? module).ConnectionPool(configOfUrl(url, max)!);
  pool.on("error", () => undefined);
  await pool.connect();
  return pool;
}

/**
 * The two pools of a conformance file's describe block on `url`: the stores' (`stores`, 20
 * connections) and one for what runs beside the stores (`side`, 10: caller transactions, a peer
 * process). Both connect before the block's tests and close after them.
 */
export function conformancePools(url: string | undefined): { readonly stores: MssqlPool; readonly side: MssqlPool } {
  const pools = {} as { stores: MssqlPool; side: MssqlPool };
  beforeAll(async () => {
    pools.stores = await testPool(url!, 20);
    pools.side = await testPool(url!, 10);
  });
  afterAll(async () => {
    await pools.stores?.close();
    await pools.side?.close();
  });
  return pools;
}

/** Drops every table of a test schema, then the schema. */
export async function dropSchema(pool: MssqlPool, schema: string): Promise<void> {
  await pool.request().query(`
DECLARE @sql nvarchar(max) = N'';
SELECT @sql = @sql + N'DROP TABLE ' + QUOTENAME(s.name) + N'.' + QUOTENAME(t.name) + N';' FROM sys.tables AS t INNER JOIN sys.schemas AS s ON s.schema_id = t.schema_id WHERE s.name = N'${schema}';
EXEC(@sql);
IF SCHEMA_ID(N'${schema}') IS NOT NULL EXEC(N'DROP SCHEMA ${`[${schema}]`}');`);
}
