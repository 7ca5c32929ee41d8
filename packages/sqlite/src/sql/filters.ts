import { type JobFilter, JOB_STATE_CODES } from "@belay/contract";

/** A `JobFilter` as SQL conditions on the jobs table aliased `j`, with their parameters. */
export interface FilterSql {
  readonly conditions: readonly string[];
  readonly params: readonly unknown[];
  /** Names the SQL text (not the parameters), to cache one prepared statement per shape. */
  readonly shape: string;
  /** The filter names its jobs (`ids`): the read starts from them, by the unique index on id. */
  readonly byIds: boolean;
}

/**
 * Builds the conditions of a filter. States are spelled as literals (they are few and fixed);
 * lists of names travel as one JSON parameter; each tag predicate is an `EXISTS` on the tags table.
 * Every field narrows (AND); a list matches any of its entries; an empty list matches nothing.
 */
export function filterSql(tags: string, filter: JobFilter): FilterSql {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const shape: string[] = [];
  const byIds = filter.ids !== undefined;
  // With ids (at most a page of them) the read starts from the unique index on id; a unary `+`
  // keeps the planner from starting at a schedule's or workflow's index instead, whose jobs are unbounded.
  const j = byIds ? "+j" : "j";
  if (filter.ids !== undefined) {
    conditions.push(filter.ids.length === 0 ? "0" : "j.id IN (SELECT value FROM json_each(?))");
    if (filter.ids.length > 0) params.push(JSON.stringify(filter.ids));
    shape.push(filter.ids.length === 0 ? "i0" : "i");
  }
  if (filter.states !== undefined) {
    const codes = [...new Set(filter.states.map((s) => JOB_STATE_CODES[s]))].sort();
    conditions.push(codes.length === 0 ? "0" : `${j}.state IN (${codes.join(", ")})`);
    shape.push(`s${codes.join("")}`);
  }
  if (filter.queues !== undefined) {
    conditions.push(`${j}.queue IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filter.queues));
    shape.push("q");
  }
  if (filter.jobNames !== undefined) {
    conditions.push(`${j}.job_name IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filter.jobNames));
    shape.push("n");
  }
  if (filter.scheduleId !== undefined) {
    conditions.push(`${j}.schedule_id = ?`);
    params.push(filter.scheduleId);
    shape.push("c");
  }
  if (filter.workflowId !== undefined) {
    conditions.push(`${j}.workflow_id = ?`);
    params.push(filter.workflowId);
    shape.push("w");
  }
  for (const predicate of filter.tags ?? []) {
    const has = (extra: string) => `EXISTS (SELECT 1 FROM ${tags} g WHERE g.job_seq = j.seq AND ${extra})`;
    if ("label" in predicate) {
      conditions.push(has("g.key = '' AND g.value = ?"));
      params.push(predicate.label);
      shape.push("tl");
    } else if ("value" in predicate) {
      conditions.push(has("g.key = ? AND g.value = ?"));
      params.push(predicate.key, predicate.value);
      shape.push("tv");
    } else {
      conditions.push(has("g.key = ?"));
      params.push(predicate.key);
      shape.push("tk");
    }
  }
  return { conditions, params, shape: shape.join(","), byIds };
}
