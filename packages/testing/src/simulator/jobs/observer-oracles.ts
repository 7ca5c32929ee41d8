import type { ObserverDeadLetter, ObserverDelivery, ObserverDeliveryOutcome } from "@belay/contract";
import type { LoggedTransition } from "@belay/memory";
import type { ObserverSpec } from "../plan.js";
import type { ViolationLog } from "../violations.js";

/** One matching transition of one observer, as the oracles followed it. */
interface Tracked {
  readonly position: number;
  readonly jobId: string;
  /** A callback returned for it at least once. */
  delivered: boolean;
  /** The store lists it as dead-lettered. */
  deadLettered: boolean;
  /** The store has no job left for it (purged): an observer may no longer reach it. */
  exempt: boolean;
  /** A committed, applied report said `delivered`. */
  reportedDelivered: boolean;
  /** Callback calls that failed (threw or timed out). */
  failedCalls: number;
  /** Deliveries handed out but lost before a call (the dispatcher died, or the answer never came). */
  lostHandouts: number;
  /** Claims that handed it out: each one spends a delivery attempt, called or not. */
  handouts: number;
  /** Its callback failed at a delivery attempt where the dispatcher's policy gives up. */
  givenUp: boolean;
  /** Its first callback has happened. */
  seen: boolean;
}

/** Deliveries one claim handed to one dispatcher, not yet called. */
interface Handout {
  readonly dispatcher: string;
  readonly observerId: string;
  readonly uncalled: Set<number>;
  answered: boolean;
}

interface Observer {
  readonly spec: ObserverSpec;
  readonly tracked: Map<number, Tracked>;
  /** Matching positions in commit order; `next` is the first not yet resolved. */
  readonly order: number[];
  next: number;
  unresolved: number;
}

const resolved = (t: Tracked) => t.delivered || t.deadLettered || t.exempt;

/**
 * The observer oracles: order (no transition first seen before an earlier matching one is
 * resolved), resolution (delivered xor dead-lettered), retry budget (dead-lettered only after the
 * policy's attempts were really spent) and, at the end, liveness (every matching transition
 * resolved). Fed with the log, every callback, every claim's handout and every committed report.
 */
export class ObserverOracles {
  readonly #log: ViolationLog;
  readonly #observers = new Map<string, Observer>();
  readonly #open = new Map<string, Handout>();
  /** Positions whose earlier unresolved neighbours need a purge check (job ids), filled during a step. */
  readonly suspects: { observerId: string; position: number; earlier: Tracked[] }[] = [];

  constructor(log: ViolationLog, specs: readonly ObserverSpec[]) {
    this.#log = log;
    for (const spec of specs) this.#observers.set(spec.id, { spec, tracked: new Map(), order: [], next: 0, unresolved: 0 });
  }

  /** Matching transitions not yet resolved, over every observer. */
  get unresolved(): number {
    let n = 0;
    for (const o of this.#observers.values()) n += o.unresolved;
    return n;
  }

  onTransitions(entries: readonly LoggedTransition[]): void {
    for (const o of this.#observers.values()) {
      for (const e of entries) {
        if (!o.spec.states.includes(e.state)) continue;
        if (o.spec.queues !== undefined && !o.spec.queues.includes(e.queue)) continue;
        if (o.tracked.has(e.position)) continue;
        o.tracked.set(e.position, {
          position: e.position,
          jobId: e.jobId,
          delivered: false,
          deadLettered: false,
          exempt: false,
          reportedDelivered: false,
          failedCalls: 0,
          lostHandouts: 0,
          handouts: 0,
          givenUp: false,
          seen: false,
        });
        o.order.push(e.position);
        o.unresolved++;
      }
    }
  }

  #resolve(o: Observer, t: Tracked, how: (t: Tracked) => void): void {
    const before = resolved(t);
    how(t);
    if (!before && resolved(t)) o.unresolved--;
    while (o.next < o.order.length && resolved(o.tracked.get(o.order[o.next]!)!)) o.next++;
  }

  // ---- handouts -----------------------------------------------------------------------------

  /** A claim committed: `deliveries` were handed to `dispatcher` (whether or not it hears of it). */
  onHandout(dispatcher: string, observerId: string, deliveries: readonly ObserverDelivery[]): Handout {
    // A new claim means the dispatcher is done with its last batch: what it did not call it skipped.
    this.#open.delete(`${dispatcher}|${observerId}`);
    const o = this.#observers.get(observerId);
    for (const d of deliveries) {
      const t = o?.tracked.get(d.position);
      if (t) t.handouts++;
    }
    const handout: Handout = { dispatcher, observerId, uncalled: new Set(deliveries.map((d) => d.position)), answered: false };
    this.#open.set(`${dispatcher}|${observerId}`, handout);
    return handout;
  }

  /** The claim's answer never reached its dispatcher. */
  onHandoutLost(handout: Handout): void {
    this.#loseAll(handout);
    this.#open.delete(`${handout.dispatcher}|${handout.observerId}`);
  }

  /** A dispatcher died (crash, stop, isolation it never came back from): its batches are lost. */
  onDispatcherGone(dispatcher: string): void {
    for (const [key, handout] of this.#open) {
      if (handout.dispatcher !== dispatcher) continue;
      this.#loseAll(handout);
      this.#open.delete(key);
    }
  }

  #loseAll(handout: Handout): void {
    const o = this.#observers.get(handout.observerId);
    for (const position of handout.uncalled) {
      const t = o?.tracked.get(position);
      if (t) t.lostHandouts++;
    }
    handout.uncalled.clear();
  }

  // ---- callbacks and reports ----------------------------------------------------------------

  /** A dispatcher called an observer back; `fails` says whether the call fails (throws or hangs). */
  onCallback(dispatcher: string, observerId: string, delivery: ObserverDelivery, fails: boolean): void {
    this.#open.get(`${dispatcher}|${observerId}`)?.uncalled.delete(delivery.position);
    const o = this.#observers.get(observerId);
    const t = o?.tracked.get(delivery.position);
    if (o === undefined || t === undefined) return;
    if (!t.seen) {
      t.seen = true;
      const earlier: Tracked[] = [];
      for (let i = o.next; i < o.order.length && o.order[i]! < delivery.position; i++) {
        const q = o.tracked.get(o.order[i]!)!;
        // One the dispatcher gave up on in this batch is dead-lettered by the report still to come.
        if (!resolved(q) && !q.givenUp) earlier.push(q);
      }
      if (earlier.length > 0) this.suspects.push({ observerId, position: delivery.position, earlier });
    }
    if (fails) {
      t.failedCalls++;
      if (delivery.deliveryAttempt >= o.spec.retry.maxAttempts) t.givenUp = true;
    } else this.#resolve(o, t, (x) => (x.delivered = true));
  }

  /** A report committed and the store applied it. */
  onReportApplied(observerId: string, outcomes: readonly ObserverDeliveryOutcome[]): void {
    const o = this.#observers.get(observerId);
    for (const outcome of outcomes) {
      const t = o?.tracked.get(outcome.position);
      if (t && outcome.outcome === "delivered") t.reportedDelivered = true;
    }
  }

  /** The store's dead letters of an observer, as read after a report. */
  onDeadLetters(observerId: string, deadLetters: readonly ObserverDeadLetter[]): void {
    const o = this.#observers.get(observerId);
    if (o === undefined) return;
    for (const letter of deadLetters) {
      const t = o.tracked.get(letter.position);
      if (t === undefined || t.deadLettered) continue;
      this.#resolve(o, t, (x) => (x.deadLettered = true));
      if (t.reportedDelivered) {
        this.#log.report("observerResolution", `observer ${observerId}: transition ${t.position} (job ${t.jobId}) was reported delivered and is dead-lettered`);
      }
      // Every handout spends an attempt, also one the dispatcher never called because an earlier
      // transition of its batch failed (head-of-line), or whose delivered report was lost.
      if (t.handouts < o.spec.retry.maxAttempts) {
        this.#log.report(
          "observerRetryBudget",
          `observer ${observerId}: transition ${t.position} (job ${t.jobId}) was dead-lettered at delivery attempt ${letter.deliveryAttempts} after ${t.handouts} handout(s) (${t.failedCalls} failed call(s), ${t.lostHandouts} lost); its policy allows ${o.spec.retry.maxAttempts}`,
        );
      }
    }
  }

  /** Purge checks of this step's suspects are done: `gone(jobId)` says whether the job was purged. */
  settleSuspects(gone: ReadonlySet<string>): void {
    for (const { observerId, position, earlier } of this.suspects) {
      const o = this.#observers.get(observerId)!;
      for (const q of earlier) if (gone.has(q.jobId)) this.#resolve(o, q, (x) => (x.exempt = true));
      const open = earlier.filter((q) => !resolved(q));
      if (open.length > 0) {
        this.#log.report(
          "observerOrder",
          `observer ${observerId} first saw transition ${position} while earlier transition ${open[0]!.position} (job ${open[0]!.jobId}) was neither delivered nor dead-lettered`,
        );
      }
    }
    this.suspects.length = 0;
  }

  /** Unresolved transitions (position, job id) per observer, for liveness. */
  unresolvedList(): { observerId: string; position: number; jobId: string }[] {
    const out: { observerId: string; position: number; jobId: string }[] = [];
    for (const [observerId, o] of this.#observers) {
      for (const t of o.tracked.values()) if (!resolved(t)) out.push({ observerId, position: t.position, jobId: t.jobId });
    }
    return out;
  }

  /** Marks transitions of purged jobs as out of reach. */
  exempt(observerId: string, position: number): void {
    const o = this.#observers.get(observerId);
    const t = o?.tracked.get(position);
    if (o && t) this.#resolve(o, t, (x) => (x.exempt = true));
  }

  ids(): string[] {
    return [...this.#observers.keys()];
  }
}
