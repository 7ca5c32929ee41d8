import type { TransactionalEnqueueFixture } from "@belay/conformance";
import type { ControlledTransaction, Kysely } from "kysely";
import type { KyselyEnqueuer } from "../../src/index.js";
import { toReceipt, toRequest } from "./test-jobs.js";

/** The application's own tables in the tests: one business table with a unique key. */
export interface BusinessDb {
  business_rows: { key: string };
}

/** An open business transaction: Kysely's controlled transaction, so the suite commits when it says. */
export type BusinessTx = ControlledTransaction<BusinessDb, string[]>;

/** One test's database, as a dialect's test file sets it up. */
export interface KyselyWorld {
  readonly belay: KyselyEnqueuer;
  /** The application's Kysely instance on the store's database. */
  readonly db: Kysely<BusinessDb>;
  /** Business rows committed so far, read outside any transaction. */
  committedRows(): Promise<readonly string[]>;
  /** The application's Kysely instance on another database, holding a Belay schema of its own. */
  elsewhere?(): Promise<Kysely<BusinessDb>>;
  close(): Promise<void>;
}

/** The transactional-enqueue fixture of `@belay/kysely` over one world. */
export function kyselyFixture(world: KyselyWorld): TransactionalEnqueueFixture<BusinessTx> {
  const { belay } = world;
  const begin = async (db: Kysely<BusinessDb>) => (await db.startTransaction().execute()) as unknown as BusinessTx;
  return {
    store: belay.store,
    begin: () => begin(world.db),
    writeRow: async (trx, key) => {
      await trx.insertInto("business_rows").values({ key }).execute();
    },
    committedRows: () => world.committedRows(),
    enqueue: async (trx, jobs) => (await belay.enqueueMany(trx, jobs.map(toRequest))).map(toReceipt),
    enqueueWorkflow: async (trx, workflow) => {
      const { status } = await belay.enqueueWorkflow(trx, { id: workflow.id, name: workflow.name, jobs: workflow.jobs.map(toRequest) });
      return { status };
    },
    commit: async (trx) => {
      await trx.commit().execute();
      belay.committed(trx);
    },
    rollback: async (trx) => {
      await trx.rollback().execute();
    },
    savepoint: async (trx, name) => {
      await trx.savepoint(name).execute();
    },
    rollbackToSavepoint: async (trx, name) => {
      await trx.rollbackToSavepoint(name).execute();
    },
    ...(world.elsewhere === undefined ? {} : { beginElsewhere: async () => begin(await world.elsewhere!()) }),
    tearDown: () => world.close(),
  };
}
