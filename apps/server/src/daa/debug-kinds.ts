import { InvalidInputError, type Instant, MAX_INSTANT, type PromiseSnapshot, type PromiseStore } from "@belay/contract";
import type { BackgroundLoop } from "./background-loop.js";
import type { DebugKind } from "./envelope.js";
import type { TimerScan } from "./timer-scan.js";

// The debug kinds, for trace checkers and differential tests, answered only in debug mode:
//
// - `debug.start` holds this process's background loops (timeout scan, outbox drain), so time
//   moves only by `debug.tick` and each request's `resonate:debug_time`; `debug.stop` resumes them.
// - `debug.reset` deletes everything the promise store holds.
// - `debug.snap` answers everything it holds, in the reference server's shape.
// - `debug.tick {time}` runs one timeout scan (and schedule pass) at `time`. It answers `[]`:
//   the scan's effects are read back with `debug.snap`, not itemised.

/** What the debug kinds act on. */
export interface DebugTargets {
  readonly store: PromiseStore;
  readonly loops: readonly BackgroundLoop[];
  readonly scan: TimerScan;
}

/** `debug.snap`'s data: the reference server's snapshot shape, plus the schedules. */
export function snapshotData(snapshot: PromiseSnapshot): Record<string, unknown> {
  const tasks = new Map(snapshot.tasks.map((task) => [task.id, task]));
  const promises = new Map(snapshot.promises.map((promise) => [promise.id, promise]));
  return {
    promises: snapshot.promises,
    promiseTimeouts: snapshot.timers.promises.map(({ id, at }) => ({ id, timeout: at })),
    callbacks: snapshot.callbacks.map(({ awaiter, awaited }) => ({ awaiter, awaited })),
    listeners: snapshot.listeners.map(({ promiseId, address }) => ({ id: promiseId, address })),
    tasks: snapshot.tasks,
    // Type 0: a pending task's retry; 1: an acquired task's lease.
    taskTimeouts: snapshot.timers.tasks.map(({ id, at }) => ({ id, type: tasks.get(id)?.state === "acquired" ? 1 : 0, timeout: at })),
    messages: snapshot.outbox.flatMap((row): { readonly address: string; readonly message: unknown }[] => {
      if (row.kind === "execute") return [{ address: row.address, message: { kind: "execute", head: {}, data: { task: { id: row.id, version: row.version } } } }];
      const promise = promises.get(row.id);
      return promise === undefined ? [] : [{ address: row.address, message: { kind: "unblock", head: {}, data: { promise } } }];
    }),
    schedules: snapshot.schedules,
  };
}

/** Runs a debug kind at `now`; answers its data (throws `InvalidInputError` naming the field of a bad `debug.tick`). */
export async function runDebugKind(kind: DebugKind, data: Record<string, unknown>, now: Instant, targets: DebugTargets): Promise<unknown> {
  switch (kind) {
    case "debug.start":
      await Promise.all(targets.loops.map((loop) => loop.pause()));
      return {};
    case "debug.stop":
      for (const loop of targets.loops) loop.resume();
      return {};
    case "debug.reset":
      await targets.store.reset();
      return {};
    case "debug.snap":
      return snapshotData(await targets.store.snapshot(now));
    case "debug.tick": {
      const time = data["time"];
      if (typeof time !== "number" || !Number.isSafeInteger(time) || time < 0 || time > MAX_INSTANT) {
        throw new InvalidInputError("data.time", `must be an instant (epoch milliseconds, 0 to ${MAX_INSTANT})`);
      }
      await targets.scan.scan(time);
      return [];
    }
  }
}
