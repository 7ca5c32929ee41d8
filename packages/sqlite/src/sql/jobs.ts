import {
  type DependencyMode,
  type InitialJobState,
  type Instant,
  type JobState,
  type JobSummary,
  type NormalizedNewJob,
  type Tag,
  JOB_STATE_CODES,
  foldAscii,
  jobStateFromCode,
  truncateUtf8,
} from "@belay/contract";
import type { Tables } from "../tables.js";
import { S } from "../tables.js";
import { type Io, exec, row } from "../io.js";
import { type IoContext, type OpContext, noteDue } from "../transaction.js";

// Every change of a job's state goes through `moveToTerminal` or `moveToScheduled` (or the claim
// and cancel-request statements of their own operations), followed by `recordTransition`; latches
// are resolved by `resolveChildren`. The SQL of each is here, in one place.

/** Dependency modes by their stored code (0, 1). Stable: never reorder. */
export const DEPENDENCY_MODES: readonly DependencyMode[] = ["onSuccess", "onAnyTerminal"];

/** The job columns of a summary, with its tags and parents as JSON arrays; `j` aliases the jobs table. */
export const summaryColumns = (t: Tables) => `j.seq, j.id, j.job_name, j.queue, j.state, j.due_at, j.attempt,
  j.releases, j.lease_owner, j.lease_expires_at, j.cancel_requested_by, j.enqueued_at, j.terminal_at,
  j.terminal_cause, j.dependency_mode, j.trace_context, j.schedule_id, j.workflow_id,
  (SELECT json_group_array(json_array(g.key, g.value) ORDER BY g.ordinal) FROM ${t.tags} g WHERE g.job_seq = j.seq) AS tags,
  (SELECT json_group_array(e.parent_id ORDER BY e.ordinal) FROM ${t.edges} e WHERE e.child_seq = j.seq) AS parents`;

/** A row selected with {@link summaryColumns}. */
export interface SummaryRow {
  readonly seq: number;
  readonly id: string;
  readonly job_name: string;
  readonly queue: string;
  readonly state: number;
  readonly due_at: number;
  readonly attempt: number;
  readonly releases: number;
  readonly lease_owner: string | null;
  readonly lease_expires_at: number | null;
  readonly cancel_requested_by: string | null;
  readonly enqueued_at: number;
  readonly terminal_at: number | null;
  readonly terminal_cause: string | null;
  readonly dependency_mode: number;
  readonly trace_context: string | null;
  readonly schedule_id: string | null;
  readonly workflow_id: string | null;
  readonly tags: string;
  readonly parents: string;
}

/** Tags from their JSON form `[[key, value], …]`. */
export function parseTags(json: string): Tag[] {
  return (JSON.parse(json) as [string, string][]).map(([key, value]) => ({ key, value }));
}

/** A summary row as the contract's `JobSummary`. */
export function toSummary(row: SummaryRow): JobSummary {
  return {
    id: row.id,
    seq: row.seq,
    jobName: row.job_name,
    queue: row.queue,
    state: jobStateFromCode(row.state),
    dueAt: row.due_at,
    attempt: row.attempt,
    releases: row.releases,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    cancelRequested: row.cancel_requested_by !== null,
    enqueuedAt: row.enqueued_at,
    terminalAt: row.terminal_at,
    terminalCause: row.terminal_cause,
    parentIds: JSON.parse(row.parents) as string[],
    dependencyMode: DEPENDENCY_MODES[row.dependency_mode]!,
    tags: parseTags(row.tags),
    traceContext: row.trace_context,
    scheduleId: row.schedule_id,
    workflowId: row.workflow_id,
  };
}

const FIND_JOB = (t: Tables) => `SELECT seq, id, state FROM ${t.jobs} WHERE id = ?`;

const INSERT_JOB = (t: Tables) => `INSERT INTO ${t.jobs} (id, job_name, queue, state, due_at, enqueued_at,
  terminal_at, terminal_cause, dependency_mode, parents_remaining, transition_count, trace_context, schedule_id, workflow_id)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`;

const INSERT_PAYLOAD = (t: Tables) => `INSERT INTO ${t.payloads} (job_seq, payload) VALUES (?, ?)`;

const INSERT_TAG = (t: Tables) => `INSERT INTO ${t.tags} (job_seq, ordinal, key, value) VALUES (?, ?, ?, ?)`;

const COUNT_TAG = (t: Tables) => `INSERT INTO ${t.tagCounts} (key, value, key_fold, value_fold, jobs)
  VALUES (?, ?, ?, ?, 1) ON CONFLICT (key, value) DO UPDATE SET jobs = jobs + 1`;

const INSERT_EDGE = (t: Tables) => `INSERT INTO ${t.edges} (child_seq, ordinal, parent_id, parent_seq) VALUES (?, ?, ?, ?)`;

const MARK_PARENT = (t: Tables) => `UPDATE ${t.jobs} SET has_children = 1 WHERE seq = ? AND has_children = 0`;

const INSERT_TRANSITION = (t: Tables) => `INSERT INTO ${t.transitions} (job_seq, ordinal, at, state, attempt, failure_detail)
  VALUES (?, ?, ?, ?, ?, ?)`;

const TRIM_TRANSITIONS = (t: Tables) => `DELETE FROM ${t.transitions} WHERE job_seq = ? AND ordinal <= ?`;

const MOVED = "seq, id, queue, state, attempt, transition_count, has_children";

const TO_TERMINAL = (t: Tables) => `UPDATE ${t.jobs} SET state = ?, lease_owner = NULL, lease_expires_at = NULL,
  cancel_requested_by = NULL, terminal_at = ?, terminal_cause = ?, transition_count = transition_count + ?
  WHERE seq = ? RETURNING ${MOVED}`;

const TO_SCHEDULED = (t: Tables) => `UPDATE ${t.jobs} SET state = ${S.scheduled}, due_at = ?, attempt = ?, releases = ?,
  lease_owner = NULL, lease_expires_at = NULL, cancel_requested_by = NULL, terminal_at = NULL, terminal_cause = NULL,
  transition_count = transition_count + ? WHERE seq = ? RETURNING ${MOVED}`;

const AWAITING_CHILDREN = (t: Tables) => `SELECT j.seq, j.id, j.queue, j.due_at, j.attempt, j.releases, j.dependency_mode
  FROM ${t.edges} e JOIN ${t.jobs} j ON j.seq = e.child_seq
  WHERE e.parent_seq = ? AND j.state = ${S.awaitingParents} ORDER BY j.seq`;

const DROP_LATCH = (t: Tables) => `UPDATE ${t.jobs} SET parents_remaining = parents_remaining - 1 WHERE seq = ?
  RETURNING parents_remaining`;

const TAGS_OF = (t: Tables) => `SELECT key, value FROM ${t.tags} WHERE job_seq = ? ORDER BY ordinal`;

/** A job as a state change returns it: enough to record its transition and resolve its children. */
export interface MovedJob {
  readonly seq: number;
  readonly id: string;
  readonly queue: string;
  readonly state: number;
  readonly attempt: number;
  readonly transition_count: number;
  readonly has_children: number;
}

/** A job looked up by id: its seq and state, or `undefined`. */
export function* findJob(id: string): Io<{ seq: number; id: string; state: number } | undefined> {
  const found = yield* row<{ seq: number | bigint; id: string; state: number | bigint }>(FIND_JOB, id);
  // Number(): a caller's connection may read integers as bigint (better-sqlite3's safeIntegers).
  return found === undefined ? undefined : { seq: Number(found.seq), id: found.id, state: Number(found.state) };
}

/** 1 when transitions are recorded, else 0: what a state change adds to `transition_count`. */
function recorded(ctx: IoContext): number {
  return ctx.history === "off" ? 0 : 1;
}

/** The initial state of a new job given its parents' current states (every parent exists). */
export function* initialStateOf(
  job: NormalizedNewJob,
): Io<{ state: InitialJobState; parentsRemaining: number; terminalCause: string | null; parentSeqs: number[] }> {
  let live = 0;
  let cancelCause: string | null = null;
  const parentSeqs: number[] = [];
  for (const parentId of job.parentIds) {
    const parent = (yield* findJob(parentId))!;
    parentSeqs.push(parent.seq);
    if (parent.state < S.succeeded) live++;
    else if (cancelCause === null && job.dependencyMode === "onSuccess" && parent.state !== S.succeeded) {
      cancelCause = `parent ${parent.id} ${jobStateFromCode(parent.state)}`;
    }
  }
  if (cancelCause !== null) return { state: "cancelled", parentsRemaining: 0, terminalCause: cancelCause, parentSeqs };
  return live > 0
    ? { state: "awaitingParents", parentsRemaining: live, terminalCause: null, parentSeqs }
    : { state: "scheduled", parentsRemaining: 0, terminalCause: null, parentSeqs };
}

/**
 * Inserts a new job in its initial state with its payload, tags, edges and first transition, and
 * notes a hint when it is due now. Returns its seq.
 */
export function* insertJob(
  ctx: IoContext,
  job: NormalizedNewJob,
  initial: { state: JobState; parentsRemaining: number; terminalCause: string | null; parentSeqs: readonly number[] },
  now: Instant,
  origin: { scheduleId: string | null; workflowId: string | null },
): Io<number> {
  const state = JOB_STATE_CODES[initial.state];
  const terminal = state >= S.succeeded;
  const inserted = yield* row<{ seq: number | bigint }>(
    INSERT_JOB,
    job.id,
    job.jobName,
    job.queue,
    state,
    job.dueAt,
    now,
    terminal ? now : null,
    terminal ? initial.terminalCause : null,
    DEPENDENCY_MODES.indexOf(job.dependencyMode),
    initial.parentsRemaining,
    recorded(ctx),
    job.traceContext,
    origin.scheduleId,
    origin.workflowId,
  );
  const seq = Number(inserted!.seq);
  yield* exec(INSERT_PAYLOAD, seq, job.payload);
  yield* insertTags(seq, 0, job.tags);
  for (const [i, parentId] of job.parentIds.entries()) {
    const parentSeq = initial.parentSeqs[i]!;
    yield* exec(INSERT_EDGE, seq, i, parentId, parentSeq);
    yield* exec(MARK_PARENT, parentSeq);
  }
  if (ctx.history !== "off") yield* exec(INSERT_TRANSITION, seq, 1, now, state, 0, null);
  if (state === S.scheduled) noteDue(ctx, job.queue, job.dueAt, now);
  return seq;
}

/** Appends tags to a job (de-duplicated against it already), numbering them after `existing`. */
export function* insertTags(seq: number, existing: number, tags: readonly Tag[]): Io<void> {
  for (const [i, tag] of tags.entries()) {
    yield* exec(INSERT_TAG, seq, existing + i + 1, tag.key, tag.value);
    yield* exec(COUNT_TAG, tag.key, tag.value, foldAscii(tag.key), foldAscii(tag.value));
  }
}

/** The tags a job carries, in order. */
export function tagsOf(ctx: OpContext, seq: number): Tag[] {
  return ctx.q.get(TAGS_OF).all(seq) as Tag[];
}

/**
 * Appends one transition for a job that just entered `moved.state` (unless history is off) and
 * drops the oldest beyond `bounds.transitionsPerJob`. Failure detail is kept only under
 * `transitionsAndFailureDetail`, truncated on a UTF-8 boundary.
 */
export function recordTransition(ctx: OpContext, moved: MovedJob, now: Instant, failureDetail: string | null = null): void {
  if (ctx.history === "off") return;
  const detail =
    ctx.history === "transitionsAndFailureDetail" && failureDetail !== null
      ? truncateUtf8(failureDetail, ctx.bounds.failureDetailBytes)
      : null;
  ctx.q.get(INSERT_TRANSITION).run(moved.seq, moved.transition_count, now, moved.state, moved.attempt, detail);
  const excess = moved.transition_count - ctx.bounds.transitionsPerJob;
  if (excess > 0) ctx.q.get(TRIM_TRANSITIONS).run(moved.seq, excess);
}

/** Moves a job to a terminal state (clearing lease and cancel request) and records the transition. */
export function moveToTerminal(
  ctx: OpContext,
  seq: number,
  to: JobState,
  cause: string,
  now: Instant,
  failureDetail: string | null = null,
): MovedJob {
  const moved = ctx.q.get(TO_TERMINAL).get(JOB_STATE_CODES[to], now, cause, recorded(ctx), seq) as MovedJob;
  recordTransition(ctx, moved, now, failureDetail);
  return moved;
}

/** Moves a job to scheduled at `dueAt` (clearing lease, cancel request and terminal fields) and records the transition. */
export function moveToScheduled(
  ctx: OpContext,
  seq: number,
  fields: { dueAt: Instant; attempt: number; releases: number },
  now: Instant,
  failureDetail: string | null = null,
): MovedJob {
  const moved = ctx.q.get(TO_SCHEDULED).get(fields.dueAt, fields.attempt, fields.releases, recorded(ctx), seq) as MovedJob;
  recordTransition(ctx, moved, now, failureDetail);
  noteDue(ctx, moved.queue, fields.dueAt, now);
  return moved;
}

/**
 * Resolves the latches of the children of jobs that just became terminal: an `onSuccess` child of
 * a parent that did not succeed is cancelled (and its own children resolved in turn, to any
 * depth); otherwise the child's latch drops by one and it is scheduled — due at the later of its
 * own due time and now — when it reaches zero. Jobs nobody named as a parent cost no query.
 */
export function resolveChildren(ctx: OpContext, terminal: readonly MovedJob[], now: Instant): void {
  const work = terminal.filter((job) => job.has_children !== 0);
  while (work.length > 0) {
    const parent = work.shift()!;
    const children = ctx.q.get(AWAITING_CHILDREN).all(parent.seq) as {
      seq: number;
      id: string;
      queue: string;
      due_at: number;
      attempt: number;
      releases: number;
      dependency_mode: number;
    }[];
    for (const child of children) {
      if (child.dependency_mode === 0 && parent.state !== S.succeeded) {
        const cause = `parent ${parent.id} ${jobStateFromCode(parent.state)}`;
        const cancelled = moveToTerminal(ctx, child.seq, "cancelled", cause, now);
        if (cancelled.has_children !== 0) work.push(cancelled);
        continue;
      }
      const { parents_remaining } = ctx.q.get(DROP_LATCH).get(child.seq) as { parents_remaining: number };
      if (parents_remaining === 0) {
        const dueAt = Math.max(child.due_at, now);
        moveToScheduled(ctx, child.seq, { dueAt, attempt: child.attempt, releases: child.releases }, now);
      }
    }
  }
}
