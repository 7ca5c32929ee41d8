import { type JobFilter, JOB_STATE_CODES } from "@belay/contract";
import { hex } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { ID_HEX, idOf } from "./jobs.js";

/**
 * The parameters of a job filter: each field as JSON (`NULL`: the field does not narrow). One
 * fixed text serves every filter (see {@link FILTER_SQL}): monitoring reads, off the hot path,
 * planned once for every shape of filter.
 */
export const FILTER_PARAMS = {
  fIds: "nvarchar(max)",
  fStates: "nvarchar(max)",
  fQueues: "nvarchar(max)",
  fNames: "nvarchar(max)",
  fSchedule: `varbinary(${COLUMN_BYTES.id})`,
  fWorkflow: `varbinary(${COLUMN_BYTES.id})`,
  fTags: "nvarchar(max)",
} as const;

/**
 * The conditions of a job filter over `S.jobs j`, AND-ed: values within one field are OR-ed
 * (`IN`), tag predicates AND-ed — a label is the empty key with its value; a key alone is any
 * value under it. `ids: []` matches nothing.
 */
export const FILTER_SQL = (S: string) => `(@fIds IS NULL OR j.id IN (SELECT ${idOf("x.value")} FROM OPENJSON(@fIds) AS x))
  AND (@fStates IS NULL OR j.state IN (SELECT CAST(x.value AS tinyint) FROM OPENJSON(@fStates) AS x))
  AND (@fQueues IS NULL OR j.queue IN (SELECT ${idOf("x.value")} FROM OPENJSON(@fQueues) AS x))
  AND (@fNames IS NULL OR j.job_name IN (SELECT ${idOf("x.value")} FROM OPENJSON(@fNames) AS x))
  AND (@fSchedule IS NULL OR j.schedule_id = @fSchedule)
  AND (@fWorkflow IS NULL OR j.workflow_id = @fWorkflow)
  AND NOT EXISTS (
    SELECT 1 FROM OPENJSON(@fTags) WITH (k ${ID_HEX} '$[0]', v ${ID_HEX} '$[1]', m tinyint '$[2]') AS p
    WHERE NOT EXISTS (
      SELECT 1 FROM ${S}.job_tags AS t WHERE t.job_seq = j.seq AND t.tag_key = ${idOf("p.k")} AND (p.m = 0 OR t.tag_value = ${idOf("p.v")})))`;

/** Text longer than a key column holds can name nothing: it is kept out of the filter (as "matches nothing"). */
const fits = (text: string) => Buffer.byteLength(text, "utf8") <= COLUMN_BYTES.id;

/** The values of {@link FILTER_PARAMS} for `filter`, or `null` when it can match nothing. */
export function filterValues(filter: JobFilter): Record<keyof typeof FILTER_PARAMS, unknown> | null {
  // A schedule or workflow id no key column can hold names nothing: the filter matches no job.
  if ((filter.scheduleId !== undefined && !fits(filter.scheduleId)) || (filter.workflowId !== undefined && !fits(filter.workflowId))) return null;
  const list = (texts: readonly string[] | undefined) => (texts === undefined ? null : JSON.stringify(texts.filter(fits).map(hex)));
  const single = (text: string | undefined) => (text === undefined ? null : Buffer.from(text, "utf8"));
  const tags = (filter.tags ?? []).map((p) => ("label" in p ? [hex(""), hex(p.label), 1] : "value" in p ? [hex(p.key), hex(p.value), 1] : [hex(p.key), null, 0]));
  return {
    fIds: list(filter.ids),
    fStates: filter.states === undefined ? null : JSON.stringify(filter.states.map((s) => JOB_STATE_CODES[s])),
    fQueues: list(filter.queues),
    fNames: list(filter.jobNames),
    fSchedule: single(filter.scheduleId),
    fWorkflow: single(filter.workflowId),
    fTags: tags.length === 0 ? null : JSON.stringify(tags),
  };
}
