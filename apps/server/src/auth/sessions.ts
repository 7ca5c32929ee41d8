import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { InvalidInputError } from "@belay/contract";

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
  readonly secret: string | null;
  /** Who signed in (for the header), `null` while anonymous. */
  readonly actor: string | null;
  /** When the session began (sign-in starts a new one). */
  readonly issuedAt: number;
  /** When its cookie was last written. */
  readonly seenAt: number;
  /** Shown on the next page, then cleared (sealed in the cookie with the rest). */
  flash: Flash | null;
}

/** The cookie holding the sealed session. */
export const SESSION_COOKIE = "belay_session";

/** A session lapses after this long without a request. */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000;
/** And after this long in any case (a stolen cookie cannot be kept alive by use). */
export const SESSION_MAX_MS = 7 * 24 * 60 * 60 * 1000;
/** A session's cookie is rewritten (sliding its idle deadline) when it is older than this. */
const REFRESH_MS = 5 * 60 * 1000;
/** The shortest secret {@link SessionCookies} accepts. */
export const SESSION_SECRET_MIN_LENGTH = 32;

const FLASH_MAX_CHARS = 1_000;
const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

function randomId(): string {
  return randomBytes(24).toString("base64url");
}

interface SealedSession {
  readonly v: number;
  readonly id: string;
  readonly csrf: string;
  readonly secret: string | null;
  readonly actor: string | null;
  readonly iat: number;
  readonly seen: number;
  readonly flash: Flash | null;
}

const isText = (v: unknown): v is string => typeof v === "string" && v.length > 0 && v.length <= 4096;
const isTextOrNull = (v: unknown): v is string | null => v === null || isText(v);
function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function flashOf(value: unknown): Flash | null {
  if (typeof value !== "object" || value === null) return null;
  const { kind, message } = value as Partial<Flash>;
  if ((kind === "success" || kind === "error" || kind === "info") && typeof message === "string") return { kind, message };
  return null;
}

const isInstant = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);

/**
 * Browser sessions kept entirely in cookies, sealed with AES-256-GCM under a key derived from
 * the server's session secret: a cookie another party edited, or sealed under another secret, is
 * refused (the browser starts anonymous), and the token secret inside cannot be read from it.
 * Servers sharing the secret accept each other's cookies, so a session survives a restart or a
 * move to another instance. Without a configured secret a random one is drawn per process, and
 * a restart signs everybody out. Signing out replaces the browser's cookie; a copy taken before
 * stays valid until it lapses (12 hours idle, 7 days at most) or the secret changes.
 */
export class SessionCookies {
  readonly #key: Buffer;
  readonly #now: () => number;

  /** `secret`: at least {@link SESSION_SECRET_MIN_LENGTH} characters, or `null` for a per-process random one. */
  constructor(secret: string | null, now: () => number = Date.now, field = "sessionSecret") {
    if (secret !== null && (typeof secret !== "string" || secret.length < SESSION_SECRET_MIN_LENGTH)) {
      throw new InvalidInputError(field, `must be at least ${SESSION_SECRET_MIN_LENGTH} characters (for example: openssl rand -base64 32)`);
    }
    const material = secret === null ? randomBytes(32) : Buffer.from(secret, "utf8");
    this.#key = Buffer.from(hkdfSync("sha256", material, "belay-dashboard", "session cookie v1", 32));
    this.#now = now;
  }

  /** A fresh anonymous session. */
  create(): Session {
    const now = this.#now();
    return { id: randomId(), csrf: randomId(), secret: null, actor: null, issuedAt: now, seenAt: now, flash: null };
  }

  /** A fresh session carrying `secret` (sign-in rotates id and CSRF token, so values seen before are worthless after). */
  signIn(_previous: Session | null, secret: string, actor: string): Session {
    return { ...this.create(), secret, actor };
  }

  /** A fresh anonymous session replacing `previous` (sign-out). */
  rotate(_previous: Session | null): Session {
    return this.create();
  }

  /** The same session with its idle deadline moved to now. */
  touch(session: Session): Session {
    return { ...session, seenAt: this.#now(), flash: session.flash };
  }

  /** Whether the session's cookie should be rewritten to slide its idle deadline. */
  needsRefresh(session: Session): boolean {
    return this.#now() - session.seenAt > REFRESH_MS;
  }

  /** The cookie value of `session`, its pending flash included. */
  seal(session: Session): string {
    const body: SealedSession = {
      v: VERSION,
      id: session.id,
      csrf: session.csrf,
      secret: session.secret,
      actor: session.actor,
      iat: session.issuedAt,
      seen: session.seenAt,
      // A cookie holds about 4 KiB: a flash quoting long input is cut short rather than lost.
      flash: session.flash === null ? null : { kind: session.flash.kind, message: clip(session.flash.message, FLASH_MAX_CHARS) },
    };
    return this.#seal(JSON.stringify(body), "session");
  }

  /** The session a cookie value holds; `null` when absent, tampered with, sealed under another secret, or lapsed. */
  open(value: string | undefined): Session | null {
    const text = value === undefined ? null : this.#open(value, "session");
    if (text === null) return null;
    let body: Partial<SealedSession>;
    try {
      body = JSON.parse(text) as Partial<SealedSession>;
    } catch {
      return null;
    }
    if (body.v !== VERSION || !isText(body.id) || !isText(body.csrf) || !isTextOrNull(body.secret) || !isTextOrNull(body.actor)) return null;
    if (!isInstant(body.iat) || !isInstant(body.seen)) return null;
    const now = this.#now();
    if (now - body.seen > SESSION_IDLE_MS || now - body.iat > SESSION_MAX_MS) return null;
    return { id: body.id, csrf: body.csrf, secret: body.secret, actor: body.actor, issuedAt: body.iat, seenAt: body.seen, flash: flashOf(body.flash) };
  }

  #seal(text: string, purpose: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(Buffer.from(purpose));
    const sealed = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), sealed]).toString("base64url");
  }

  #open(value: string, purpose: string): string | null {
    if (value.length > 8192 || !/^[\w-]+$/.test(value)) return null;
    const bytes = Buffer.from(value, "base64url");
    if (bytes.length < 1 + IV_BYTES + TAG_BYTES || bytes[0] !== VERSION) return null;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, bytes.subarray(1, 1 + IV_BYTES));
      decipher.setAAD(Buffer.from(purpose));
      decipher.setAuthTag(bytes.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch {
      return null;
    }
  }
}
