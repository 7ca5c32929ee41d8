import { type PurgeTerminalRequest, type PurgeTerminalResult, clampToBound } from "@belay/contract";
import { S, type Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";

const COLUMNS = "seq, id, workflow_id, terminal_at";

/**
 * Terminal jobs of one retention class that ended before `before`, oldest first, after a keyset
 * position: each class reads its own partial index on the terminal instant.
 */
const DONE = (t: Tables) => `SELECT ${COLUMNS} FROM ${t.jobs}
  WHERE state IN (${S.succeeded}, ${S.cancelled}) AND terminal_at < ? AND (terminal_at, seq) > (?, ?)
  ORDER BY terminal_at, seq LIMIT ?`;

const FAILED = (t: Tables) => `SELECT ${COLUMNS} FROM ${t.jobs}
  WHERE state IN (${S.deadLettered}, ${S.quarantined}) AND terminal_at < ? AND (terminal_at, seq) > (?, ?)
  ORDER BY terminal_at, seq LIMIT ?`;

/** A workflow's live members and its drain instant (its last member's terminal time). */
const WORKFLOW_CLOCK = (t: Tables) => `SELECT sum(state < ${S.succeeded}) AS live, max(terminal_at) AS drained
  FROM ${t.jobs} WHERE workflow_id = ?`;

const UNCOUNT_TAGS = (t: Tables) => `UPDATE ${t.tagCounts} SET jobs = jobs - 1
  WHERE (key, value) IN (SELECT key, value FROM ${t.tags} WHERE job_seq = ?)`;

const DROP_UNUSED_TAGS = (t: Tables) => `DELETE FROM ${t.tagCounts}
  WHERE jobs <= 0 AND (key, value) IN (SELECT key, value FROM ${t.tags} WHERE job_seq = ?)`;

/** Its payload, output, tags, edges and transitions go with it (ON DELETE CASCADE). */
const DELETE_JOB = (t: Tables) => `DELETE FROM ${t.jobs} WHERE seq = ?`;

const WORKFLOW_HAS_MEMBERS = (t: Tables) => `SELECT 1 FROM ${t.jobs} WHERE workflow_id = ? LIMIT 1`;

const DELETE_WORKFLOW = (t: Tables) => `DELETE FROM ${t.workflows} WHERE id = ?`;

interface Candidate {
  seq: number;
  id: string;
  workflow_id: string | null;
  terminal_at: number;
}

/**
 * See `JobStore.purgeTerminal`. A workflow member is purged only once its whole workflow drained,
 * by the drain instant; the workflow row goes with its last member. Victims are chosen before
 * anything is deleted, so the drain instant of a workflow is read whole.
 */
export function* purgeTerminal(ctx: OpContext, request: PurgeTerminalRequest): Steps<PurgeTerminalResult> {
  const max = clampToBound(request.max, ctx.bounds.purgeBatch);
  const scan = ctx.q.get(request.retentionClass === "succeededOrCancelled" ? DONE : FAILED);
  const clocks = new Map<string, number | null>();
  const purgeClock = (row: Candidate): number | null => {
    if (row.workflow_id === null) return row.terminal_at;
    if (!clocks.has(row.workflow_id)) {
      const { live, drained } = ctx.q.get(WORKFLOW_CLOCK).get(row.workflow_id) as { live: number; drained: number };
      clocks.set(row.workflow_id, live > 0 ? null : drained);
    }
    return clocks.get(row.workflow_id)!;
  };
  const victims: Candidate[] = [];
  let position = { at: Number.MIN_SAFE_INTEGER, seq: 0 };
  for (;;) {
    const batch = scan.all(request.before, position.at, position.seq, max) as Candidate[];
    for (const row of batch) {
      const clock = purgeClock(row);
      if (clock !== null && clock < request.before) victims.push(row);
      if (victims.length === max) break;
    }
    const last = batch.at(-1);
    // Members of undrained workflows are passed over; keep reading until the batch is full.
    if (victims.length === max || batch.length < max || last === undefined) break;
    position = { at: last.terminal_at, seq: last.seq };
  }
  for (const row of victims) {
    ctx.q.get(UNCOUNT_TAGS).run(row.seq);
    ctx.q.get(DROP_UNUSED_TAGS).run(row.seq);
    ctx.q.get(DELETE_JOB).run(row.seq);
    yield `job ${row.id} purged`;
    if (row.workflow_id !== null && ctx.q.get(WORKFLOW_HAS_MEMBERS).get(row.workflow_id) === undefined) {
      ctx.q.get(DELETE_WORKFLOW).run(row.workflow_id);
    }
  }
  return { purged: victims.length };
}
