import type { CatchUpPolicy, Instant, MintDecision } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { MAX_TICKS_PER_PASS, MISSED_TICK_THRESHOLD_MS, type PlannableSchedule, parseCron, planSchedule } from "./cron-planner.js";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const at = (iso: string): Instant => Date.parse(iso);
const iso = (instants: readonly Instant[]): string[] => instants.map((t) => new Date(t).toISOString());

/** A minute boundary to plan around. */
const T0 = at("2026-05-04T10:00:00Z");

function schedule(
  cursor: Instant,
  options: { catchUp?: CatchUpPolicy; noOverlap?: boolean; hasLiveInstance?: boolean } = {},
): PlannableSchedule {
  return {
    id: "sched",
    cursor,
    catchUp: options.catchUp ?? "skip",
    noOverlap: options.noOverlap ?? false,
    hasLiveInstance: options.hasLiveInstance ?? false,
  };
}

/** The InvalidInputError `parseCron` throws. */
function parseError(expression: string, timeZone?: string): { code: string; field: string } {
  try {
    parseCron(expression, timeZone);
  } catch (error) {
    return error as { code: string; field: string };
  }
  throw new Error(`parseCron(${JSON.stringify(expression)}, ${String(timeZone)}) did not throw`);
}

/** Checks what every decision must satisfy, whatever the policy. */
function expectWellFormed(decision: MintDecision, cursor: Instant, now: Instant): void {
  expect(decision.scheduleId).toBe("sched");
  expect(decision.expectedCursor).toBe(cursor);
  expect(decision.newCursor).toBeGreaterThan(cursor);
  expect(decision.newCursor).toBeLessThanOrEqual(now);
  expect(decision.mint.length).toBeLessThanOrEqual(MAX_TICKS_PER_PASS);
  expect(decision.skip.length).toBeLessThanOrEqual(MAX_TICKS_PER_PASS);
  for (const list of [decision.mint, decision.skip]) {
    expect([...list].sort((x, y) => x - y)).toEqual(list);
    for (const t of list) {
      expect(t).toBeGreaterThan(cursor);
      expect(t).toBeLessThanOrEqual(decision.newCursor);
    }
  }
  const minted = new Set(decision.mint);
  expect(minted.size).toBe(decision.mint.length);
  for (const t of decision.skip) expect(minted.has(t)).toBe(false);
}

describe("cron-planner: parseCron", () => {
  it("parseCron: 5 fields have minute precision", () => {
    const cron = parseCron("*/5 * * * *");
    expect(cron.timeZone).toBe("UTC");
    expect(cron.expression).toBe("*/5 * * * *");
    expect(iso(cron.nextTicks(T0, 3))).toEqual(["2026-05-04T10:05:00.000Z", "2026-05-04T10:10:00.000Z", "2026-05-04T10:15:00.000Z"]);
  });

  it("parseCron: 6 fields put seconds first", () => {
    const cron = parseCron("*/10 * * * * *");
    expect(cron.nextTicks(T0, 3)).toEqual([T0 + 10 * SECOND, T0 + 20 * SECOND, T0 + 30 * SECOND]);
    expect(parseCron("30 0 12 * * *").nextTicks(T0, 1)).toEqual([at("2026-05-04T12:00:30Z")]);
  });

  it("parseCron: ticks are strictly after the given instant", () => {
    expect(parseCron("* * * * *").nextTicks(T0, 1)).toEqual([T0 + MINUTE]);
  });

  it("parseCron: reads the expression in its time zone", () => {
    // 09:00 in New York (EDT, UTC−4) in May is 13:00Z.
    expect(iso(parseCron("0 9 * * *", "America/New_York").nextTicks(T0, 1))).toEqual(["2026-05-04T13:00:00.000Z"]);
  });

  it("parseCron: day-of-month and day-of-week both restricted means either matches", () => {
    // The 1st of the month, or any Monday. February 2026: Sun 1st, Mondays 2, 9, 16, 23; Sun 1 March.
    const ticks = parseCron("0 0 1 * 1").nextTicks(at("2026-01-31T12:00:00Z"), 7);
    expect(iso(ticks).map((s) => s.slice(0, 10))).toEqual([
      "2026-02-01",
      "2026-02-02",
      "2026-02-09",
      "2026-02-16",
      "2026-02-23",
      "2026-03-01",
      "2026-03-02",
    ]);
  });

  it.each(["", "   ", "* * * *", "* * * * * * *", "61 * * * *", "* 24 * * *", "not a cron", "*/0 * * * *"])(
    "parseCron: rejects %j naming cron",
    (expression) => {
      const error = parseError(expression);
      expect(error.code).toBe("BELAY_INVALID_INPUT");
      expect(error.field).toBe("cron");
    },
  );

  it.each(["Mars/Olympus_Mons", "Europe/Berlinn", ""])("parseCron: rejects time zone %j naming timeZone", (zone) => {
    const error = parseError("* * * * *", zone);
    expect(error.code).toBe("BELAY_INVALID_INPUT");
    expect(error.field).toBe("timeZone");
  });
});

describe("cron-planner: planSchedule catch-up", () => {
  const everyMinute = parseCron("* * * * *");
  // Ten minutes behind: ticks T0+1m … T0+10m are due; only T0+10m is within a minute of now.
  const now = T0 + 10 * MINUTE + 30 * SECOND;

  it("catch-up skip: mints only the fresh tick and skips the missed ones", () => {
    const decision = planSchedule(schedule(T0, { catchUp: "skip" }), everyMinute, now)!;
    expectWellFormed(decision, T0, now);
    expect(decision.mint).toEqual([T0 + 10 * MINUTE]);
    expect(decision.skip).toEqual(Array.from({ length: 9 }, (_, i) => T0 + (i + 1) * MINUTE));
    expect(decision.newCursor).toBe(T0 + 10 * MINUTE);
  });

  it("catch-up skip: a tick exactly one threshold old still counts as fresh", () => {
    const onBoundary = T0 + 10 * MINUTE;
    expect(MISSED_TICK_THRESHOLD_MS).toBe(MINUTE);
    const decision = planSchedule(schedule(T0), everyMinute, onBoundary)!;
    expect(decision.mint).toEqual([T0 + 9 * MINUTE, T0 + 10 * MINUTE]);
    expect(decision.skip).toHaveLength(8);
  });

  it("catch-up coalesce: mints the latest missed tick plus the fresh one", () => {
    const decision = planSchedule(schedule(T0, { catchUp: "coalesce" }), everyMinute, now)!;
    expectWellFormed(decision, T0, now);
    expect(decision.mint).toEqual([T0 + 9 * MINUTE, T0 + 10 * MINUTE]);
    expect(decision.skip).toEqual(Array.from({ length: 8 }, (_, i) => T0 + (i + 1) * MINUTE));
    expect(decision.newCursor).toBe(T0 + 10 * MINUTE);
  });

  it("catch-up coalesce: nothing missed means no make-up run", () => {
    const decision = planSchedule(schedule(T0 + 9 * MINUTE, { catchUp: "coalesce" }), everyMinute, now)!;
    expect(decision.mint).toEqual([T0 + 10 * MINUTE]);
    expect(decision.skip).toEqual([]);
  });

  it("catch-up coalesce: only missed ticks (no fresh one) still mints one make-up run", () => {
    const late = T0 + 10 * MINUTE + 45 * SECOND;
    const decision = planSchedule(schedule(T0, { catchUp: "coalesce" }), parseCron("*/5 * * * *"), late + 5 * MINUTE - 50 * SECOND)!;
    // Ticks T0+5m and T0+10m; now is T0+15m−5s: both missed.
    expect(decision.mint).toEqual([T0 + 10 * MINUTE]);
    expect(decision.skip).toEqual([T0 + 5 * MINUTE]);
  });
});

describe("cron-planner: planSchedule noOverlap", () => {
  const everyMinute = parseCron("* * * * *");
  const now = T0 + 10 * MINUTE + 30 * SECOND;

  it("noOverlap with a live instance: skips every due tick and still advances the cursor", () => {
    for (const catchUp of ["skip", "coalesce"] as const) {
      const decision = planSchedule(schedule(T0, { catchUp, noOverlap: true, hasLiveInstance: true }), everyMinute, now)!;
      expectWellFormed(decision, T0, now);
      expect(decision.mint).toEqual([]);
      expect(decision.skip).toEqual(Array.from({ length: 10 }, (_, i) => T0 + (i + 1) * MINUTE));
      expect(decision.newCursor).toBe(T0 + 10 * MINUTE);
    }
  });

  it("noOverlap without a live instance: mints at most one tick, the latest", () => {
    const coalesced = planSchedule(schedule(T0, { catchUp: "coalesce", noOverlap: true }), everyMinute, now)!;
    expect(coalesced.mint).toEqual([T0 + 10 * MINUTE]);
    expect(coalesced.skip).toHaveLength(9);
    // Thirty fresh ticks of a per-second schedule: one minted.
    const everySecond = parseCron("* * * * * *");
    const fresh = planSchedule(schedule(T0, { noOverlap: true }), everySecond, T0 + 30 * SECOND)!;
    expectWellFormed(fresh, T0, T0 + 30 * SECOND);
    expect(fresh.mint).toEqual([T0 + 30 * SECOND]);
    expect(fresh.skip).toHaveLength(29);
    expect(fresh.newCursor).toBe(T0 + 30 * SECOND);
  });

  it("noOverlap without a live instance and a single due tick: mints it", () => {
    const decision = planSchedule(schedule(T0 + 9 * MINUTE + 59 * SECOND, { noOverlap: true }), everyMinute, now)!;
    expect(decision.mint).toEqual([T0 + 10 * MINUTE]);
    expect(decision.skip).toEqual([]);
  });
});

describe("cron-planner: planSchedule limits", () => {
  it("limits: at most 32 minted per pass; the cursor stops at the last tick considered", () => {
    const everySecond = parseCron("* * * * * *");
    const now = T0 + 50 * SECOND; // 50 fresh ticks
    const first = planSchedule(schedule(T0), everySecond, now)!;
    expectWellFormed(first, T0, now);
    expect(MAX_TICKS_PER_PASS).toBe(32);
    expect(first.mint).toEqual(Array.from({ length: 32 }, (_, i) => T0 + (i + 1) * SECOND));
    expect(first.skip).toEqual([]);
    expect(first.newCursor).toBe(T0 + 32 * SECOND);
    // The next pass picks up where the first stopped.
    const second = planSchedule(schedule(first.newCursor), everySecond, now)!;
    expect(second.mint).toEqual(Array.from({ length: 18 }, (_, i) => T0 + (i + 33) * SECOND));
    expect(second.newCursor).toBe(now);
    expect(planSchedule(schedule(second.newCursor), everySecond, now)).toBeNull();
  });

  it("limits: no due tick → null", () => {
    const everyMinute = parseCron("* * * * *");
    expect(planSchedule(schedule(T0), everyMinute, T0)).toBeNull();
    expect(planSchedule(schedule(T0), everyMinute, T0 + MINUTE - 1)).toBeNull();
    expect(planSchedule(schedule(T0), parseCron("0 0 1 1 *"), T0 + 30 * DAY)).toBeNull();
    expect(planSchedule(schedule(T0), everyMinute, T0 + MINUTE)).not.toBeNull();
  });

  it("limits: the same inputs give the same decision", () => {
    const cron = parseCron("*/7 * * * * *");
    const s = schedule(T0, { catchUp: "coalesce" });
    expect(planSchedule(s, cron, T0 + 3 * MINUTE)).toEqual(planSchedule(s, cron, T0 + 3 * MINUTE));
  });

  // The downtime tests enumerate thousands of ticks through croner: generous timeouts, no timing assertions.
  it("limits: a day of downtime for a per-second schedule gives a sane decision, ≤ 32 ticks recorded skipped", { timeout: 60_000 }, () => {
    const everySecond = parseCron("* * * * * *");
    const now = T0 + DAY;
    for (const catchUp of ["skip", "coalesce"] as const) {
      const decision = planSchedule(schedule(T0, { catchUp }), everySecond, now)!;
      expect(decision).not.toBeNull();
      expectWellFormed(decision, T0, now);
      expect(decision.skip.length).toBeGreaterThan(0);
      expect(decision.skip.length).toBeLessThanOrEqual(MAX_TICKS_PER_PASS);
    }
  });

  it("limits: passes repeated after six hours of per-second downtime converge; skip mints only fresh ticks", { timeout: 60_000 }, () => {
    const everySecond = parseCron("* * * * * *");
    const now = T0 + 6 * HOUR;
    const minted = drain(schedule(T0, { catchUp: "skip" }), everySecond, now);
    expect(minted.length).toBeGreaterThan(0);
    for (const t of minted) expect(now - t).toBeLessThanOrEqual(MISSED_TICK_THRESHOLD_MS);
  });

  it("limits: coalesce after six hours of per-second downtime makes exactly one make-up run over all passes", { timeout: 60_000 }, () => {
    // DESIGN §3: coalesce is "one make-up run". However many passes the backlog takes to drain
    // (21,600 missed ticks is more than one pass enumerates), only one tick older than the
    // threshold may be minted.
    const everySecond = parseCron("* * * * * *");
    const now = T0 + 6 * HOUR;
    const minted = drain(schedule(T0, { catchUp: "coalesce" }), everySecond, now);
    const makeUps = minted.filter((t) => now - t > MISSED_TICK_THRESHOLD_MS);
    expect(makeUps).toHaveLength(1);
  });
});

/** Applies decisions (at the same `now`) until the planner has nothing left; returns every tick minted. */
function drain(initial: PlannableSchedule, cron: ReturnType<typeof parseCron>, now: Instant): Instant[] {
  const minted: Instant[] = [];
  let current = initial;
  for (let pass = 0; pass < 1_000; pass++) {
    const decision = planSchedule(current, cron, now);
    if (decision === null) return minted;
    expectWellFormed(decision, current.cursor, now);
    minted.push(...decision.mint);
    current = { ...current, cursor: decision.newCursor };
  }
  throw new Error("the planner did not converge in 1000 passes");
}

describe("cron-planner: DST", () => {
  const daily0230 = parseCron("30 2 * * *", "Europe/Berlin");

  it("DST spring-forward (2026-03-29, 02:00 CET → 03:00 CEST): 02:30 fires once, at the first valid instant 01:00Z", () => {
    expect(iso(daily0230.nextTicks(at("2026-03-27T12:00:00Z"), 4))).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // 02:30 does not exist: 03:00 CEST
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
      "2026-03-31T00:30:00.000Z",
    ]);
    const cursor = at("2026-03-28T12:00:00Z");
    const now = at("2026-03-29T01:00:30Z");
    const decision = planSchedule(schedule(cursor), daily0230, now)!;
    expect(decision.mint).toEqual([at("2026-03-29T01:00:00Z")]);
    expect(decision.skip).toEqual([]);
    expect(decision.newCursor).toBe(at("2026-03-29T01:00:00Z"));
    // Nothing more that night.
    expect(planSchedule(schedule(decision.newCursor), daily0230, at("2026-03-29T23:59:59Z"))).toBeNull();
  });

  it("DST fall-back (2026-10-25, 03:00 CEST → 02:00 CET): 02:30 fires once, on its first occurrence 00:30Z", () => {
    expect(iso(daily0230.nextTicks(at("2026-10-23T12:00:00Z"), 4))).toEqual([
      "2026-10-24T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T00:30:00.000Z", // first 02:30 (CEST)
      "2026-10-26T01:30:00.000Z", // 02:30 CET: the repeated 02:30 (01:30Z on the 25th) is not a tick
      "2026-10-27T01:30:00.000Z",
    ]);
    const cursor = at("2026-10-24T12:00:00Z");
    const now = at("2026-10-25T00:30:30Z");
    const decision = planSchedule(schedule(cursor), daily0230, now)!;
    expect(decision.mint).toEqual([at("2026-10-25T00:30:00Z")]);
    expect(decision.newCursor).toBe(at("2026-10-25T00:30:00Z"));
    // The second 02:30 (01:30Z) passes without a tick.
    expect(planSchedule(schedule(decision.newCursor), daily0230, at("2026-10-25T01:30:30Z"))).toBeNull();
    expect(planSchedule(schedule(decision.newCursor), daily0230, at("2026-10-25T23:59:59Z"))).toBeNull();
  });
});
