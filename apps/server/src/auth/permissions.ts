import { InvalidInputError } from "@belay/contract";

/**
 * What a caller may do. `view` (monitoring reads) is allowed by default; every other permission
 * is denied unless a token or the host's `authorize` callback grants it.
 *
 * - `viewSensitive` — payloads, outputs and failure detail
 * - `enqueue` — enqueue jobs and workflows
 * - `cancel`, `requeue` — job actions
 * - `pauseQueue` — pause, resume and set a queue's concurrency limit
 * - `triggerSchedule` — run one extra instance of a schedule now
 * - `manageSchedules` — create, redefine and remove schedules
 * - `promises` — use the durable-promise listener (the Resonate envelope `POST /` with every
 *   kind, and `GET /poll/:group/:id`): create, settle and read promises, run tasks, manage
 *   promise schedules
 */
export type Permission =
  | "view"
  | "viewSensitive"
  | "enqueue"
  | "cancel"
  | "requeue"
  | "pauseQueue"
  | "triggerSchedule"
  | "manageSchedules"
  | "promises";

/** Every permission, in the order the docs list them. */
export const PERMISSIONS: readonly Permission[] = Object.freeze([
  "view",
  "viewSensitive",
  "enqueue",
  "cancel",
  "requeue",
  "pauseQueue",
  "triggerSchedule",
  "manageSchedules",
  "promises",
]);

/** Parses `view,cancel,…` (or `*` for all); throws `InvalidInputError` naming `field`. */
export function parsePermissions(text: string, field: string): readonly Permission[] {
  if (text.trim() === "*" || text.trim() === "all") return PERMISSIONS;
  const out: Permission[] = [];
  for (const raw of text.split(",")) {
    const name = raw.trim();
    if (name.length === 0) continue;
    if (!PERMISSIONS.includes(name as Permission)) {
      throw new InvalidInputError(field, `unknown permission ${name} (known: ${PERMISSIONS.join(", ")})`);
    }
    if (!out.includes(name as Permission)) out.push(name as Permission);
  }
  if (out.length === 0) throw new InvalidInputError(field, "names no permission");
  return out;
}
