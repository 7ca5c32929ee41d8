import { type PurgeTerminalRequest, type PurgeTerminalResult, clampToBound, isTerminalState } from "@belay/contract";
import type { JobRow, MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { countJob, placementOf } from "./jobs.js";
import { countTag } from "./tags.js";

/**
 * When a job may be purged: its own terminal time, or — for a workflow member — the workflow's
 * drain instant (its last member's terminal time), `null` while some member is live.
 */
function purgeClock(state: MemoryState, row: JobRow): number | null {
  if (row.workflowId === null) return row.terminalAt;
  const workflow = state.workflows.get(row.workflowId);
  if (workflow === undefined) return row.terminalAt;
  let drained = 0;
  for (const id of workflow.memberIds) {
    const member = state.jobs.get(id);
    if (member === undefined) continue;
    if (!isTerminalState(member.state)) return null;
    drained = Math.max(drained, member.terminalAt!);
  }
  return drained;
}

/** Deletes a terminal job with its tags, transitions and edges. */
function deleteJob(state: MemoryState, undo: UndoLog, row: JobRow): void {
  const placed = placementOf(state, row);
  if (placed) undo.indexRemove(placed.index, placed.entry);
  undo.indexRemove(state.bySeq, { at: 0, seq: row.seq, id: row.id });
  countJob(state, undo, row, -1);
  for (const tag of row.tags) countTag(state, undo, tag, -1);
  for (const entry of row.transitions) undo.patch(entry, { dropped: true });
  for (const parentId of row.parentIds) {
    const parent = state.jobs.get(parentId);
    if (parent) undo.patch(parent, { children: parent.children.filter((c) => c !== row.id) });
  }
  undo.mapDelete(state.jobs, row.id);
}

/** See `JobStore.purgeTerminal`. A workflow goes with its last member. */
export async function purgeTerminal(state: MemoryState, undo: UndoLog, request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
  const max = clampToBound(request.max, state.bounds.purgeBatch);
  const index = state.terminal.get(request.retentionClass)!;
  const victims: JobRow[] = [];
  for (const entry of index.ascending()) {
    if (entry.at >= request.before || victims.length === max) break;
    const row = state.jobs.get(entry.id)!;
    const clock = purgeClock(state, row);
    if (clock !== null && clock < request.before) victims.push(row);
  }
  for (const row of victims) {
    deleteJob(state, undo, row);
    await undo.step(`job ${row.id} purged`);
    if (row.workflowId !== null) {
      const workflow = state.workflows.get(row.workflowId);
      if (workflow && workflow.memberIds.every((id) => !state.jobs.has(id))) {
        undo.mapDelete(state.workflows, workflow.id);
        undo.indexRemove(state.workflowsBySeq, { at: 0, seq: workflow.seq, id: workflow.id });
      }
    }
  }
  return { purged: victims.length };
}

/**
 * Drops log entries no reader can reach any more (capped away or purged). Run after a purge has
 * committed, outside its undo log: it changes no answer, only what the log holds.
 */
export function compactLog(state: MemoryState): void {
  const { log } = state;
  const kept = log.filter((e) => !e.dropped);
  if (kept.length === log.length) return;
  log.length = 0;
  for (const entry of kept) log.push(entry);
}
