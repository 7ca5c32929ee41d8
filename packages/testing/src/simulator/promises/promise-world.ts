import { type Instant, PROMISE_TAGS, type PromiseRequest, type PromiseStore, isBelayError } from "@belay/contract";
import type { PromiseEvent, PromisesPlan, RootSpec } from "../plan.js";
import { KeyedDice, parseSeed } from "../prng.js";
import type { SabotageName } from "../sabotage.js";
import { Scheduler } from "../scheduler.js";
import { CALL_TIMEOUT_MS, type LinkFaults, StoreLink } from "../store-link.js";
import { ViolationLog } from "../violations.js";
import { PromiseOracles } from "./promise-oracles.js";
import { simPromiseStore } from "./promise-sabotage.js";
import { SdkWorker, TARGET } from "./sdk-worker.js";

const SIM_START: Instant = Date.UTC(2026, 0, 1);
const CLIENT_ADDRESS = "poll://uni@clients/c0";
const OUTBOX_LEASE_MS = 3_000;
/** Links mark the steps that wrote through `PromiseWorld.request` and the scan's hook instead. */
export const NO_WRITE = (): void => {};

/** What a caller hears back: the store's answer, or a fault (a transient error, a timeout). */
export type Answer = { readonly ok: true; readonly status: number; readonly data: unknown } | { readonly ok: false; readonly error: unknown };

/** One child a function creates, from its id. */
export interface ChildPlan {
  readonly id: string;
  readonly kind: "task" | "external" | "timer";
  readonly timeoutMs: number;
  readonly tags: Readonly<Record<string, string>>;
}

/**
 * The promise half of the simulator: SDK-shaped worker processes, a server (the timer scan and
 * the outbox deliverer) and clients, on a `MemoryPromiseStore` and one virtual timeline, with
 * crashes, lost and duplicated messages, store faults and slow steps until `activeMs`; then a
 * drain, and liveness (every task fulfilled). Oracles run after every step.
 */
export class PromiseWorld {
  readonly plan: PromisesPlan;
  readonly scheduler = new Scheduler(SIM_START);
  readonly dice: KeyedDice;
  readonly violations: ViolationLog;
  readonly store: PromiseStore;
  readonly oracles: PromiseOracles;
  readonly workers: SdkWorker[];
  faultsActive = true;
  readonly #roots = new Map<string, RootSpec>();
  readonly #client: StoreLink;
  readonly #operator: StoreLink;
  #server: { up: boolean; incarnation: number; kick: boolean; deliverSoon: () => void } = { up: false, incarnation: 0, kick: false, deliverSoon: () => {} };
  #wrote = false;
  #pendingClientCalls = 0;
  readonly #externals = new Set<string>();
  #unexpected: unknown = null;
  #halted = false;

  constructor(plan: PromisesPlan, options: { sabotage?: SabotageName | null; stopAtFirst?: boolean } = {}) {
    this.plan = plan;
    this.dice = new KeyedDice(parseSeed(plan.seed));
    this.violations = new ViolationLog(options.stopAtFirst ?? true, () => ({ at: this.scheduler.now - SIM_START, step: this.scheduler.steps }));
    this.store = simPromiseStore(options.sabotage ?? null, { retryTimeoutMs: plan.retryTimeoutMs });
    this.oracles = new PromiseOracles(this.violations);
    this.workers = Array.from({ length: plan.workers }, (_, i) => new SdkWorker(this, i));
    const faults = () => this.linkFaults(false);
    this.#client = new StoreLink({ scheduler: this.scheduler, dice: this.dice, name: "client", faults, onPerform: NO_WRITE });
    this.#operator = new StoreLink({ scheduler: this.scheduler, dice: this.dice, name: "operator", faults, onPerform: NO_WRITE });
  }

  linkFaults(worker: boolean): LinkFaults | null {
    if (!this.faultsActive) return null;
    const { axes } = this.plan;
    return { before: axes.storeFault, after: axes.lostAck, fatal: 0, drop: worker ? axes.heartbeatLoss : 0, latencyMs: axes.latencyMs };
  }

  /** Sends one protocol request over `link`; the store's answer (as performed) feeds the oracles. */
  request(link: StoreLink, request: PromiseRequest, now: () => Instant, heartbeat = false): Promise<Answer> {
    const at = now();
    return new Promise<Answer>((resolve) =>
      link.call({
        op: request.kind,
        drop: heartbeat,
        perform: () => this.store.handle(request, at),
        performed: (response) => {
          // Reads change nothing the oracles follow: no snapshot after them.
          if (request.kind !== "promise.get") this.#wrote = true;
          const data = "data" in response ? response.data : null;
          this.oracles.recordRequest({ request, now: at, status: response.status, data });
          if (response.status === 200 && request.kind === "task.fence" && request.action.kind === "promise.create") this.#onChildCreated(request.action.id);
        },
        answer: (response) => resolve({ ok: true, status: response.status, data: "data" in response ? response.data : null }),
        fail: (error) => {
          this.#noteUnexpected(error);
          resolve({ ok: false, error });
        },
        settle: true,
      }),
    );
  }

  #noteUnexpected(error: unknown): void {
    if (isBelayError(error, "BELAY_TRANSIENT_STORE")) return;
    if (error instanceof Error && error.message.startsWith("simulated")) return;
    this.#unexpected ??= error;
  }

  /** Waits `ms` of virtual time (never resolves for a caller that died meanwhile). */
  sleep(ms: number, alive: () => boolean): Promise<void> {
    return new Promise((resolve) => this.scheduler.after(ms, () => void (alive() && resolve()), true));
  }

  /** The pause before a function's next step: short, or (a slow step) past the lease. */
  stepDelay(id: string, version: number, step: number, alive: () => boolean): Promise<void> {
    const slow = this.faultsActive && this.dice.chance(this.plan.axes.slowStep, "slow", id, version, step);
    return this.sleep(slow ? Math.round(this.plan.ttlMs * 1.5) : this.dice.int(1, 60, "step", id, version, step), alive);
  }

  /** The children a promise's function creates, derived from its id. */
  programOf(id: string): ChildPlan[] {
    const rootId = id.split(".")[0]!;
    const root = this.#roots.get(rootId);
    if (root === undefined) return [];
    const depth = id.split(".").length - 1;
    const count = depth === 0 ? root.fanout : this.dice.int(0, root.fanout, "fanout", id);
    const children: ChildPlan[] = [];
    for (let k = 0; k < count; k++) {
      const childId = `${id}.${k}`;
      const u = this.dice.unit("kind", childId);
      const kind = depth + 1 <= root.depth && u < 0.5 ? "task" : u < 0.8 ? "external" : "timer";
      const lineage = { [PROMISE_TAGS.origin]: rootId, [PROMISE_TAGS.parent]: id };
      const tags =
        kind === "task"
          ? { ...lineage, [PROMISE_TAGS.target]: TARGET, [PROMISE_TAGS.branch]: childId }
          : kind === "timer"
            ? { ...lineage, [PROMISE_TAGS.timer]: "true" }
            : lineage;
      const timeoutMs = kind === "task" ? this.dice.int(15_000, 40_000, "timeout", childId) : kind === "timer" ? this.dice.int(500, 8_000, "timeout", childId) : this.dice.int(2_000, 15_000, "timeout", childId);
      children.push({ id: childId, kind, timeoutMs, tags });
    }
    return children;
  }

  /** An external child exists: clients settle it later (sometimes two of them, racing). */
  #onChildCreated(id: string): void {
    if (this.#externals.has(id) || this.dice.unit("kind", id) < 0.5 || this.dice.unit("kind", id) >= 0.8) return;
    const root = this.#roots.get(id.split(".")[0]!);
    if (root === undefined || id.split(".").length - 1 > root.depth + 1) return;
    this.#externals.add(id);
    const settle = (state: "resolved" | "rejected", delay: number) =>
      this.scheduler.after(delay, () => this.#clientCall({ kind: "promise.settle", id, state, value: { data: `${state} by a client` } }));
    if (this.dice.chance(0.85, "settled", id)) settle(this.dice.chance(0.8, "state", id) ? "resolved" : "rejected", this.dice.int(100, 12_000, "settleAt", id));
    if (this.dice.chance(0.3, "race", id)) settle("rejected", this.dice.int(100, 12_000, "raceAt", id));
  }

  #clientCall(request: PromiseRequest, attempt = 0): void {
    this.#pendingClientCalls++;
    void this.request(this.#client, request, () => this.scheduler.now).then((answer) => {
      this.#pendingClientCalls--;
      if (!answer.ok && attempt < 2) this.scheduler.after(300, () => this.#clientCall(request, attempt + 1));
    });
  }

  // ---- the server: timer scan and outbox delivery --------------------------------------------

  #startServer(): void {
    const server = this.#server;
    if (server.up) return;
    server.up = true;
    server.incarnation++;
    const incarnation = server.incarnation;
    const alive = () => server.up && server.incarnation === incarnation;
    // Only the timer scan changes what the oracles follow; the outbox's leases they do not read.
    const link = new StoreLink({ scheduler: this.scheduler, dice: this.dice, name: `server.${incarnation}`, faults: () => this.linkFaults(false), alive, onPerform: NO_WRITE });
    const scan = () => {
      if (!alive()) return;
      const now = this.scheduler.now;
      link.call({
        op: "expireTimers",
        perform: () => this.store.expireTimers({ now, max: 50 }),
        performed: (result) => {
          this.#wrote = true;
          this.oracles.recordScan(now, result);
        },
        answer: (result) => this.scheduler.after(result.more ? 0 : this.plan.scanMs, scan),
        fail: () => this.scheduler.after(this.plan.scanMs, scan),
      });
    };
    const deliver = () => {
      server.kick = false;
      if (!alive()) return;
      const now = this.scheduler.now;
      link.call({
        op: "takeOutbox",
        perform: () => this.store.takeOutbox({ now, max: 20, leaseMs: OUTBOX_LEASE_MS }),
        answer: (deliveries) => {
          const delivered = deliveries.filter((d) => this.#route(d.key, d.message, d.takes));
          if (delivered.length > 0) {
            link.call({
              op: "acknowledgeOutbox",
              perform: () => this.store.acknowledgeOutbox({ deliveries: delivered.map(({ key, address, token }) => ({ key, address, token })) }),
              answer: () => {},
              fail: () => {},
            });
          }
          this.scheduler.after(deliveries.length >= 20 ? 0 : 250, deliver);
        },
        fail: () => this.scheduler.after(250, deliver),
      });
    };
    // A commit that wrote messages makes the deliverer look at once (a hint: it polls anyway).
    server.deliverSoon = () => {
      if (server.kick || !alive()) return;
      server.kick = true;
      this.scheduler.after(1, deliver);
    };
    this.scheduler.after(1, scan);
    this.scheduler.after(2, deliver);
  }

  /** Delivers one outbox message (or loses it on the way); returns whether the deliverer counts it delivered. */
  #route(key: string, message: { kind: "execute" | "unblock"; data: unknown }, takes: number): boolean {
    const { axes } = this.plan;
    const faulty = this.faultsActive;
    const lost = faulty && this.dice.chance(axes.messageLoss, "lost", key, takes);
    if (message.kind === "unblock") return true; // the client hears of the settlement (or not: unblocks are lossy)
    const up = this.workers.filter((w) => w.up);
    if (up.length === 0) return false; // nobody listening: taken again once its lease lapses
    const { id, version } = (message.data as { task: { id: string; version: number } }).task;
    if (lost) return true; // lost on the way, though the deliverer thinks it arrived
    const copies = faulty && this.dice.chance(axes.messageDuplicate, "dup", key, takes) ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      const worker = up[this.dice.int(0, up.length - 1, "route", key, takes, c)]!;
      this.scheduler.after(this.dice.int(0, axes.latencyMs, "wire", key, takes, c), () => worker.deliverExecute(id, version));
    }
    return true;
  }

  // ---- the run ------------------------------------------------------------------------------

  async run(): Promise<{ steps: number; entities: number; virtualMs: number; drained: boolean }> {
    const { plan, scheduler } = this;
    await this.store.migrate();
    this.store.subscribeOutbox(() => this.#server.deliverSoon());
    scheduler.at(SIM_START, () => this.#startServer());
    for (const worker of this.workers) scheduler.at(SIM_START + worker.index, () => worker.start());
    for (const event of plan.events) if (event.at < plan.activeMs) scheduler.at(SIM_START + event.at, () => this.#onEvent(event));
    const faultsEnd = SIM_START + plan.activeMs;
    scheduler.at(faultsEnd, () => this.#stopFaults());
    const deadline = faultsEnd + plan.drainMs;
    const drained = await scheduler.drive(deadline, {
      afterStep: async () => {
        if (this.#wrote) {
          this.#wrote = false;
          this.oracles.onSnapshot(await this.store.snapshot(scheduler.now));
        }
        if (this.#unexpected !== null) throw new Error(`the promise store refused a simulated request: ${String(this.#unexpected)}`);
      },
      runaway: (message) => {
        this.violations.report("runaway", message);
        this.#halted = true;
      },
      stopped: () => this.violations.done || this.#halted,
      drained: () => !this.faultsActive && scheduler.now > faultsEnd + CALL_TIMEOUT_MS + 1_000 && this.#drained(),
    });
    if (!drained && !this.violations.done && !this.#halted) this.#checkLiveness();
    return { steps: scheduler.steps, entities: this.#roots.size, virtualMs: scheduler.now - SIM_START, drained };
  }

  #drained(): boolean {
    return this.oracles.pendingPromises === 0 && this.oracles.openTasks === 0 && this.#pendingClientCalls === 0;
  }

  #checkLiveness(): void {
    const open = this.oracles.openTaskIds();
    if (open.length > 0) this.violations.report("executeNotLost", `${open.length} task(s) not fulfilled ${this.plan.drainMs} ms after the faults stopped: ${open.slice(0, 5).join(", ")}`);
    if (this.oracles.pendingPromises > 0) this.violations.report("deadlineFires", `${this.oracles.pendingPromises} promise(s) still pending after the drain`);
  }

  #stopFaults(): void {
    this.faultsActive = false;
    for (const worker of this.workers) worker.start();
    this.#startServer();
    // Once every request still on the wire has landed, the operator continues halted tasks.
    this.scheduler.after(CALL_TIMEOUT_MS + 500, () => {
      for (const id of this.oracles.taskIds((state) => state === "halted")) this.#operatorCall({ kind: "task.continue", id });
    });
  }

  #operatorCall(request: PromiseRequest): void {
    void this.request(this.#operator, request, () => this.scheduler.now);
  }

  #onEvent(event: PromiseEvent): void {
    switch (event.kind) {
      case "root": {
        const { root } = event;
        this.#roots.set(root.id, root);
        const now = this.scheduler.now;
        this.#clientCall({
          kind: "promise.create",
          id: root.id,
          timeoutAt: now + root.timeoutInMs,
          param: { data: "root" },
          tags: { [PROMISE_TAGS.target]: TARGET, [PROMISE_TAGS.branch]: root.id, [PROMISE_TAGS.origin]: root.id },
        });
        if (root.listen) this.scheduler.after(50, () => this.#clientCall({ kind: "promise.register_listener", awaited: root.id, address: CLIENT_ADDRESS }));
        return;
      }
      case "crash": {
        const worker = this.workers[event.worker];
        if (worker === undefined || !worker.up) return;
        worker.crash();
        this.scheduler.after(event.downMs, () => {
          if (this.faultsActive) worker.start();
        });
        return;
      }
      case "serverCrash": {
        const server = this.#server;
        if (!server.up) return;
        server.up = false;
        this.scheduler.after(event.downMs, () => {
          if (this.faultsActive) this.#startServer();
        });
        return;
      }
      case "halt":
      case "continue": {
        const eligible = this.oracles.taskIds((state) => (event.kind === "halt" ? state !== "fulfilled" && state !== "halted" : state === "halted"));
        if (eligible.length === 0) return;
        const id = eligible[event.pick % eligible.length]!;
        this.#operatorCall({ kind: event.kind === "halt" ? "task.halt" : "task.continue", id });
        return;
      }
    }
  }
}
