import { type PromiseStore, isBelayError } from "@belay/contract";
import { type Context, Hono } from "hono";
import { streamSSE } from "hono/streaming";
import type { ServerContext } from "../context.js";
import { totalsOf } from "../monitor/queues.js";
import { registerActions } from "./actions.js";
import { registerEditingActions } from "./editing-actions.js";
import { type View, card, empty } from "./components.js";
import { html } from "./html.js";
import { loginPage, page } from "./layout.js";
import { auditPage } from "./pages/audit.js";
import { enqueuePage } from "./pages/enqueue.js";
import { scheduleDraft, scheduleFormPage } from "./pages/schedule-form.js";
import { workflowDetailPage } from "./pages/workflow-detail.js";
import { failuresPage } from "./pages/failures.js";
import { jobDetailPage } from "./pages/job-detail.js";
import { jobsPage } from "./pages/jobs.js";
import { observersPage } from "./pages/observers.js";
import { overviewPage } from "./pages/overview.js";
import type { PageResult } from "./pages/page-result.js";
import { promiseDetailPage } from "./pages/promise-detail.js";
import { promiseSchedulesPage } from "./pages/promise-schedules.js";
import { promisesPage } from "./pages/promises.js";
import { queuesPage } from "./pages/queues.js";
import { schedulesPage } from "./pages/schedules.js";
import { workflowsPage } from "./pages/workflows.js";
import { href, pairsOf, safeBack, without } from "./query.js";
import { guardPosts, refuseUnstorableText } from "./request-guards.js";
import { type DashboardEnv, sessionMiddleware, setSessionCookie, viewOf } from "./session-middleware.js";

/** The dashboard's 404 page. */
export function notFoundPage(): string {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found</title></head><body><h1>Not found</h1><p><a href="/">Back to the dashboard</a></p></body></html>`.value;
}

/** The live streams open right now, so a server stop can end them. */
export type LiveStreams = Set<() => void>;

/** The page of a promise route on a server without a promise store. */
function noPromiseStore(section: "promises" | "promiseSchedules"): PageResult {
  return {
    title: "No durable promises",
    section,
    content: card("No promise store", empty("This server has no promise store", "It shows durable promises when it runs with a promise listener (belay-server without --promises-port off).")),
    status: 404,
  };
}

/**
 * The web dashboard: server-rendered pages (CSS inlined, no external assets), operator actions
 * as form POSTs, browser sign-in with a token, and live refresh over Server-Sent Events. With a
 * promise store it also shows durable promises and their schedules (read only).
 */
export function createDashboardApp(ctx: ServerContext, streams: LiveStreams, promises: PromiseStore | null = null): Hono<DashboardEnv> {
  const app = new Hono<DashboardEnv>();
  app.use("*", sessionMiddleware(ctx));
  app.use("*", refuseUnstorableText());
  app.use("*", guardPosts(ctx));

  // `?token=` on any page signs the browser in (the demo prints such a link), then drops the
  // token from the address so it does not linger in history or leak through a Referer. A link
  // never switches a signed-in session to another token (a link someone else sent would sign
  // you in as them): that takes signing out first.
  app.use("*", async (c, next) => {
    const url = new URL(c.req.url);
    const secret = url.searchParams.get("token");
    if (secret === null || c.req.method !== "GET") return next();
    const target = href(url.pathname, without(pairsOf(url), ["token"]));
    const current = c.get("session");
    c.header("referrer-policy", "no-referrer");
    if (current.actor !== null) {
      if (current.secret !== secret) {
        current.flash = { kind: "info", message: `You are already signed in as ${current.actor}; the link's token was not used. Sign out first to use another token.` };
      }
      return c.redirect(target, 303);
    }
    const actor = await ctx.access.signIn(c.req.raw, secret);
    if (actor === null) {
      c.get("session").flash = { kind: "error", message: "That token is not valid; you are browsing read-only." };
    } else {
      const session = ctx.sessions.signIn(c.get("session"), secret, actor);
      session.flash = { kind: "success", message: `Signed in as ${actor}.` };
      setSessionCookie(c, ctx, session);
    }
    return c.redirect(target, 303);
  });

  // Viewing is allowed by default, but a host's callback may restrict it: ask before any read.
  app.use("*", async (c, next) => {
    const path = c.req.path;
    if (path === "/login" || path === "/logout" || path.startsWith("/actions/")) return next();
    const access = await ctx.access.check(c.req.raw, "view", c.get("session").secret);
    if (access.allowed) return next();
    if (c.req.method === "GET" && access.status === 401 && path !== "/live" && path !== "/tags/suggest") {
      return c.redirect(href("/login", [["next", path + new URL(c.req.url).search]]), 303);
    }
    return c.text(access.status === 401 ? "Sign in to view this dashboard." : "You may not view this dashboard.", access.status);
  });

  const render = async (c: Context<DashboardEnv>, build: (view: View) => Promise<PageResult>) => {
    const session = c.get("session");
    const view = await viewOf(c, ctx);
    const result = await build(view);
    const snapshot = ctx.live.latest ?? (await ctx.live.poll(), ctx.live.latest);
    const totals = snapshot === null ? null : totalsOf(snapshot.counts);
    const flash = session.flash;
    // A live refresh must not consume the flash meant for the page the user is looking at.
    if (c.req.header("x-belay-live") === undefined) session.flash = null;
    const health = ctx.workerHealth();
    const body = page(
      {
        title: result.title,
        appTitle: ctx.title,
        section: result.section,
        ...(result.crumbs === undefined ? {} : { crumbs: result.crumbs }),
        actor: session.actor,
        canSignIn: ctx.access.acceptsTokens,
        csrf: session.csrf,
        flash,
        nonce: c.get("nonce"),
        store: ctx.store.capabilities.name,
        worker: health === null ? null : health.status,
        failures: totals === null ? null : totals.deadLettered + totals.quarantined,
        executing: totals === null ? null : totals.leased,
        promises: promises !== null,
      },
      result.content,
    );
    return c.html(body.value, result.status ?? 200);
  };

  app.get("/", (c) => render(c, (view) => overviewPage(ctx, view)));
  app.get("/jobs", (c) => render(c, (view) => jobsPage(ctx, view, new URL(c.req.url))));
  app.get("/enqueue", (c) => render(c, (view) => enqueuePage(ctx, view, c.req.query("jobName") ? { jobName: c.req.query("jobName")! } : {})));
  app.get("/jobs/:id", (c) => render(c, (view) => jobDetailPage(ctx, view, c.req.param("id"))));
  app.get("/queues", (c) => render(c, (view) => queuesPage(ctx, view)));
  app.get("/failures", (c) => render(c, (view) => failuresPage(ctx, view, new URL(c.req.url))));
  app.get("/schedules", (c) => render(c, (view) => schedulesPage(ctx, view)));
  app.get("/schedules/new", (c) => render(c, (view) => scheduleFormPage(ctx, view, "new", { timeZone: "UTC", catchUp: "skip" })));
  app.get("/schedules/:id/edit", (c) =>
    render(c, async (view) => {
      const id = c.req.param("id");
      const draft = await scheduleDraft(ctx, view, id);
      if (draft === null) return { title: "Schedule not found", section: "schedules", crumbs: [["Schedules", "/schedules"]], content: card("Unknown schedule", empty(`No schedule ${id}`)), status: 404 };
      return scheduleFormPage(ctx, view, "edit", draft);
    }),
  );
  app.get("/workflows", (c) => render(c, (view) => workflowsPage(ctx, view, new URL(c.req.url))));
  app.get("/workflows/:id", (c) => render(c, (view) => workflowDetailPage(ctx, view, c.req.param("id"))));
  app.get("/promises", (c) => render(c, async (view) => (promises === null ? noPromiseStore("promises") : promisesPage(promises, view, new URL(c.req.url)))));
  app.get("/promises/:id", (c) => render(c, async (view) => (promises === null ? noPromiseStore("promises") : promiseDetailPage(promises, view, c.req.param("id")))));
  app.get("/promise-schedules", (c) =>
    render(c, async (view) => (promises === null ? noPromiseStore("promiseSchedules") : promiseSchedulesPage(promises, view, new URL(c.req.url)))),
  );
  app.get("/observers", (c) => render(c, (view) => observersPage(ctx, view)));
  app.get("/audit", (c) => render(c, (view) => auditPage(ctx, view, new URL(c.req.url))));

  app.get("/login", (c) => {
    const next = safeBack(c.req.query("next"));
    const session = c.get("session");
    return c.html(loginPage({ appTitle: ctx.title, nonce: c.get("nonce"), error: null, next, csrf: session.csrf }).value);
  });

  app.post("/login", async (c) => {
    const session = c.get("session");
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const next = safeBack(form["next"]);
    const secret = typeof form["token"] === "string" ? form["token"].trim() : "";
    const fail = (message: string, status: 400 | 401 | 403) =>
      c.html(loginPage({ appTitle: ctx.title, nonce: c.get("nonce"), error: message, next, csrf: session.csrf }).value, status);
    if (form["_csrf"] !== session.csrf) return fail("The sign-in form expired; try again.", 403);
    if (secret.length === 0) return fail("Paste a token to sign in.", 400);
    const actor = await ctx.access.signIn(c.req.raw, secret);
    if (actor === null) return fail("That token is not valid.", 401);
    const signedIn = ctx.sessions.signIn(session, secret, actor);
    signedIn.flash = { kind: "success", message: `Signed in as ${actor}.` };
    setSessionCookie(c, ctx, signedIn);
    return c.redirect(next, 303);
  });

  app.post("/logout", async (c) => {
    const session = c.get("session");
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    if (form["_csrf"] !== session.csrf) return c.text("Forbidden", 403);
    const fresh = ctx.sessions.rotate(session);
    fresh.flash = { kind: "info", message: "Signed out." };
    setSessionCookie(c, ctx, fresh);
    return c.redirect("/", 303);
  });

  // Tag completion for the jobs filter (same data as GET /api/v1/tags/suggestions, as plain text).
  app.get("/tags/suggest", async (c) => {
    const key = c.req.query("key");
    const prefix = c.req.query("prefix") ?? "";
    try {
      const page = await ctx.store.suggestTags({ prefix, max: 20, ...(key === undefined ? {} : { key }) });
      const suggestions = page.suggestions.map((s) => (s.kind === "label" ? s.value : s.kind === "key" ? `${s.key}=` : `${s.key}=${s.value}`));
      return c.json({ suggestions });
    } catch (error) {
      if (isBelayError(error)) return c.json({ suggestions: [] });
      throw error;
    }
  });

  // Server-Sent Events: one "change" event carrying the counts version whenever it moves.
  app.get("/live", (c) => {
    c.header("cache-control", "no-store");
    return streamSSE(c, async (stream) => {
      let closed = false;
      let wake: (() => void) | null = null;
      const close = () => {
        closed = true;
        wake?.();
      };
      streams.add(close);
      stream.onAbort(close);
      let sent = -1;
      const unsubscribe = ctx.live.subscribe(() => wake?.());
      try {
        ctx.live.start();
        if (ctx.live.latest === null) await ctx.live.poll();
        while (!closed) {
          const latest = ctx.live.latest;
          if (latest !== null && latest.version !== sent) {
            sent = latest.version;
            const totals = totalsOf(latest.counts);
            await stream.writeSSE({ event: "change", data: JSON.stringify({ version: latest.version, totals }) });
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
            const keepAlive = setTimeout(resolve, 20_000);
            keepAlive.unref?.();
          });
          wake = null;
          if (!closed && ctx.live.latest?.version === sent) await stream.write(": keep-alive\n\n");
        }
      } finally {
        unsubscribe();
        streams.delete(close);
      }
    });
  });

  app.notFound((c) => c.html(notFoundPage(), 404));

  registerActions(app, ctx);
  registerEditingActions(app, ctx, render);
  return app;
}
