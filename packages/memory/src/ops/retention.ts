import { type PurgeTerminalRequest, clampToBound, isTerminalState } from "@belay/contract";
import { deleteJob } from "../jobs.js";
import type { JobRow, MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";

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

/** See `JobStore.purgeTerminal`. */
export async function purgeTerminal(state: MemoryState, undo: UndoLog, request: PurgeTerminalRequest): Promise<number> {
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
  return victims.length;
}
