import type { JobStore } from "@belay/contract";
import { type CreateStoreOptions, runStoreConformance } from "@belay/conformance";
import { describe } from "vitest";
import { migratedStores } from "../../../tests/support/conformance.mjs";
import { PostgresStore } from "../src/index.js";
import { conformancePools, dropSchema, observersIsolated, pgTarget, randomSchema } from "./pg-target.js";

const target = await pgTarget("postgres-conformance.test.ts");
const url = target.url;

describe.skipIf(url === undefined)(`postgres conformance (${target.reason})`, () => {
  // Stores share one pool; each store owns a fresh schema, dropped after its test.
  // Caller transactions come from a pool of their own (`side`), as an application's would.
  const { stores: pool, side: appPool } = conformancePools(target);
  const options = new WeakMap<JobStore, CreateStoreOptions>();
  // A store on `schema` (by default a fresh one, dropped with the store), its options kept for a
  // peer. On a shared server (BELAY_TEST_POSTGRES_URL), other databases' transactions hold the
  // observer walker's cluster-wide horizon back: its observer calls wait for those to end first.
  const opened = (storeOptions: CreateStoreOptions, schema = randomSchema("conf")) => {
    const store = observersIsolated(new PostgresStore({ pool, schema, ...storeOptions }), pool);
    options.set(store, storeOptions);
    return store;
  };

  runStoreConformance({
    name: "postgres",
    ...migratedStores(opened, (store) => dropSchema(pool, store.schema)),
    hooks: {
      beginTransaction: async () => {
        const client = await appPool.connect();
        await client.query("BEGIN");
        let released = false;
        const finish = async (sql: string) => {
          try {
            await client.query(sql);
          } finally {
            if (!released) client.release();
            released = true;
          }
        };
        // Once the transaction is over, the executor runs in autocommit on the pool, as a driver
        // does after its transaction ended.
        const executor = {
          query: async (sql: string, values: readonly unknown[]) => (await (released ? appPool : client).query(sql, [...values])).rows,
        };
        return { tx: client, executor, commit: () => finish("COMMIT"), rollback: () => finish("ROLLBACK") };
      },
      // A second process: its own pool, the same schema, the same options.
      openPeer: async (store) =>
        observersIsolated(new PostgresStore({ connectionString: url!, maxConnections: 4, schema: (store as PostgresStore).schema, ...options.get(store) }), pool),
      // The same schema under another configuration, as a restarted process would open it.
      reopen: async (store, storeOptions) => opened(storeOptions, (store as PostgresStore).schema),
      // A schema of its own that nobody migrated (dropped with the store, if migrate() made it).
      openUnmigrated: async (storeOptions) => opened(storeOptions),
      // What a later, non-additive release's migration leaves.
      recordSchemaVersion: async (store, version) => {
        await pool.query(`INSERT INTO "${(store as PostgresStore).schema}".schema_migrations (version, requires) VALUES ($1, $1)`, [version]);
      },
      // The connection of the store's next write is terminated just before its COMMIT, after
      // every statement of the write ran: the write fails as a lost connection, committing nothing.
      provokeTransient: async (store) => {
        const schema = (store as PostgresStore).schema;
        let armed = true;
        store.setStepHook!(async (point) => {
          if (!armed || point.step !== "commit") return;
          const { rows } = await pool.query(
            `SELECT pid FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction'
                AND backend_xid IS NOT NULL AND position($1 in query) > 0`,
            [`"${schema}"`],
          );
          if (rows.length === 0) return; // a read, or a write that wrote nothing: the next one
          armed = false;
          for (const row of rows) await pool.query("SELECT pg_terminate_backend($1, 30000)", [row.pid]);
        });
        return { store, end: async () => store.setStepHook!(null) };
      },
    },
  });
});
