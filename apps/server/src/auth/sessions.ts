import { randomBytes } from "node:crypto";

/** A flash message shown once, on the page an action redirects to. */
export interface Flash {
  readonly kind: "success" | "error" | "info";
  readonly message: string;
}

/** A dashboard browser session: a CSRF token, the token it signed in with, a pending flash. */
export interface Session {
  readonly id: string;
  /** Every form POST must echo it; tied to this session, so another site cannot forge one. */
  readonly csrf: string;
  /** The bearer secret the browser signed in with (`null` while anonymous). */
  secret: string | null;
  /** Who signed in (for the header), `null` while anonymous. */
  actor: string | null;
  flash: Flash | null;
  lastSeen: number;
}

/** The cookie holding the session id. */
export const SESSION_COOKIE = "belay_session";

const IDLE_MS = 12 * 60 * 60 * 1000;
const MAX_SESSIONS = 10_000;

function randomId(): string {
  return randomBytes(24).toString("base64url");
}

/**
 * In-process sessions (a restart signs everybody out, which a token link fixes). Idle sessions
 * lapse after 12 hours; past 10,000 the least recently seen go first.
 */
export class SessionStore {
  readonly #sessions = new Map<string, Session>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** The live session with this id, touched; `null` if unknown or lapsed. */
  get(id: string | undefined): Session | null {
    if (id === undefined) return null;
    const session = this.#sessions.get(id);
    if (session === undefined) return null;
    const now = this.#now();
    if (now - session.lastSeen > IDLE_MS) {
      this.#sessions.delete(id);
      return null;
    }
    session.lastSeen = now;
    // Re-insert so the map's order stays least-recently-seen first.
    this.#sessions.delete(id);
    this.#sessions.set(id, session);
    return session;
  }

  create(): Session {
    while (this.#sessions.size >= MAX_SESSIONS) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest === undefined) break;
      this.#sessions.delete(oldest);
    }
    const session: Session = { id: randomId(), csrf: randomId(), secret: null, actor: null, flash: null, lastSeen: this.#now() };
    this.#sessions.set(session.id, session);
    return session;
  }

  /**
   * Replaces a session with a fresh one that carries `secret` (sign-in rotates the id, so a
   * session id seen before sign-in is worthless after it).
   */
  signIn(previous: Session | null, secret: string, actor: string): Session {
    const session = this.rotate(previous);
    session.secret = secret;
    session.actor = actor;
    return session;
  }

  /** Ends `previous` and returns a fresh anonymous session (sign-out). */
  rotate(previous: Session | null): Session {
    if (previous !== null) this.#sessions.delete(previous.id);
    return this.create();
  }

  delete(id: string): void {
    this.#sessions.delete(id);
  }
}
