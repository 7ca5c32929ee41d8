import type { JobSummary } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { select } from "./form-fields.js";
import { layoutWorkflow, workflowGraph } from "./workflow-graph.js";

let seq = 0;
const member = (id: string, parentIds: string[] = [], state: JobSummary["state"] = "awaitingParents"): JobSummary =>
  ({ id, seq: ++seq, jobName: `step.${id}`, queue: "q", state, parentIds, terminalAt: null, tags: [] }) as unknown as JobSummary;

describe("workflow layout", () => {
  it("puts each member one column right of its deepest parent", () => {
    // a → b → d, a → c → d, a → d, and e alone.
    const layout = layoutWorkflow([member("a", [], "scheduled"), member("b", ["a"]), member("c", ["a"]), member("d", ["b", "c", "a"]), member("e", [], "scheduled")]);
    const x = Object.fromEntries(layout.nodes.map((n) => [n.job.id, n.x]));
    expect(x["a"]).toBe(x["e"]);
    expect(x["b"]).toBe(x["c"]);
    expect(x["a"]!).toBeLessThan(x["b"]!);
    expect(x["b"]!).toBeLessThan(x["d"]!);
    const ys = layout.nodes.map((n) => `${n.x},${n.y}`);
    expect(new Set(ys).size).toBe(ys.length);
    for (const n of layout.nodes) {
      expect(n.x).toBeGreaterThanOrEqual(0);
      expect(n.y).toBeGreaterThanOrEqual(0);
      expect(n.x).toBeLessThan(layout.width);
      expect(n.y).toBeLessThan(layout.height);
    }
  });

  it("ignores parents outside the members and survives a cycle a store should never hold", () => {
    const layout = layoutWorkflow([member("x", ["gone"]), member("p", ["q"]), member("q", ["p"])]);
    expect(layout.nodes).toHaveLength(3);
  });

  it("draws one link per member and one edge per parent, escaping what jobs carry", () => {
    const svg = workflowGraph([member("a", [], "succeeded"), { ...member("<b>", ["a"]), jobName: "<img src=x>" }]).value;
    expect(svg.match(/data-test="wf-node"/g)).toHaveLength(2);
    expect(svg.match(/data-test="wf-edge"/g)).toHaveLength(1);
    expect(svg).toContain('href="/jobs/%3Cb%3E"');
    expect(svg).not.toContain("<img");
    expect(svg).toContain("&lt;img src=x&gt;");
  });
});

describe("form select", () => {
  it("offers a draft value it does not know, marked, rather than silently picking another", () => {
    const html = select({ jobName: "legacy.export" }, "jobName", [["a", "a"]]).value;
    expect(html).toContain('<option value="legacy.export" selected>legacy.export (unknown here)</option>');
    expect(select({ jobName: "a" }, "jobName", [["a", "a"]]).value).not.toContain("unknown here");
  });
});
