import { type JobFilter, JOB_STATE_CODES } from "@belay/contract";

/** The jobs a filter selects, as SQL: the `FROM` item (aliased `j`) and the conditions on it. */
export interface FilterSql {
  readonly from: string;
  readonly conditions: string[];
}

/**
 * A job filter over `S.jobs j`, pushing its parameters onto `values`. Values within one field
 * are OR-ed (`= ANY`), fields and tag predicates AND-ed. Monitoring reads build their statements
 * per call from these (never prepared: the shapes vary).
 *
 * With `ids`, the rows come from the id index first — at most `bounds.monitorPage` probes — and
 * every other condition only filters them (the subquery's OFFSET 0 keeps the planner from
 * starting at another index whose estimate looks lower). `ids: []` matches nothing.
 */
export function filterSql(S: string, filter: JobFilter, values: unknown[]): FilterSql {
  const conditions: string[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const from =
    filter.ids === undefined ? `${S}.jobs j` : `(SELECT * FROM ${S}.jobs WHERE id = ANY(${param(filter.ids)}::text[]) OFFSET 0) j`;
  if (filter.states !== undefined) conditions.push(`j.state = ANY(${param(filter.states.map((s) => JOB_STATE_CODES[s]))}::int2[])`);
  if (filter.queues !== undefined) conditions.push(`j.queue = ANY(${param(filter.queues)}::text[])`);
  if (filter.jobNames !== undefined) conditions.push(`j.job_name = ANY(${param(filter.jobNames)}::text[])`);
  if (filter.scheduleId !== undefined) conditions.push(`j.schedule_id = ${param(filter.scheduleId)}`);
  if (filter.workflowId !== undefined) conditions.push(`j.workflow_id = ${param(filter.workflowId)}`);
  for (const predicate of filter.tags ?? []) {
    if ("label" in predicate) {
      conditions.push(`EXISTS (SELECT 1 FROM ${S}.job_tags t WHERE t.job_seq = j.seq AND t.key = '' AND t.value = ${param(predicate.label)})`);
    } else if ("value" in predicate) {
      conditions.push(
        `EXISTS (SELECT 1 FROM ${S}.job_tags t WHERE t.job_seq = j.seq AND t.key = ${param(predicate.key)} AND t.value = ${param(predicate.value)})`,
      );
    } else {
      conditions.push(`EXISTS (SELECT 1 FROM ${S}.job_tags t WHERE t.job_seq = j.seq AND t.key = ${param(predicate.key)})`);
    }
  }
  return { from, conditions };
}
