import { type Bounds, type HistoryPolicy, InvalidInputError, resolveBounds } from "@belay/contract";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Overrides of the default bounds. */
  readonly bounds?: Partial<Bounds>;
  /** Default `transitionsAndFailureDetail`. */
  readonly historyPolicy?: HistoryPolicy;
  /**
   * Emit in-process wake-up hints after each write that made a job due (default false, as the
   * design has it for this store; the test harness turns them on so idle workers react at once).
   */
  readonly wakeUpHints?: boolean;
}

/** Options with every default applied and every field checked. */
export interface ResolvedMemoryStoreOptions {
  readonly bounds: Readonly<Bounds>;
  readonly historyPolicy: HistoryPolicy;
  readonly wakeUpHints: boolean;
}

const HISTORY_POLICIES: readonly HistoryPolicy[] = ["off", "transitions", "transitionsAndFailureDetail"];

/** Applies defaults and validates; throws `InvalidInputError` naming the field. */
export function resolveMemoryStoreOptions(options: MemoryStoreOptions): ResolvedMemoryStoreOptions {
  const bounds = resolveBounds(options.bounds);
  const historyPolicy = options.historyPolicy ?? "transitionsAndFailureDetail";
  if (!HISTORY_POLICIES.includes(historyPolicy)) {
    throw new InvalidInputError("historyPolicy", "must be off, transitions or transitionsAndFailureDetail");
  }
  return { bounds, historyPolicy, wakeUpHints: options.wakeUpHints ?? false };
}
