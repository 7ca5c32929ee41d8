import { type JobFilter, JOB_STATE_CODES } from "@belay/contract";

/**
 * The SQL conditions of a job filter over `S.jobs j`, pushing their parameters onto `values`.
 * Values within one field are OR-ed (`= ANY`), fields and tag predicates AND-ed. Monitoring
 * reads build their statements per call from these (never prepared: the shapes vary).
 */
export function filterConditions(S: string, filter: JobFilter, values: unknown[]): string[] {
  const conditions: string[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
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
  return conditions;
}
