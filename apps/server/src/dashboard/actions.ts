import { isBelayError } from "@belay/contract";
import { createJobId } from "@belay/core";
import type { Context, Hono } from "hono";
import type { Permission } from "../auth/permissions.js";
import type { Flash } from "../auth/sessions.js";
import { knownQueue } from "../api/queue-routes.js";
import type { ServerContext } from "../context.js";
import { HttpError } from "../http/errors.js";
import { STATE_LABELS } from "./format.js";
import { safeBack } from "./query.js";
import { refusal } from "./request-guards.js";
import type { DashboardEnv } from "./session-middleware.js";

/** A parsed dashboard form. */
export type Form = Record<string, string | File | (string | File)[]>;

/** A form field's text, `null` when absent or not text. */
export function text(form: Form, key: string): string | null {
  const value = form[key];
  return typeof value === "string" ? value : null;
}

/** What an action may go on with: the form, the actor it is performed as, the page to come back to. */
export interface ActionGate {
  readonly form: Form;
  readonly actor: string;
  readonly back: string;
}

/**
 * The checks every operator action passes first: a readable form, the session's CSRF token
 * (403), the permission (403), and the browser's confirmation (else a 303 back with a flash,
 * nothing changed). Returns the answer to send when one fails.
 */
export async function gateAction(c: Context<DashboardEnv>, ctx: ServerContext, permission: Permission): Promise<ActionGate | Response> {
  const session = c.get("session");
  let form: Form;
  try {
    form = (await c.req.parseBody()) as Form;
  } catch {
    return refusal(c, 400, "The form could not be read.");
  }
  if (text(form, "_csrf") !== session.csrf) return refusal(c, 403, "The form's security token does not match this session. Reload the page and try again.");
  const access = await ctx.access.check(c.req.raw, permission, session.secret);
  if (!access.allowed) return refusal(c, 403, `This action needs the ${permission} permission${session.actor ? "" : "; sign in first"}.`);
  const back = safeBack(text(form, "_back"));
  if (text(form, "_confirmed") !== "1") {
    session.flash = { kind: "error", message: "The action was not confirmed, so nothing changed." };
    return c.redirect(back, 303);
  }
  return { form, actor: access.actor, back };
}

/** The flash for an error an action's store call raised, or `null` when it is not the user's to see (rethrow it). */
export function flashOfError(error: unknown): Flash | null {
  if (isBelayError(error, "BELAY_TRANSIENT_STORE")) return { kind: "error", message: "The store is busy; nothing changed. Try again in a moment." };
  if (error instanceof HttpError && error.status < 500) return { kind: "error", message: error.body.error.message };
  if (isBelayError(error) && (error.code === "BELAY_INVALID_INPUT" || error.code.endsWith("_TOO_LONG"))) return { kind: "error", message: error.message };
  return null;
}

function param(c: Context<DashboardEnv>, name: string): string {
  return c.req.param(name) ?? "";
}

/**
 * Registers the operator actions: HTML form POSTs (same-origin and bounded, by `guardPosts`)
 * that carry the session's CSRF token and the browser confirmation, are checked against the
 * permission, performed with the signed-in actor (audited by the store), and answered with a
 * 303 back (a same-origin path only, by `safeBack`) and a flash message.
 */
export function registerActions(app: Hono<DashboardEnv>, ctx: ServerContext): void {
  const { store, clock } = ctx;

  const action = (
    path: string,
    permission: Permission,
    perform: (c: Context<DashboardEnv>, actor: string, form: Form) => Promise<Flash>,
  ) => {
    app.post(path, async (c) => {
      const gate = await gateAction(c, ctx, permission);
      if (gate instanceof Response) return gate;
      const session = c.get("session");
      try {
        session.flash = await perform(c, gate.actor, gate.form);
      } catch (error) {
        const flash = flashOfError(error);
        if (flash === null) throw error;
        session.flash = flash;
      }
      return c.redirect(gate.back, 303);
    });
  };

  action("/actions/jobs/:id/cancel", "cancel", async (c, actor) => {
    const id = param(c, "id");
    const result = await store.cancelJob({ jobId: id, actor, now: clock.now() });
    switch (result.status) {
      case "cancelled":
        return { kind: "success", message: `Job ${id} cancelled.` };
      case "cancelRequested":
        return { kind: "success", message: `Cancellation requested: the running handler of ${id} is told to stop.` };
      case "notCancellable":
        return { kind: "error", message: `Job ${id} is ${STATE_LABELS[result.state].toLowerCase()}; it cannot be cancelled.` };
      case "notFound":
        return { kind: "error", message: `There is no job ${id}.` };
    }
  });

  action("/actions/jobs/:id/requeue", "requeue", async (c, actor) => {
    const id = param(c, "id");
    const result = await store.requeueJob({ jobId: id, actor, now: clock.now() });
    switch (result.status) {
      case "requeued":
        return { kind: "success", message: `Job ${id} requeued: due now, attempts reset.` };
      case "notRequeueable":
        return { kind: "error", message: `Job ${id} is ${STATE_LABELS[result.state].toLowerCase()}; only dead-lettered or quarantined jobs can be requeued.` };
      case "notFound":
        return { kind: "error", message: `There is no job ${id}.` };
    }
  });

  action("/actions/queues/:queue/pause", "pauseQueue", async (c, actor) => {
    const queue = param(c, "queue");
    await knownQueue(ctx, queue);
    await store.pauseQueue({ queue, actor, now: clock.now() });
    return { kind: "success", message: `Queue ${queue} paused: running jobs finish, no new ones start.` };
  });

  action("/actions/queues/:queue/resume", "pauseQueue", async (c, actor) => {
    const queue = param(c, "queue");
    await knownQueue(ctx, queue);
    await store.resumeQueue({ queue, actor, now: clock.now() });
    return { kind: "success", message: `Queue ${queue} resumed.` };
  });

  action("/actions/queues/:queue/limit", "pauseQueue", async (c, actor, form) => {
    const queue = param(c, "queue");
    const raw = (text(form, "limit") ?? "").trim();
    const limit = raw === "" ? null : Number(raw);
    if (limit !== null && (!Number.isSafeInteger(limit) || limit < 1)) {
      return { kind: "error", message: `A concurrency limit is a whole number of at least 1 (or empty for none), not "${raw}".` };
    }
    await knownQueue(ctx, queue);
    await store.setConcurrencyLimit({ queue, limit, actor, now: clock.now() });
    return { kind: "success", message: limit === null ? `Queue ${queue} has no concurrency limit now.` : `Queue ${queue} runs at most ${limit} jobs at once.` };
  });

  action("/actions/schedules/:id/trigger", "triggerSchedule", async (c, actor) => {
    const id = param(c, "id");
    const now = clock.now();
    const result = await store.triggerSchedule({ scheduleId: id, jobId: createJobId(now), actor, now });
    if (result.status === "notFound") return { kind: "error", message: `There is no schedule ${id}.` };
    return { kind: "success", message: `Schedule ${id} triggered: job ${result.jobId} is due now.` };
  });
}
