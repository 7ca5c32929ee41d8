import { DEPENDENCY_MODE_CODES, type Instant, JOB_STATE_CODES, jobStateFromCode, terminalCauseText } from "@belay/contract";
import type { StoreContext } from "../context.js";
import type { Session } from "../session.js";
import { type JobWrite, ended, lockAwaitingChildren, writeJobs } from "./jobs.js";

const STATE = JOB_STATE_CODES;

/** A job that just became terminal and has children whose latches it may resolve. */
export interface EndedParent {
  readonly seq: number;
  readonly id: string;
  readonly state: number;
}

/**
 * Resolves the latches of the children of `parents`, one generation per round, inside the
 * caller's transaction: a child depending `onSuccess` on a parent that did not succeed is
 * cancelled (its cause names the first such parent, by seq), otherwise its latch drops by the
 * number of those parents and it is scheduled — due at the later of its own due time and now —
 * when the latch reaches zero. Cancelled children with children of their own are the next round.
 */
export async function resolveChildren(session: Session, ctx: StoreContext, parents: readonly EndedParent[], now: Instant): Promise<void> {
  let generation = parents;
  while (generation.length > 0) {
    const bySeq = new Map(generation.map((p) => [p.seq, p]));
    const found = await lockAwaitingChildren(session, [...bySeq.keys()]);
    const children = new Map<number, { child: (typeof found)[number]["child"]; parents: EndedParent[] }>();
    for (const { parentSeq, child } of found) {
      const entry = children.get(child.seq) ?? { child, parents: [] };
      entry.parents.push(bySeq.get(parentSeq)!);
      children.set(child.seq, entry);
    }
    const writes: JobWrite[] = [];
    const next: EndedParent[] = [];
    for (const { child, parents: hits } of children.values()) {
      const failed = hits.filter((p) => p.state !== STATE.succeeded).sort((a, b) => a.seq - b.seq)[0];
      if (child.dependencyMode === DEPENDENCY_MODE_CODES.onSuccess && failed !== undefined) {
        const cause = terminalCauseText("parentEnded", { parentId: failed.id, parentState: jobStateFromCode(failed.state) });
        writes.push({ row: ended(child, STATE.cancelled, cause, now), transition: { cause: "parentFailed" } });
        if (child.hasChildren) next.push({ seq: child.seq, id: child.id, state: STATE.cancelled });
        continue;
      }
      const remaining = Math.max(child.parentsRemaining - hits.length, 0);
      if (remaining > 0) {
        writes.push({ row: { ...child, parentsRemaining: remaining }, transition: null });
      } else {
        const row = { ...child, parentsRemaining: 0, state: STATE.scheduled, dueAt: Math.max(child.dueAt, now), transitionCount: child.transitionCount + 1 };
        writes.push({ row, transition: { cause: "parentsResolved" } });
      }
    }
    await writeJobs(session, ctx, writes, now);
    if (writes.length > 0) await session.step("children resolved");
    generation = next;
  }
}
