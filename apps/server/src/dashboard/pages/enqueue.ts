import type { ServerContext } from "../../context.js";
import { type View, card, empty } from "../components.js";
import { type Draft, field, formGuards, jsonArea, select, textInput } from "../form-fields.js";
import { html } from "../html.js";
import type { PageResult } from "./page-result.js";

/**
 * The enqueue form: a job name the server knows (from its jobs module; any name when it knows
 * none), the payload as JSON (validated against the job's schema on submit), and optionally the
 * queue, a due time, tags and an idempotent job id.
 */
export async function enqueuePage(ctx: ServerContext, view: View, draft: Draft = {}): Promise<PageResult> {
  const crumbs: [string, string][] = [["Jobs", "/jobs"]];
  if (!view.can("enqueue")) {
    return {
      title: "Enqueue a job",
      section: "jobs",
      crumbs,
      content: card("Enqueue a job", empty("You may not enqueue jobs", "This form needs the enqueue permission. Sign in with a token that has it.")),
    };
  }
  const { catalog } = ctx;
  const names = catalog.names;
  const jobName = catalog.known
    ? field(
        "Job name",
        select(draft, "jobName", names.map((n) => [n, `${n} (queue ${catalog.resolve(n)?.queue ?? "default"})`] as const)),
        "The job types of the server's jobs module; the payload is checked against the chosen one's schema.",
      )
    : field("Job name", textInput(draft, "jobName", { required: true, placeholder: "email.send" }), "This server knows no job definitions: any job name is enqueued as given, the payload unchecked.");
  const form = html`<form class="editor" method="post" action="/actions/enqueue" data-confirm="Enqueue this job?" data-test="enqueue-form">
${formGuards(view, "/enqueue")}
<div class="fields">
${jobName}
${field("Payload (JSON)", jsonArea(draft, "payload", '{"userId": "u1"}'), "Empty means null.", true)}
${field("Queue", textInput(draft, "queue", { placeholder: "the job's default" }), "Empty: the job definition's queue (or default).")}
${field("Run at", textInput(draft, "runAt", { placeholder: "2030-01-01T09:00:00Z" }), "ISO 8601 with a zone; empty: now.")}
${field("Tags", textInput(draft, "tags", { placeholder: "urgent, tenant=acme" }), "Labels or key=value, comma-separated.")}
${field("Job id", textInput(draft, "id", { placeholder: "generated" }), "Optional: a repeat with the same id enqueues nothing.")}
</div>
<div class="form-actions"><button class="btn btn-primary" type="submit" data-test="enqueue-submit">Enqueue</button><a class="btn" href="/jobs">Cancel</a></div>
</form>`;
  return { title: "Enqueue a job", section: "jobs", crumbs, content: card("Enqueue a job", form) };
}
