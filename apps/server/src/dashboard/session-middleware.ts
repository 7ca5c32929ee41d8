import { randomBytes } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { Permission } from "../auth/permissions.js";
import { SESSION_COOKIE, SESSION_IDLE_MS, type Session } from "../auth/sessions.js";
import type { ServerContext } from "../context.js";
import type { View } from "./components.js";

/** Hono variables the dashboard's middleware sets. */
export interface DashboardEnv {
  Variables: {
    session: Session;
    nonce: string;
    /** The session the answer's cookie names, when it must set one (see {@link setSessionCookie}). */
    cookieSession: Session | undefined;
  };
}

/**
 * Makes the answer set the session cookie for `session` (HttpOnly, SameSite=Strict; Secure when
 * configured). The cookie is written once, when the answer leaves the session middleware, so a
 * first visit that signs in sets one cookie (the signed-in session's), not two.
 */
export function setSessionCookie(c: Context<DashboardEnv>, _ctx: ServerContext, session: Session): void {
  // Sealing waits for the answer: the flash may still change after this call.
  c.set("cookieSession", session);
}

function writeSessionCookie(c: Context<DashboardEnv>, ctx: ServerContext, session: Session): void {
  setCookie(c, SESSION_COOKIE, ctx.sessions.seal(session), { path: "/", httpOnly: true, sameSite: "Strict", secure: ctx.secureCookies, maxAge: SESSION_IDLE_MS / 1000 });
}

/**
 * Every dashboard request gets a session (anonymous until sign-in: it carries the CSRF token
 * forms must echo), a CSP nonce for the inline style and script, and strict security headers.
 * The session lives in a sealed cookie (see `SessionCookies`), so any server holding the same
 * session secret reads it; a cookie that does not open starts a fresh anonymous session.
 */
export function sessionMiddleware(ctx: ServerContext): MiddlewareHandler<DashboardEnv> {
  return async (c, next) => {
    let session = ctx.sessions.open(getCookie(c, SESSION_COOKIE));
    if (session === null) {
      session = ctx.sessions.create();
      setSessionCookie(c, ctx, session);
    } else if (ctx.sessions.needsRefresh(session)) {
      session = ctx.sessions.touch(session);
      setSessionCookie(c, ctx, session);
    }
    const flashBefore = session.flash;
    const nonce = randomBytes(16).toString("base64");
    c.set("session", session);
    c.set("nonce", nonce);
    await next();
    // The flash rides in the cookie: one set (or shown) during this request rewrites it.
    const cookieSession = c.get("cookieSession") ?? (session.flash === flashBefore ? undefined : session);
    if (cookieSession !== undefined) writeSessionCookie(c, ctx, cookieSession);
    c.header(
      "content-security-policy",
      `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    );
    c.header("x-content-type-options", "nosniff");
    c.header("referrer-policy", "same-origin");
    c.header("x-frame-options", "DENY");
    if (!c.res.headers.has("cache-control")) c.header("cache-control", "no-store");
  };
}

const DASHBOARD_PERMISSIONS = ["viewSensitive", "cancel", "requeue", "pauseQueue", "triggerSchedule", "enqueue", "manageSchedules"] as const;

/** The viewer of a dashboard page: what the session's token (or the host) allows. */
export async function viewOf(c: Context<DashboardEnv>, ctx: ServerContext): Promise<View> {
  const session = c.get("session");
  const allowed = new Set<Permission>();
  await Promise.all(
    DASHBOARD_PERMISSIONS.map(async (p) => {
      if ((await ctx.access.check(c.req.raw, p, session.secret)).allowed) allowed.add(p);
    }),
  );
  const url = new URL(c.req.url);
  return {
    now: ctx.clock.now(),
    path: url.pathname + url.search,
    csrf: session.csrf,
    actor: session.actor,
    can: (p) => allowed.has(p),
  };
}
