import { DEPENDENCY_MODE_CODES, type Instant, JOB_STATE_CODES, TRANSITION_CAUSE_CODES, jobStateNameSql, terminalCauseSql } from "@belay/contract";
import type { DueQueues, StoreContext } from "../context.js";
import type { Session } from "../session.js";
import { feedCtes, transitionAssignments } from "./jobs.js";

const STATE = JOB_STATE_CODES;

/** A job that just became terminal and has children whose latches it may resolve. */
export interface EndedParent {
  readonly seq: number;
  readonly id: string;
  readonly state: number;
}

// One round of latch resolution: every awaiting child of the given newly terminal parents is
// cancelled when it depends `onSuccess` on a parent that did not succeed (its cause names the
// first such parent), otherwise its latch drops by the number of those parents and it is
// scheduled — due at the later of its own due time and now — when the latch reaches zero. The
// children cancelled here are the parents of the next round. Their transitions record
// `parentFailed` for a cancel and `parentsResolved` for a released latch.
//
// The children are locked first, in seq order, and decided from the rows as locked: when two
// parents of one child end at once, the second waits for the first and counts the latch down from
// what the first left (a decision taken from the statement's snapshot would count from the value
// before the first, and leave the child waiting on ended parents). One lock order for every writer
// (seq) keeps two of them sharing children from deadlocking.
const RESOLVE_CHILDREN = (S: string) => `
WITH p AS (
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::int2[]) AS p(seq, id, state)
),
hits AS (
  SELECT e.child_seq, count(*)::int AS n,
         (array_agg(${terminalCauseSql("parentEnded", { parentId: "p.id", parentState: jobStateNameSql("p.state") })}
                    ORDER BY p.seq) FILTER (WHERE p.state <> ${STATE.succeeded}))[1] AS failed_cause
  FROM ${S}.job_edges e JOIN p ON p.seq = e.parent_seq
  GROUP BY e.child_seq
),
locked AS MATERIALIZED (
  SELECT c.seq, c.dependency_mode, c.parents_remaining FROM ${S}.jobs c
  WHERE c.seq = ANY(ARRAY(SELECT h.child_seq FROM hits h)) AND c.state = ${STATE.awaitingParents}
  ORDER BY c.seq
  FOR NO KEY UPDATE
),
decided AS (
  SELECT h.child_seq, h.n, h.failed_cause,
         CASE WHEN l.dependency_mode = ${DEPENDENCY_MODE_CODES.onSuccess} AND h.failed_cause IS NOT NULL THEN ${STATE.cancelled}
              WHEN l.parents_remaining - h.n <= 0 THEN ${STATE.scheduled} ELSE ${STATE.awaitingParents} END AS next_state
  FROM hits h JOIN locked l ON l.seq = h.child_seq
),
moved AS (
  UPDATE ${S}.jobs c SET
    state = d.next_state,
    parents_remaining = CASE WHEN d.next_state = ${STATE.cancelled} THEN c.parents_remaining ELSE greatest(c.parents_remaining - d.n, 0) END,
    terminal_at = CASE WHEN d.next_state = ${STATE.cancelled} THEN $4::bigint END,
    terminal_cause = CASE WHEN d.next_state = ${STATE.cancelled} THEN d.failed_cause END,
    due_at = CASE WHEN d.next_state = ${STATE.scheduled} THEN greatest(c.due_at, $4::bigint) ELSE c.due_at END,
    ${transitionAssignments(S, {
      row: "c",
      cause: `CASE WHEN d.next_state = ${STATE.cancelled} THEN ${TRANSITION_CAUSE_CODES.parentFailed} ELSE ${TRANSITION_CAUSE_CODES.parentsResolved} END`,
      when: `d.next_state <> ${STATE.awaitingParents}`, history: "$5", cap: "$6",
    })}
  FROM decided d
  WHERE c.seq = d.child_seq AND c.state = ${STATE.awaitingParents}
  RETURNING c.seq, c.id, c.queue, c.state, c.due_at, c.attempt, c.has_children, c.transition_count, c.history
),
changed AS (SELECT * FROM moved WHERE state <> ${STATE.awaitingParents}),
${feedCtes(S, "changed", "$4", "$5", "$6")}
SELECT seq, id, queue, state, due_at, has_children FROM changed ORDER BY seq`;

/**
 * Resolves the latches of the children of `parents`, cascading `onSuccess` cancellations to
 * any depth, one statement per generation, inside the caller's transaction.
 */
export async function resolveChildren(
  session: Session,
  ctx: StoreContext,
  parents: readonly EndedParent[],
  now: Instant,
  due: DueQueues,
): Promise<void> {
  let generation = parents;
  while (generation.length > 0) {
    const rows = await session.query(ctx.sql.get("resolveChildren", RESOLVE_CHILDREN), [
      generation.map((p) => p.seq),
      generation.map((p) => p.id),
      generation.map((p) => p.state),
      now,
      ctx.history,
      ctx.bounds.transitionsPerJob,
    ]);
    await session.step("children resolved");
    const next: EndedParent[] = [];
    for (const row of rows) {
      const state = row["state"] as number;
      due.add(row["queue"] as string, state, row["due_at"] as number);
      if (state === STATE.cancelled && row["has_children"] === true) {
        next.push({ seq: row["seq"] as number, id: row["id"] as string, state });
      }
    }
    generation = next;
  }
}
