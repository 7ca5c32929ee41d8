import {
  type EnqueueRequest, type EnqueueResult, type HintListener, type MigrateResult, type StepHook, type StoreCapabilities,
  DelegatingOperations, type JobStoreOperations, StoreGate, resolveBounds, validateNewJob,
} from "@belay/contract";
import { CallerTransactionCheck, checkedCaller } from "./caller-transaction.js";
import type { StoreContext } from "./context.js";
import { type CheckedJob, EnqueueCoalescer } from "./enqueue-coalescer.js";
import { HintPublisher, HintSubscription, hintChannel } from "./hints.js";
import { checkSchema, migrateSchema } from "./migrate.js";
import type { PostgresPool } from "./pool.js";
import { OwnedPool, type PostgresStoreConfig, type ResolvedPostgresStoreConfig, resolvePostgresStoreConfig } from "./postgres-store-config.js";
import { Executor, SqlCache } from "./session.js";
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

/** Calls of more jobs than this run their own statement (see `enqueueConcurrency`). */
const SHARED_CALL_MAX_JOBS = 16;

/**
 * The Storage Contract's operations on a PostgreSQL pool, behind `PostgresStore`'s checked front
 * (which has checked every request's shape before it arrives here). Each borrows a connection
 * for one statement or one transaction and delegates to its function in `sql/` (the contract's
 * `DelegatingOperations` defines the one-to-one ones from the modules' exports); this class owns
 * what lives across operations: the pool, the wake-up hints, the enqueue coalescer, the schema
 * check and the step hook.
 */
export class PostgresOperations extends DelegatingOperations<StoreContext> implements JobStoreOperations {
  readonly capabilities: StoreCapabilities;
  readonly #config: ResolvedPostgresStoreConfig;
  readonly #pool: PostgresPool;
  readonly #ownsPool: boolean;
  /** Runs schema checks, migrations and caller checks: never through the step hook, which sees only operations. */
  readonly #metaExecutor: Executor;
  readonly #ctx: StoreContext;
  readonly #publisher: HintPublisher | null;
  readonly #subscription: HintSubscription | null;
  readonly #coalescer: EnqueueCoalescer;
  readonly #accepted = new Set<Promise<readonly EnqueueResult[]>>();
  #hook: StepHook | null = null;
  readonly #gate: StoreGate;

  constructor(config: PostgresStoreConfig) {
    super({ ...audit, ...claim, ...enqueues, ...leases, ...maintainer, ...observers, ...operator, ...outcomes, ...reads, ...retention, ...schedules, ...tags, ...workflows });
    this.#config = resolvePostgresStoreConfig(config);
    this.#gate = new StoreGate(() => checkSchema(this.#metaExecutor, this.#config.schema, this.#config.schemaName));
    const bounds = resolveBounds(config.bounds);
    this.#ownsPool = config.pool === undefined;
    this.#pool = config.pool ?? new OwnedPool(config.connectionString!, config.maxConnections ?? 10);
    this.#metaExecutor = new Executor(this.#pool, () => null);
    const callerCheck = new CallerTransactionCheck(this.#metaExecutor, this.#config.schema, this.#config.schemaName);
    const channel = this.#config.hints ? hintChannel(this.#config.schemaName) : null;
    this.#subscription = channel === null ? null : new HintSubscription(config.listenClient ?? (() => this.#pool.connect()), channel);
    const listening = this.#subscription;
    this.#publisher = channel === null ? null : new HintPublisher(this.#pool, channel, () => listening?.client ?? null);
    const { historyPolicy, schemaName } = this.#config;
    this.#ctx = {
      executor: new Executor(this.#pool, () => this.#hook),
      sql: new SqlCache(this.#config.schema),
      schemaName,
      bounds,
      history: historyPolicy !== "off",
      detail: historyPolicy === "transitionsAndFailureDetail",
      channel,
      limitedQueues: new Set(),
      hint: (queues) => {
        this.#subscription?.deliver(queues);
        this.#publisher?.publish(queues);
      },
      caller: (executor, operation) => checkedCaller(executor, callerCheck, operation),
    };
    const ctx = this.#ctx;
    this.#coalescer = new EnqueueCoalescer(
      (request, checked) => (checked === undefined ? enqueues.enqueue(ctx, request) : enqueues.enqueueChecked(ctx, request, checked)),
      config.enqueueConcurrency ?? 2,
      bounds.enqueueBatch,
    );
    this.capabilities = Object.freeze({
      name: "postgres",
      transactionalEnqueue: true,
      enqueueThrough: true,
      stepHook: true,
      wakeUpHints: this.#config.hints,
      bounds,
      historyPolicy,
    });
  }

  /** The schema this store works in. */
  get schemaName(): string {
    return this.#config.schemaName;
  }

  /** Whether the LISTEN connection is open right now. */
  get listening(): boolean {
    return this.#subscription?.connected ?? false;
  }

  /** See `PostgresStore#subscribeHints`: one LISTEN connection per store, reconnecting on its own. */
  subscribeHints(listener: HintListener): () => void {
    // The front calls this only with `capabilities.wakeUpHints`, which is when a subscription exists.
    return this.#subscription!.subscribe(listener);
  }

  /**
   * See `JobStore.setStepHook`: called at each named step between two statements of an
   * operation, inside its transaction (every operation runs in one while a hook is installed).
   */
  setStepHook(hook: StepHook | null): void {
    this.#hook = hook;
  }

  migrate(): Promise<MigrateResult> {
    return this.#gate.migrate(() => migrateSchema(this.#metaExecutor, this.#config.schema, this.#config.schemaName));
  }

  async close(): Promise<void> {
    if (!this.#gate.close()) return;
    // Enqueue calls already accepted finish first (some may be waiting to share a statement).
    await Promise.allSettled([...this.#accepted]);
    await this.#coalescer.idle();
    await this.#publisher?.drain();
    await this.#subscription?.close();
    if (this.#ownsPool) await this.#pool.end();
  }

  // ---- enqueue -------------------------------------------------------------------------------

  async enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    this.#gate.assertOpen();
    // Tracked from here: close() lets every accepted call finish before it ends the pool.
    const call = this.#enqueue(request);
    this.#accepted.add(call);
    try {
      return await call;
    } finally {
      this.#accepted.delete(call);
    }
  }

  async #enqueue(request: EnqueueRequest): Promise<readonly EnqueueResult[]> {
    await this.#gate.open();
    // An audited call (an operator's) is not shared: its records belong to its own transaction.
    const shared = request.tx === undefined && request.actor === undefined && this.#hook === null ? this.#shareable(request.jobs) : null;
    if (shared !== null) return this.#coalescer.enqueue(request, shared);
    return enqueues.enqueue(this.#ctx, request);
  }

  // ---- internals -----------------------------------------------------------------------------

  /** Runs one operation once the store is open and its schema checked. */
  protected override async run<T>(operation: (ctx: StoreContext) => Promise<T>): Promise<T> {
    await this.#gate.open();
    return operation(this.#ctx);
  }

  /**
   * The field checks of a call that may share its statement with others, or `null`: only a small
   * call (a large one amortizes its commit by itself) whose jobs are all valid and parentless.
   * They are the enqueue's own checks, run here once and handed on to the shared statement.
   */
  #shareable(jobs: EnqueueRequest["jobs"]): CheckedJob[] | null {
    if (jobs.length === 0 || jobs.length > SHARED_CALL_MAX_JOBS) return null;
    const checked: CheckedJob[] = [];
    for (const job of jobs) {
      const result = validateNewJob(job, this.#ctx.bounds);
      if (!result.ok || result.job.parentIds.length > 0) return null;
      checked.push(result);
    }
    return checked;
  }
}
