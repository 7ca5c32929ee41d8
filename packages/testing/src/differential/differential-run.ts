import type { Instant } from "@belay/contract";
import { type ProtocolAnswer, type ProtocolSnapshot, type ProtocolSystem, type WireRequest, canonicalJson, sameJson } from "./protocol-system.js";
import { ProtocolStream, type StreamStep } from "./protocol-stream.js";

// A differential run: one seeded stream through an oracle and a system under test, their answers
// compared after every step and their snapshots at intervals. A difference either matches a
// named rule (an allowed difference, normalised or reconciled) or fails the run with what it
// takes to replay it.

/** Two answers to one request. */
export interface AnswerPair {
  readonly oracle: ProtocolAnswer;
  readonly subject: ProtocolAnswer;
}

/** Two snapshots at one instant. */
export interface SnapshotPair {
  readonly oracle: ProtocolSnapshot;
  readonly subject: ProtocolSnapshot;
}

/** Where a run is. */
export interface RunContext<O, S> {
  readonly seed: number;
  /** The step's index in the stream (0-based). */
  readonly index: number;
  readonly now: Instant;
  readonly oracle: O;
  readonly subject: S;
}

/** A request step. */
export interface RequestContext<O, S> extends RunContext<O, S> {
  readonly request: WireRequest;
  /** Facts a rule's `beforeStep` leaves for its `afterStep`, by rule name (fresh each step). */
  readonly notes: Map<string, unknown>;
}

/**
 * An allowed difference between the oracle and the system under test: named, with its reason,
 * and each hook matching exactly the case it allows. A hook returns `null` (or `false`) where
 * its case does not show; anything else counts as a hit of the rule.
 */
export interface DifferenceRule<O, S> {
  readonly name: string;
  /**
   * `allowed`: a weakness of the oracle, or latitude the protocol gives. `known-bug`: a bug of
   * the system under test, reported and tolerated until fixed (then the rule goes).
   */
  readonly verdict: "allowed" | "known-bug";
  /** Why the difference is allowed, or where the bug is reported. */
  readonly reason: string;
  /** Once, before the first step: e.g. wraps a method of the oracle; `hit` counts a hit of the rule. */
  setup?(run: { readonly oracle: O; readonly subject: S; readonly hit: () => void }): void;
  /** Before a request reaches either system: brings the oracle to what the subject does first; true if it did. */
  beforeStep?(step: RequestContext<O, S>): boolean | Promise<boolean>;
  /** Normalises a step's answers where the difference shows. */
  answers?(pair: AnswerPair, step: RequestContext<O, S>): AnswerPair | null;
  /** After a step's answers matched: reconciles the state the difference left apart; true if it did. */
  afterStep?(pair: AnswerPair, step: RequestContext<O, S>): boolean | Promise<boolean>;
  /** After a tick on both sides: reconciles what their scans do differently; true if it did. */
  afterTick?(tick: RunContext<O, S>): boolean | Promise<boolean>;
  /** Normalises snapshots where the difference shows. */
  snapshots?(pair: SnapshotPair, at: RunContext<O, S>): SnapshotPair | null;
}

/** Options of {@link runDifferential}. */
export interface DifferentialOptions<O extends ProtocolSystem, S extends ProtocolSystem> {
  readonly seed: number;
  readonly steps: number;
  readonly oracle: O;
  readonly subject: S;
  readonly rules: readonly DifferenceRule<O, S>[];
  /** Snapshots are compared every this many steps and after the last. Default 40. */
  readonly snapshotEvery?: number;
  /** The one-line command that replays a seed, for failure messages. */
  readonly replay?: (seed: number) => string;
  /** The stream's first instant. */
  readonly start?: Instant;
  /** How many of the last steps a failure message lists. Default 12. */
  readonly history?: number;
}

/** What a run did: answers by kind and status, and how often each rule made a difference. */
export interface DifferentialReport {
  readonly seed: number;
  readonly steps: number;
  /** `"<kind> <status>"` (ticks as `"tick"`) → count. */
  readonly outcomes: Record<string, number>;
  /** Rule name → how many times it changed a comparison or reconciled state. */
  readonly ruleHits: Record<string, number>;
}

/** A difference no rule allows: the run's failure. Its message has everything needed to replay it. */
export class DifferentialMismatch extends Error {
  readonly code = "BELAY_DIFFERENTIAL_MISMATCH";
  readonly seed: number;
  readonly step: number;

  constructor(message: string, seed: number, step: number) {
    super(message);
    this.name = "DifferentialMismatch";
    this.seed = seed;
    this.step = step;
  }
}

function describeStep(index: number, step: StreamStep, answer?: ProtocolAnswer): string {
  const head = `#${index} @${step.now}`;
  if (step.type === "tick") return `${head} tick`;
  return `${head} ${canonicalJson(step.request)}${answer === undefined ? "" : ` -> ${answer.status} ${canonicalJson(answer.data).slice(0, 300)}`}`;
}

/** The parts of two snapshots that differ, each side's text. */
function snapshotDiff(pair: SnapshotPair): string {
  const lines: string[] = [];
  for (const key of Object.keys(pair.subject) as (keyof ProtocolSnapshot)[]) {
    const o = pair.oracle[key] as readonly unknown[];
    const s = pair.subject[key] as readonly unknown[];
    if (sameJson(o, s)) continue;
    const oSet = new Set(o.map((item) => canonicalJson(item)));
    const sSet = new Set(s.map((item) => canonicalJson(item)));
    lines.push(`  ${key}:`);
    for (const item of oSet) if (!sSet.has(item)) lines.push(`    oracle only:  ${item}`);
    for (const item of sSet) if (!oSet.has(item)) lines.push(`    subject only: ${item}`);
  }
  return lines.join("\n");
}

/**
 * Runs `steps` steps of the seeded {@link ProtocolStream} through `oracle` and `subject`,
 * comparing answers after every step and snapshots at intervals and at the end; throws
 * {@link DifferentialMismatch} at the first difference no rule allows. The oracle and the system
 * under test are passed in: this package depends on neither.
 *
 * @example
 * ```ts
 * import { LocalNetwork } from "@resonatehq/sdk"; // a test dependency only
 * const report = await runDifferential({
 *   seed: 1,
 *   steps: 2_000,
 *   oracle: sdkServerSystem((new LocalNetwork() as unknown as { server: SdkServer }).server),
 *   subject: promiseStoreSystem(new MemoryPromiseStore(), { nextOccurrence }),
 *   rules: SDK_SERVER_DIFFERENCES,
 * });
 * ```
 */
export async function runDifferential<O extends ProtocolSystem, S extends ProtocolSystem>(options: DifferentialOptions<O, S>): Promise<DifferentialReport> {
  const { seed, oracle, subject, rules } = options;
  const snapshotEvery = options.snapshotEvery ?? 40;
  const stream = new ProtocolStream({ seed, ...(options.start === undefined ? {} : { start: options.start }) });
  const outcomes: Record<string, number> = {};
  const ruleHits: Record<string, number> = Object.fromEntries(rules.map((rule) => [rule.name, 0]));
  // The last steps, formatted only for a failure message.
  const history: { index: number; step: StreamStep; answer?: ProtocolAnswer }[] = [];
  const historyLength = options.history ?? 12;
  const hit = (rule: DifferenceRule<O, S>) => {
    ruleHits[rule.name] = (ruleHits[rule.name] ?? 0) + 1;
  };
  for (const rule of rules) rule.setup?.({ oracle, subject, hit: () => hit(rule) });
  // Each hook's rules, in order; a hook's result is awaited only when it is a promise (most are
  // synchronous, and an await per rule per step would cost more than the systems' own work).
  const having = (hook: keyof DifferenceRule<O, S>) => rules.filter((rule) => rule[hook] !== undefined);
  const [beforeStep, answers, afterStep, afterTick, snapshots] = (["beforeStep", "answers", "afterStep", "afterTick", "snapshots"] as const).map(having) as [
    DifferenceRule<O, S>[],
    DifferenceRule<O, S>[],
    DifferenceRule<O, S>[],
    DifferenceRule<O, S>[],
    DifferenceRule<O, S>[],
  ];
  const settle = async (rule: DifferenceRule<O, S>, result: boolean | Promise<boolean>) => {
    if ((result instanceof Promise ? await result : result) === true) hit(rule);
  };
  /** The pair after each rule that explains a difference in it (a rule answering `null` sees none), and those rules' names. */
  const explain = <P>(pair: P, rulesOf: readonly DifferenceRule<O, S>[], apply: (rule: DifferenceRule<O, S>, pair: P) => P | null) => {
    const applied: string[] = [];
    for (const rule of rulesOf) {
      const next = apply(rule, pair);
      if (next === null) continue;
      applied.push(rule.name);
      hit(rule);
      pair = next;
    }
    return { pair, applied };
  };

  const fail = (index: number, step: StreamStep, what: string, details: string, applied: readonly string[]): never => {
    const replay = options.replay?.(seed) ?? `seed ${seed}`;
    throw new DifferentialMismatch(
      [
        `promise differential: ${oracle.name} vs ${subject.name}, seed ${seed}, step ${index} (now ${step.now}): ${what}`,
        step.type === "request" ? `request: ${canonicalJson(step.request)}` : "step: tick",
        details,
        `rules applied: ${applied.length === 0 ? "none" : applied.join(", ")}`,
        "last steps (subject's answers):",
        ...history.map((h) => `  ${describeStep(h.index, h.step, h.answer)}`),
        `replay: ${replay}`,
      ].join("\n"),
      seed,
      index,
    );
  };

  let lastMatch = -1;
  const compareSnapshots = async (index: number, step: StreamStep) => {
    const context: RunContext<O, S> = { seed, index, now: step.now, oracle, subject };
    const raw: SnapshotPair = { oracle: await oracle.snapshot(step.now), subject: await subject.snapshot(step.now) };
    const { pair, applied } = explain(raw, snapshots, (rule, p) => rule.snapshots!(p, context));
    if (!sameJson(pair.oracle, pair.subject)) {
      const since = lastMatch < 0 ? "since the start" : `after step ${lastMatch}, the last snapshots that matched`;
      fail(index, step, `snapshots differ (the states parted ${since})`, snapshotDiff(pair), applied);
    }
    lastMatch = index;
  };

  for (let index = 0; index < options.steps; index++) {
    const step = stream.next();
    const context = { seed, index, now: step.now, oracle, subject };
    if (step.type === "tick") {
      await oracle.tick(step.now);
      await subject.tick(step.now);
      for (const rule of afterTick) await settle(rule, rule.afterTick!(context));
      outcomes["tick"] = (outcomes["tick"] ?? 0) + 1;
      history.push({ index, step });
      if (history.length > historyLength) history.shift();
      if ((index + 1) % snapshotEvery === 0 || index === options.steps - 1) await compareSnapshots(index, step);
      continue;
    }
    const stepContext: RequestContext<O, S> = { ...context, request: step.request, notes: new Map() };
    for (const rule of beforeStep) await settle(rule, rule.beforeStep!(stepContext));
    const run = async (system: ProtocolSystem): Promise<ProtocolAnswer> => {
      try {
        return await system.send(step.request, step.now);
      } catch (error) {
        return fail(index, step, `${system.name} threw`, String((error as Error)?.stack ?? error), []);
      }
    };
    const raw: AnswerPair = { oracle: await run(oracle), subject: await run(subject) };
    const { pair, applied } = explain(raw, answers, (rule, p) => rule.answers!(p, stepContext));
    if (!sameJson(pair.oracle, pair.subject)) {
      fail(index, step, "answers differ", `${oracle.name}: ${canonicalJson(raw.oracle)}\n${subject.name}: ${canonicalJson(raw.subject)}`, applied);
    }
    for (const rule of afterStep) await settle(rule, rule.afterStep!(raw, stepContext));
    stream.observe(step, raw.subject);
    const outcome = `${step.request.kind} ${raw.subject.status}`;
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    history.push({ index, step, answer: raw.subject });
    if (history.length > historyLength) history.shift();
    if ((index + 1) % snapshotEvery === 0 || index === options.steps - 1) await compareSnapshots(index, step);
  }
  return { seed, steps: options.steps, outcomes, ruleHits };
}
