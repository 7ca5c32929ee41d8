// What the query-plan tests (explain, promise-explain) share: the plan tree EXPLAIN (FORMAT JSON) returns.

/** A node of an EXPLAIN (FORMAT JSON) plan, with the fields the plan tests read. */
export interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Total Cost"?: number;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  Filter?: string;
  "Shared Hit Blocks"?: number;
  "Shared Read Blocks"?: number;
  Plans?: PlanNode[];
}

/** `plan` and every node below it, depth first. */
export function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}
