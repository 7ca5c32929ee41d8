import {
  type EnqueueRequest, type EnqueueResult, type MigrateResult, type StepHook, type StoreCapabilities, DelegatingOperations,
  type JobStoreOperations, StoreGate,
} from "@belay/contract";
import { CallerTransactionCheck, checkedCaller } from "./caller-transaction.js";
import type { StoreContext } from "./context.js";
import { type MssqlPool, OwnedPool } from "./driver.js";
import { JOB_SURFACE, checkSchema, migrateSurface } from "./migrate.js";
import { Executor } from "./session.js";
import { type ResolvedSqlServerStoreConfig, type SqlServerStoreConfig, resolveSqlServerStoreConfig } from "./sqlserver-store-config.js";
import * as audit from "./sql/audit.js";
import * as claim from "./sql/claim.js";
import * as enqueues from "./sql/enqueue.js";
import * as leases from "./sql/leases.js";
import * as maintainer from "./sql/maintainer.js";
import * as observers from "./sql/observers.js";
import * as operator from "./sql/operator.js";
import * as outcomes from "./sql/outcomes.js";
import * as reads from "./sql/reads.js";
import * as retention from "./sql/retention.js";
import * as schedules from "./sql/schedules.js";
import * as tags from "./sql/tags.js";
import * as workflows from "./sql/workflows.js";

/**
 * A pool to run statements on: the caller's (connected on first use if it is not yet) or one the
 * store owns. Shared by the job and promise stores.
 */
export function poolSource(config: { readonly pool?: MssqlPool; readonly connectionString?: string; readonly maxConnections?: number }): {
  readonly get: () => Promise<MssqlPool>;
  readonly close: () => Promise<void>;
} {
  if (config.pool !== undefined) {
    const pool = config.pool;
    let connecting: Promise<unknown> | null = null;
    return {
      get: async () => {
        if (pool.connected === false) {
          connecting ??= pool.connect().finally(() => (connecting = null));
          await connecting;
        }
        return pool;
      },
      close: async () => undefined,
    };
  }
  const owned = new OwnedPool(config.connectionString!, config.maxConnections ?? 10);
  return { get: () => owned.open(), close: () => owned.close() };
}

/**
 * The Storage Contract's operations on an `mssql` pool, behind `SqlServerStore`'s checked front
 * (which has checked every request's shape before it arrives here). Each runs one transaction (or,
 * for reads, autocommit statements) and delegates to its function in `sql/` (the contract's
 * `DelegatingOperations` defines the one-to-one ones from the modules' exports); this class owns
 * what lives across operations: the pool, the schema check and the step hook.
 */
export class SqlServerOperations extends DelegatingOperations<StoreContext> implements JobStoreOperations {
  readonly capabilities: StoreCapabilities;
  readonly #config: ResolvedSqlServerStoreConfig;
  readonly #pool: ReturnType<typeof poolSource>;
  /** Runs schema checks, migrations and caller checks: never through the step hook, which sees only operations. */
  readonly #meta: Executor;
  readonly #ctx: StoreContext;
  #hook: StepHook | null = null;
  readonly #gate: StoreGate;

  constructor(config: SqlServerStoreConfig) {
    super({ ...audit, ...claim, ...enqueues, ...leases, ...maintainer, ...observers, ...operator, ...outcomes, ...reads, ...retention, ...schedules, ...tags, ...workflows });
    this.#config = resolveSqlServerStoreConfig(config);
    this.#pool = poolSource(config);
    const { schema, schemaName, bounds, historyPolicy } = this.#config;
    this.#meta = new Executor(this.#pool.get, schema, () => null);
    this.#gate = new StoreGate(() => checkSchema(this.#meta, schemaName));
    const check = new CallerTransactionCheck(this.#meta, schemaName);
    this.#ctx = {
      executor: new Executor(this.#pool.get, schema, () => this.#hook),
      schemaName,
      bounds,
      history: historyPolicy !== "off",
      detail: historyPolicy === "transitionsAndFailureDetail",
      caller: (executor, operation) => checkedCaller(executor, check, operation),
    };
    this.capabilities = Object.freeze({
      name: "sqlserver",
      transactionalEnqueue: true,
      enqueueThrough: true,
      // No wake-up hints on SQL Server: the poll interval is the latency (DESIGN §5).
      wakeUpHints: false,
      stepHook: true,
      bounds,
      historyPolicy,
    });
  }

  get schemaName(): string {
    return this.#config.schemaName;
  }

  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  migrate(): Promise<MigrateResult> {
    const { schemaName, requireReadCommittedSnapshot } = this.#config;
    return this.#gate.migrate(() => migrateSurface(this.#meta, JOB_SURFACE, schemaName, { requireReadCommittedSnapshot }));
  }

  /** Migrates only up to `version` (how the upgrade tests build a database as an older release left it). */
  async migrateTo(version: number): Promise<MigrateResult> {
    this.#gate.assertOpen();
    return migrateSurface(this.#meta, JOB_SURFACE, this.#config.schemaName, { upTo: version, requireReadCommittedSnapshot: this.#config.requireReadCommittedSnapshot });
  }

  async close(): Promise<void> {
    if (this.#gate.close()) await this.#pool.close();
  }

  enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    return this.run((ctx) => enqueues.enqueue(ctx, request));
  }

  /** Runs one operation once the store is open and its schema checked. */
  protected override async run<T>(operation: (ctx: StoreContext) => Promise<T>): Promise<T> {
    await this.#gate.open();
    return operation(this.#ctx);
  }
}
