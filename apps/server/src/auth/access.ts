import { PERMISSIONS, type Permission } from "./permissions.js";
import { type ServerToken, TokenRegistry } from "./tokens.js";

/**
 * A host's answer to "may this request do that?". `actor` is recorded in the audit log for
 * operator actions. `reason` (optional) picks 401 or 403 for a refusal; without it a refusal is
 * 401 when the request carried no credentials and 403 when it did.
 */
export interface AuthorizeDecision {
  readonly allowed: boolean;
  readonly actor: string;
  readonly reason?: "unauthenticated" | "forbidden";
}

/**
 * The host-supplied permission callback. It sees the request (a browser session's token arrives
 * as an `Authorization: Bearer` header, like an API client's) and the permission asked for.
 */
export type Authorize = (request: Request, permission: Permission) => AuthorizeDecision | Promise<AuthorizeDecision>;

/** The outcome of an access check, with the HTTP status a refusal gets. */
export type AccessResult =
  | { readonly allowed: true; readonly actor: string }
  | { readonly allowed: false; readonly actor: string; readonly status: 401 | 403 };

/** Anonymous callers are audited (and greeted) as this actor. */
export const ANONYMOUS = "anonymous";

/**
 * Decides permissions: the host's `authorize` callback when given, else the configured tokens
 * (each token's name is its actor; `view` needs no token).
 */
export class Access {
  readonly #tokens: TokenRegistry;
  readonly #authorize: Authorize | null;

  constructor(options: { readonly tokens?: readonly ServerToken[]; readonly authorize?: Authorize | undefined }) {
    this.#tokens = new TokenRegistry(options.tokens ?? []);
    this.#authorize = options.authorize ?? null;
  }

  /** Whether a sign-in form should be offered: tokens are configured, or a host decides. */
  get acceptsTokens(): boolean {
    return this.#authorize !== null || this.#tokens.size > 0;
  }

  /**
   * Checks `permission` for `request`. `sessionSecret` is the token a browser session signed in
   * with; it stands in for a missing `Authorization` header.
   */
  async check(request: Request, permission: Permission, sessionSecret: string | null = null): Promise<AccessResult> {
    const header = bearer(request);
    const secret = header ?? sessionSecret;
    if (this.#authorize !== null) {
      const forwarded = header === null && secret !== null ? withBearer(request, secret) : request;
      let decision: AuthorizeDecision;
      try {
        decision = await this.#authorize(forwarded, permission);
      } catch {
        // A throwing callback denies: failing open would be worse than a refused click.
        return { allowed: false, actor: ANONYMOUS, status: 403 };
      }
      const actor = typeof decision?.actor === "string" && decision.actor.length > 0 ? decision.actor : ANONYMOUS;
      if (decision?.allowed === true) return { allowed: true, actor };
      const status =
        decision?.reason === "unauthenticated" ? 401 : decision?.reason === "forbidden" ? 403 : secret === null ? 401 : 403;
      return { allowed: false, actor, status };
    }
    const token = secret === null ? null : this.#tokens.find(secret);
    if (permission === "view") return { allowed: true, actor: token?.name ?? ANONYMOUS };
    if (token === null) return { allowed: false, actor: ANONYMOUS, status: 401 };
    if ((token.permissions ?? PERMISSIONS).includes(permission)) return { allowed: true, actor: token.name };
    return { allowed: false, actor: token.name, status: 403 };
  }

  /**
   * Signs a secret in: the actor it stands for when it is a valid token (for a host callback:
   * when the callback allows `view` with it), else `null`.
   */
  async signIn(request: Request, secret: string): Promise<string | null> {
    if (this.#authorize !== null) {
      const result = await this.check(withBearer(request, secret), "view");
      return result.allowed ? result.actor : null;
    }
    return this.#tokens.find(secret)?.name ?? null;
  }
}

/** The bearer token of a request, or `null`. */
export function bearer(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (header === null) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** A body-less copy of `request` carrying `secret` as its bearer token (for host callbacks). */
function withBearer(request: Request, secret: string): Request {
  const headers = new Headers(request.headers);
  headers.set("authorization", `Bearer ${secret}`);
  return new Request(request.url, { method: request.method === "GET" || request.method === "HEAD" ? request.method : "POST", headers });
}
