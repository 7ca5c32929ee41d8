import {
  type OutcomeResult, type ReportOutcomesRequest, type Tag, JOB_STATE_CODES, boundRejection, failureDetailText, foldAscii,
  normalizeTags, outcomeCause, outcomeDisposition, utf8ByteLength,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { fromHex, hex } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { type EndedParent, resolveChildren } from "./children.js";
import { type JobRow, type JobWrite, decodeTags, encodeTags, ended, lockJobs, rescheduled, stateOf, writeJobs } from "./jobs.js";

const STATE = JOB_STATE_CODES;

/** The output of succeeded jobs (replacing any) and the tags handlers added, for jobs whose outcome applied. */
export const OUTCOME_EXTRAS = statement(
  "outcomeExtras",
  { outputs: "nvarchar(max)", tags: "nvarchar(max)" },
  (S) => `DELETE o FROM ${S}.job_outputs AS o INNER JOIN OPENJSON(@outputs) WITH (seq bigint '$[0]') AS x ON o.job_seq = x.seq;
INSERT INTO ${S}.job_outputs (job_seq, output) SELECT x.seq, x.output FROM OPENJSON(@outputs) WITH (seq bigint '$[0]', output nvarchar(max) '$[1]') AS x;
INSERT INTO ${S}.job_tags (job_seq, tag_key, tag_value, key_folded, value_folded)
SELECT x.seq, ${fromHex("x.k", COLUMN_BYTES.tagKey)}, ${fromHex("x.v", COLUMN_BYTES.tagValue)}, ${fromHex("x.kf", COLUMN_BYTES.tagKey)}, ${fromHex("x.vf", COLUMN_BYTES.tagValue)}
FROM OPENJSON(@tags) WITH (seq bigint '$[0]', k varchar(${COLUMN_BYTES.tagKey * 2}) '$[1]', v varchar(${COLUMN_BYTES.tagValue * 2}) '$[2]',
  kf varchar(${COLUMN_BYTES.tagKey * 2}) '$[3]', vf varchar(${COLUMN_BYTES.tagValue * 2}) '$[4]') AS x
WHERE NOT EXISTS (SELECT 1 FROM ${S}.job_tags AS t WHERE t.job_seq = x.seq AND t.tag_key = ${fromHex("x.k", COLUMN_BYTES.tagKey)} AND t.tag_value = ${fromHex("x.v", COLUMN_BYTES.tagValue)})`,
);

const tagIdentity = (t: Tag) => `${t.key}\u0000${t.value}`;

/**
 * See `JobStore.reportOutcomes`: one transaction. Every named job is locked first; each report is
 * then fenced on the locked row (leased by that worker, at that attempt, lease alive at now) and
 * decided by the contract's rule (`outcomeDisposition`), in input order (a later report about the
 * same job sees the earlier one's effect); the decided rows, their transitions, outputs and added
 * tags are written together, and the children of jobs that ended are resolved before the commit.
 */
export async function reportOutcomes(ctx: StoreContext, request: ReportOutcomesRequest): Promise<OutcomeResult[]> {
  const { reports, now } = request;
  if (reports.length === 0) return [];
  return ctx.executor.transaction("reportOutcomes", async (session) => {
    const rows = await lockJobs(session, reports.map((r) => r.jobId));
    const results: OutcomeResult[] = [];
    const writes = new Map<number, JobWrite>();
    const outputs = new Map<number, string>();
    const addedTags: unknown[][] = [];
    const endedParents: EndedParent[] = [];
    for (const report of reports) {
      const { jobId, attempt, outcome } = report;
      const row = rows.get(jobId);
      const fenced =
        row !== undefined && row.state === STATE.leased && row.leaseOwner === report.workerId && row.attempt === attempt && row.leaseExpiresAt !== null && row.leaseExpiresAt > now;
      if (!fenced) {
        results.push({ jobId, attempt, status: "stale" });
        continue;
      }
      if (outcome.type === "succeeded" && outcome.output != null) {
        const bytes = utf8ByteLength(outcome.output);
        if (bytes > ctx.bounds.outputBytes) {
          results.push({ jobId, attempt, status: "rejected", rejection: boundRejection("BELAY_OUTPUT_TOO_LARGE", "output", ctx.bounds.outputBytes, bytes) });
          continue;
        }
      }
      const normalized = normalizeTags(report.addTags ?? [], "addTags", ctx.bounds);
      if (!normalized.ok) {
        results.push({ jobId, attempt, status: "rejected", rejection: normalized.rejection });
        continue;
      }
      const current = decodeTags(row.tags);
      const known = new Set(current.map(tagIdentity));
      const fresh = normalized.tags.filter((t) => !known.has(tagIdentity(t)));
      const merged = [...current, ...fresh];
      if (merged.length > ctx.bounds.tagsPerJob) {
        results.push({ jobId, attempt, status: "rejected", rejection: boundRejection("BELAY_TOO_MANY_TAGS", "addTags", ctx.bounds.tagsPerJob, merged.length) });
        continue;
      }
      const disposition = outcomeDisposition({ attempt: row.attempt, releases: row.releases, cancelRequestedBy: row.cancelRequestedBy }, outcome);
      const base: JobRow = { ...row, tags: fresh.length > 0 ? encodeTags(merged) : row.tags };
      const next = disposition.state === "scheduled" ? rescheduled(base, disposition.dueAt) : ended(base, STATE[disposition.state], disposition.terminalCause, now);
      const detail =
        outcome.type === "failed" && outcome.failureDetail != null ? failureDetailText(outcome.failureDetail, ctx.bounds.failureDetailBytes) : null;
      writes.set(row.seq, { row: next, transition: { cause: outcomeCause(outcome.type, disposition.state), workerId: report.workerId, detail } });
      rows.set(jobId, next);
      if (outcome.type === "succeeded" && outcome.output != null) outputs.set(row.seq, outcome.output);
      for (const tag of fresh) addedTags.push([row.seq, hex(tag.key), hex(tag.value), hex(foldAscii(tag.key)), hex(foldAscii(tag.value))]);
      if (next.state >= STATE.succeeded && row.hasChildren) endedParents.push({ seq: row.seq, id: row.id, state: next.state });
      results.push({ jobId, attempt, status: "applied", state: stateOf(next.state) });
    }
    // One write per job: the last decision about it (each decision started from the one before).
    await writeJobs(session, ctx, [...writes.values()], now);
    if (outputs.size > 0 || addedTags.length > 0) {
      await session.query(OUTCOME_EXTRAS, { outputs: JSON.stringify([...outputs.entries()]), tags: JSON.stringify(addedTags) });
    }
    await session.step("outcomes applied");
    await resolveChildren(session, ctx, endedParents, now);
    return results;
  });
}
