import type { Context, Hono } from "hono";
import type { ServerContext } from "../context.js";
import { HttpError } from "../http/errors.js";
import { enqueueJobs } from "../operations/enqueue.js";
import { upsertSchedule } from "../operations/schedules.js";
import { type Form, flashOfError, gateAction, text } from "./actions.js";
import type { View } from "./components.js";
import { type Draft, tagsOf } from "./form-fields.js";
import { enqueuePage } from "./pages/enqueue.js";
import type { PageResult } from "./pages/page-result.js";
import { scheduleFormPage } from "./pages/schedule-form.js";
import { workflowMembers } from "./pages/workflow-detail.js";
import type { DashboardEnv } from "./session-middleware.js";

/** Renders a dashboard page (the frame, the flash) around what `build` makes. */
export type RenderPage = (c: Context<DashboardEnv>, build: (view: View) => Promise<PageResult>) => Promise<Response>;

/** The form's text fields (files and repeats dropped), to show again beside an error. */
function draftOf(form: Form): Record<string, string> {
  const draft: Record<string, string> = {};
  for (const [key, value] of Object.entries(form)) if (typeof value === "string" && !key.startsWith("_")) draft[key] = value;
  return draft;
}

/** The JSON a payload field holds (empty: `null`); throws a 400 naming `payload`. */
function payloadOf(textValue: string | undefined): unknown {
  const trimmed = (textValue ?? "").trim();
  if (trimmed === "") return null;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch (error) {
    throw new HttpError(400, { code: "BELAY_INVALID_INPUT", field: "payload", message: `is not JSON: ${(error as Error).message}` });
  }
}

/** An error's message naming the form field at fault (`payload.userId: …`). */
function messageOf(error: HttpError, prefix = ""): string {
  const field = error.body.error.field;
  const name = field === null ? null : field.startsWith(prefix) ? field.slice(prefix.length) : field;
  return name === null ? error.body.error.message : `${name}: ${error.body.error.message}`;
}

const optional = (value: string | undefined) => (value === undefined || value.trim() === "" ? undefined : value.trim());

/**
 * The editing actions: enqueue a job (`enqueue`), create or redefine a schedule
 * (`manageSchedules`), cancel a workflow (`cancel`). Each passes {@link gateAction}. A refused
 * form is shown again with what was typed and the error naming the field (422), nothing written.
 *
 * Each is audited by the store with the signed-in actor, in the same transaction as its effect:
 * `enqueue` per created job, `upsertSchedule`, and `cancel` for each member a workflow cancel stops.
 */
export function registerEditingActions(app: Hono<DashboardEnv>, ctx: ServerContext, render: RenderPage): void {
  const { store, clock, catalog } = ctx;
  const refused = (c: Context<DashboardEnv>, message: string, build: (view: View) => Promise<PageResult>) => {
    c.get("session").flash = { kind: "error", message };
    return render(c, async (view) => ({ ...(await build(view)), status: 422 }));
  };

  app.post("/actions/enqueue", async (c) => {
    const gate = await gateAction(c, ctx, "enqueue");
    if (gate instanceof Response) return gate;
    const draft = draftOf(gate.form);
    const session = c.get("session");
    try {
      const runAt = optional(draft["runAt"]);
      const id = optional(draft["id"]);
      const queue = optional(draft["queue"]);
      const [receipt] = await enqueueJobs(
        store,
        catalog,
        [{ jobName: (draft["jobName"] ?? "").trim(), payload: payloadOf(draft["payload"]), tags: tagsOf(draft["tags"]), ...(runAt === undefined ? {} : { runAt }), ...(id === undefined ? {} : { id }), ...(queue === undefined ? {} : { queue }) }],
        clock.now(),
        gate.actor,
      );
      if (receipt!.status === "duplicate") {
        session.flash = { kind: "info", message: `A job with id ${receipt!.id} already exists; nothing was enqueued.` };
      } else {
        const job = await store.getJob(receipt!.id);
        session.flash = { kind: "success", message: `Job ${receipt!.id} enqueued (${job?.jobName ?? draft["jobName"]} in queue ${job?.queue ?? "?"}).` };
      }
      return c.redirect(`/jobs/${encodeURIComponent(receipt!.id)}`, 303);
    } catch (error) {
      if (error instanceof HttpError && error.status < 500) return refused(c, `Nothing was enqueued. ${messageOf(error, "jobs[0].")}`, (view) => enqueuePage(ctx, view, draft));
      const flash = flashOfError(error);
      if (flash === null) throw error;
      return refused(c, flash.message, (view) => enqueuePage(ctx, view, draft));
    }
  });

  app.post("/actions/schedules/save", async (c) => {
    const gate = await gateAction(c, ctx, "manageSchedules");
    if (gate instanceof Response) return gate;
    const draft: Draft = draftOf(gate.form);
    const mode = draft["mode"] === "edit" ? "edit" : "new";
    const id = (draft["id"] ?? "").trim();
    const again = (message: string) => refused(c, message, (view) => scheduleFormPage(ctx, view, mode, { ...draft, id }));
    try {
      if (id === "") throw new HttpError(400, { code: "BELAY_INVALID_INPUT", field: "id", message: "must be a non-empty string" });
      const existing = await store.getSchedule(id);
      if (mode === "new" && existing !== null) return again(`Nothing was saved. id: a schedule ${id} exists already; edit it instead.`);
      if (mode === "edit" && existing === null) return again(`Nothing was saved. id: there is no schedule ${id} (it may have been removed).`);
      const payload = text(gate.form, "keepPayload") === "1" && existing !== null ? JSON.parse(existing.payload) : payloadOf(draft["payload"]);
      const queue = optional(draft["queue"]);
      const timeZone = optional(draft["timeZone"]);
      const result = await upsertSchedule(
        store,
        catalog,
        id,
        {
          cron: (draft["cron"] ?? "").trim(),
          jobName: (draft["jobName"] ?? "").trim(),
          payload,
          tags: tagsOf(draft["tags"]),
          catchUp: draft["catchUp"] === "coalesce" ? "coalesce" : "skip",
          noOverlap: draft["noOverlap"] === "1",
          ...(queue === undefined ? {} : { queue }),
          ...(timeZone === undefined ? {} : { timeZone }),
        },
        clock.now(),
        gate.actor,
      );
      c.get("session").flash = { kind: "success", message: result.status === "created" ? `Schedule ${id} created.` : `Schedule ${id} redefined (its cursor is kept).` };
      return c.redirect("/schedules", 303);
    } catch (error) {
      if (error instanceof HttpError && error.status < 500) return again(`Nothing was saved. ${messageOf(error)}`);
      const flash = flashOfError(error);
      if (flash === null) throw error;
      return again(flash.message);
    }
  });

  app.post("/actions/workflows/:id/cancel", async (c) => {
    const gate = await gateAction(c, ctx, "cancel");
    if (gate instanceof Response) return gate;
    const session = c.get("session");
    const id = c.req.param("id");
    try {
      if ((await store.getWorkflow(id)) === null) {
        session.flash = { kind: "error", message: `There is no workflow ${id}.` };
        return c.redirect(gate.back, 303);
      }
      // Parents first (enqueue order): cancelling one cascades to its onSuccess children, which
      // then answer notCancellable and are counted as already ended.
      const live = await workflowMembers(store, id, ["scheduled", "awaitingParents", "leased"]);
      let cancelled = 0;
      let withParent = 0;
      let requested = 0;
      let ended = 0;
      for (const member of live) {
        const result = await store.cancelJob({ jobId: member.id, actor: gate.actor, now: clock.now() });
        if (result.status === "cancelled") cancelled++;
        else if (result.status === "cancelRequested") requested++;
        else if (result.status === "notCancellable" && result.state === "cancelled") withParent++;
        else ended++;
      }
      const parts = [
        `${cancelled + withParent} cancelled${withParent > 0 ? ` (${withParent} with a parent)` : ""}`,
        `${requested} cancellation requested (running)`,
        ...(ended > 0 ? [`${ended} ended meanwhile`] : []),
      ];
      session.flash =
        live.length === 0
          ? { kind: "info", message: `Workflow ${id} has no unfinished member; nothing changed.` }
          : { kind: "success", message: `Workflow ${id}: ${parts.join(", ")}.` };
    } catch (error) {
      const flash = flashOfError(error);
      if (flash === null) throw error;
      session.flash = flash;
    }
    return c.redirect(gate.back, 303);
  });
}
