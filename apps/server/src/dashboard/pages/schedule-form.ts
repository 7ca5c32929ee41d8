import { type ServerContext, parseJson } from "../../context.js";
import { type View, card, empty } from "../components.js";
import { type Draft, field, formGuards, jsonArea, select, textInput } from "../form-fields.js";
import { html } from "../html.js";
import type { PageResult } from "./page-result.js";

/** The draft of a stored schedule (its payload only for a viewer with viewSensitive). */
export async function scheduleDraft(ctx: ServerContext, view: View, id: string): Promise<Draft | null> {
  const schedule = await ctx.store.getSchedule(id);
  if (schedule === null) return null;
  const payload = parseJson(schedule.payload);
  return {
    id: schedule.id,
    cron: schedule.cron,
    timeZone: schedule.timeZone,
    jobName: schedule.jobName,
    queue: schedule.queue,
    ...(view.can("viewSensitive") ? { payload: payload === null ? "" : JSON.stringify(payload, null, 2) } : {}),
    tags: schedule.tags.map((t) => (t.key === "" ? t.value : `${t.key}=${t.value}`)).join(", "),
    catchUp: schedule.catchUp,
    noOverlap: schedule.noOverlap ? "1" : "",
  };
}

/**
 * The form that creates a schedule (`mode: "new"`) or redefines one (its id fixed; the cursor
 * and skipped ticks are kept). A viewer without viewSensitive cannot see the stored payload: the
 * form then keeps it unless a new one is typed.
 */
export async function scheduleFormPage(ctx: ServerContext, view: View, mode: "new" | "edit", draft: Draft): Promise<PageResult> {
  const title = mode === "new" ? "New schedule" : `Edit schedule ${draft["id"] ?? ""}`;
  const crumbs: [string, string][] = [["Schedules", "/schedules"]];
  if (!view.can("manageSchedules")) {
    return { title, section: "schedules", crumbs, content: card(title, empty("You may not manage schedules", "This form needs the manageSchedules permission.")) };
  }
  const { catalog } = ctx;
  const hiddenPayload = mode === "edit" && !view.can("viewSensitive");
  const jobName = catalog.known
    ? field("Job name", select(draft, "jobName", catalog.names.map((n) => [n, n] as const)), "Each tick enqueues one job of this type.")
    : field("Job name", textInput(draft, "jobName", { required: true, placeholder: "report.build" }), "Each tick enqueues one job of this name.");
  const back = mode === "new" ? "/schedules/new" : `/schedules/${encodeURIComponent(draft["id"] ?? "")}/edit`;
  const form = html`<form class="editor" method="post" action="/actions/schedules/save" data-confirm="${mode === "new" ? "Create this schedule?" : `Redefine schedule ${draft["id"] ?? ""}?`}" data-test="schedule-form">
${formGuards(view, back)}<input type="hidden" name="mode" value="${mode}">
<div class="fields">
${field("Schedule id", textInput(draft, "id", { required: true, placeholder: "nightly-report", readonly: mode === "edit" }), mode === "edit" ? "A schedule's id cannot change." : "Letters, digits and . _ - are safest.")}
${field("Cron", textInput(draft, "cron", { required: true, placeholder: "0 3 * * *" }), "5 fields, or 6 with seconds first.")}
${field("Time zone", textInput(draft, "timeZone", { placeholder: "UTC" }), "IANA name, e.g. Europe/Paris; empty: UTC.")}
${jobName}
${
  hiddenPayload
    ? field("Payload (JSON)", html`<input type="hidden" name="keepPayload" value="1"><div class="locked">The stored payload is kept (seeing it needs viewSensitive).</div>`, null, true)
    : field("Payload (JSON)", jsonArea(draft, "payload", '{"rows": 0}'), "Every minted job gets this payload; empty means null.", true)
}
${field("Queue", textInput(draft, "queue", { placeholder: "the job's default" }))}
${field("Tags", textInput(draft, "tags", { placeholder: "system" }), "Given to every minted job.")}
${field("Missed ticks", select(draft, "catchUp", [["skip", "skip (record them)"], ["coalesce", "coalesce (run one)"]]))}
<label class="field check"><input type="checkbox" name="noOverlap" value="1"${draft["noOverlap"] === "1" ? html` checked` : ""}><span>No overlap: skip a tick while an instance is live</span></label>
</div>
<div class="form-actions"><button class="btn btn-primary" type="submit" data-test="schedule-submit">${mode === "new" ? "Create schedule" : "Save schedule"}</button><a class="btn" href="/schedules">Cancel</a></div>
</form>`;
  return { title, section: "schedules", crumbs, content: card(title, form) };
}
