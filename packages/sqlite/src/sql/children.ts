import {
  type InitialJobState, type Instant, type NormalizedNewJob, DEPENDENCY_MODE_CODES, jobStateFromCode, terminalCauseText,
} from "@belay/contract";
import type { Io } from "../io.js";
import { S, type Tables } from "../tables.js";
import type { OpContext } from "../transaction.js";
import { type MovedJob, byStore, findJob, moveToScheduled, moveToTerminal } from "./jobs.js";

// A child's latch (`parents_remaining`) counts its live parents. It is set when the child is
// enqueued, drops as each parent ends, and rises again when an operator requeue makes a parent
// live. `has_children` on the parent keeps jobs nobody named as a parent from costing a query.

const AWAITING_CHILDREN = (t: Tables) => `SELECT j.seq, j.id, j.queue, j.due_at, j.attempt, j.releases, j.dependency_mode
  FROM ${t.edges} e JOIN ${t.jobs} j ON j.seq = e.child_seq
  WHERE e.parent_seq = ? AND j.state = ${S.awaitingParents} ORDER BY j.seq`;

const DROP_LATCH = (t: Tables) => `UPDATE ${t.jobs} SET parents_remaining = parents_remaining - 1 WHERE seq = ?
  RETURNING parents_remaining`;

const REGATE_CHILDREN = (t: Tables) => `UPDATE ${t.jobs} SET parents_remaining = parents_remaining + 1
  WHERE state = ${S.awaitingParents} AND seq IN (SELECT child_seq FROM ${t.edges} WHERE parent_seq = ?)`;

/** The state a new job starts in, its latch, and the seqs of its parents (in the order it named them). */
export interface InitialState {
  readonly state: InitialJobState;
  readonly parentsRemaining: number;
  readonly terminalCause: string | null;
  readonly parentSeqs: readonly number[];
}

/** The initial state of a new job given its parents' current states (every parent exists). */
export function* initialStateOf(job: NormalizedNewJob): Io<InitialState> {
  let live = 0;
  let cancelCause: string | null = null;
  const parentSeqs: number[] = [];
  for (const parentId of job.parentIds) {
    const parent = (yield* findJob(parentId))!;
    parentSeqs.push(parent.seq);
    if (parent.state < S.succeeded) live++;
    else if (cancelCause === null && job.dependencyMode === "onSuccess" && parent.state !== S.succeeded) {
      cancelCause = terminalCauseText("parentEnded", { parentId: parent.id, parentState: jobStateFromCode(parent.state) });
    }
  }
  if (cancelCause !== null) return { state: "cancelled", parentsRemaining: 0, terminalCause: cancelCause, parentSeqs };
  return live > 0
    ? { state: "awaitingParents", parentsRemaining: live, terminalCause: null, parentSeqs }
    : { state: "scheduled", parentsRemaining: 0, terminalCause: null, parentSeqs };
}

interface AwaitingChild {
  seq: number;
  id: string;
  queue: string;
  due_at: number;
  attempt: number;
  releases: number;
  dependency_mode: number;
}

/**
 * Resolves the latches of the children of jobs that just became terminal: an `onSuccess` child of
 * a parent that did not succeed is cancelled (and its own children resolved in turn, to any
 * depth); otherwise the child's latch drops by one and it is scheduled — due at the later of its
 * own due time and now — when it reaches zero.
 */
export function resolveChildren(ctx: OpContext, terminal: readonly MovedJob[], now: Instant): void {
  const work = terminal.filter((job) => job.has_children !== 0);
  while (work.length > 0) {
    const parent = work.shift()!;
    const children = ctx.q.get(AWAITING_CHILDREN).all(parent.seq) as AwaitingChild[];
    for (const child of children) {
      if (child.dependency_mode === DEPENDENCY_MODE_CODES.onSuccess && parent.state !== S.succeeded) {
        const cause = terminalCauseText("parentEnded", { parentId: parent.id, parentState: jobStateFromCode(parent.state) });
        const cancelled = moveToTerminal(ctx, child.seq, "cancelled", cause, now, byStore("parentFailed"));
        if (cancelled.has_children !== 0) work.push(cancelled);
        continue;
      }
      const { parents_remaining } = ctx.q.get(DROP_LATCH).get(child.seq) as { parents_remaining: number };
      if (parents_remaining === 0) {
        const dueAt = Math.max(child.due_at, now);
        moveToScheduled(ctx, child.seq, { dueAt, attempt: child.attempt, releases: child.releases }, now, byStore("parentsResolved"));
      }
    }
  }
}

/** A parent became live again (operator requeue): children still waiting for their parents wait for it again. */
export function regateChildren(ctx: OpContext, parentSeq: number): void {
  ctx.q.get(REGATE_CHILDREN).run(parentSeq);
}
