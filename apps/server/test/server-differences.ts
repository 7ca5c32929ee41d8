import { createRequire } from "node:module";
import type { DifferenceRule, ProtocolSystem, SdkServer, SdkServerSystem } from "@belay/testing";

// The differences between belay-server's listener and the SDK's in-memory server that show only
// through the server — its own loops and the envelope — beyond those of the promise store, which
// SDK_SERVER_DIFFERENCES of @belay/testing lists. Each named, with its reason.

/** The oracle's own cron library (cron-parser, a dependency of the SDK), for its side of a rule. */
const sdkRequire = createRequire(createRequire(import.meta.url).resolve("@resonatehq/sdk"));
const { CronExpressionParser } = sdkRequire("cron-parser") as {
  CronExpressionParser: { parse(cron: string, options: { currentDate: Date }): { next(): { getTime(): number } } };
};

/** The SDK server's schedule timers, which `SdkServer` does not name. */
interface SdkScheduleTimers {
  readonly sTimeouts: readonly { readonly id: string; readonly timeout: number }[];
  readonly schedules: Map<string, unknown>;
  setSTimeout(timeout: { readonly id: string; readonly timeout: number }): unknown;
}

/** The listener's own allowed differences. */
export const SERVER_DIFFERENCES: readonly DifferenceRule<SdkServerSystem, ProtocolSystem>[] = Object.freeze([
  {
    name: "schedule-resumes-from-now",
    verdict: "allowed",
    reason:
      "Belay server choice (README, how Belay's server differs): its timeout scan (debug.tick) fires a due schedule once and moves its next run to the first occurrence after now, so occurrences missed while no scan ran fire once, late, and the schedule goes on from now; the SDK server fires each missed occurrence in turn, one per tick, counting from the one it fired. The store leaves the next run to its caller, so the in-process differential, which computes it as the SDK does, never sees this. After each tick the oracle's schedules still due are moved to the first occurrence after now, by the oracle's cron library.",
    afterTick(tick) {
      const server = tick.oracle.server as SdkServer & SdkScheduleTimers;
      let moved = false;
      for (const { id, timeout } of [...server.sTimeouts]) {
        if (timeout > tick.now) continue;
        const { cron } = server.schedules.get(id) as { cron: string };
        server.setSTimeout({ id, timeout: CronExpressionParser.parse(cron, { currentDate: new Date(tick.now) }).next().getTime() });
        moved = true;
      }
      return moved;
    },
  },
]);
