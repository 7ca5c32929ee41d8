import { isIP } from "node:net";
import { type Access, type AccessResult, ANONYMOUS, bearer } from "../auth/access.js";

// Who may use the durable-promise listener. The model is the job API's (bearer tokens with
// permissions, or the host's `authorize` callback) with one permission, `promises`. A client may
// send its token as `Authorization: Bearer` or in the envelope's `head.auth` (the SDK sends
// both). What an anonymous caller may do is a policy of its own:
//
// - `none`: nothing. The default whenever tokens or an `authorize` callback are configured.
// - `local`: everything, but only from this machine: the peer address is loopback, the request
//   names a loopback host (a DNS-rebound name does not), and it carries no `Origin` header (a
//   web page's request always does, so a page in a local browser cannot drive the listener).
//   The default when nothing is configured, as the reference server's embedded use expects.

/** What an anonymous caller of the promise listener may do. */
export type AnonymousPromiseAccess = "none" | "local";

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

/** Whether `address` (a socket's peer address) is a loopback address. */
export function isLoopbackAddress(address: string | null | undefined): boolean {
  if (typeof address !== "string") return false;
  const plain = address.startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
  if (isIP(plain) === 4) return plain.startsWith("127.");
  return plain === "::1";
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return LOOPBACK_NAMES.has(host) || host.endsWith(".localhost") || (isIP(host) === 4 && host.startsWith("127."));
}

/** Whether a request comes from a program on this machine rather than a web page or a remote host. */
export function isLocalCaller(request: Request, peerAddress: string | null): boolean {
  if (!isLoopbackAddress(peerAddress)) return false;
  if (request.headers.has("origin")) return false;
  let hostname: string;
  try {
    hostname = new URL(request.url).hostname;
  } catch {
    return false;
  }
  return isLoopbackHost(hostname);
}

/** The access decision of the promise listener, with its refusal's message. */
export type PromiseAccessResult = AccessResult | { readonly allowed: false; readonly actor: string; readonly status: 401; readonly message: string };

/** Decides access to the promise listener (see the policy above). */
export class PromiseAccess {
  readonly #access: Access;
  readonly anonymous: AnonymousPromiseAccess;

  constructor(access: Access, anonymous?: AnonymousPromiseAccess) {
    this.#access = access;
    this.anonymous = anonymous ?? (access.acceptsTokens ? "none" : "local");
  }

  /**
   * Checks the `promises` permission for `request`, whose peer is `peerAddress` (`null` when
   * unknown) and whose envelope carried `headAuth` (`null` without one, or for `GET /poll`).
   */
  async check(request: Request, peerAddress: string | null, headAuth: string | null): Promise<PromiseAccessResult> {
    const header = request.headers.get("authorization");
    const token = bearer(request);
    if (header !== null && token === null) {
      return { allowed: false, actor: ANONYMOUS, status: 401, message: "Authorization must be Bearer <token>" };
    }
    if (token !== null && headAuth !== null && token !== headAuth) {
      return { allowed: false, actor: ANONYMOUS, status: 401, message: "the Authorization header and head.auth carry different tokens" };
    }
    const secret = token ?? headAuth;
    if (secret === null && this.anonymous === "local" && isLocalCaller(request, peerAddress)) return { allowed: true, actor: ANONYMOUS };
    return this.#access.check(request, "promises", secret);
  }
}

/** The message of a refusal. */
export function refusalMessage(result: PromiseAccessResult & { readonly allowed: false }): string {
  if ("message" in result) return result.message;
  if (result.status === 401) return "the promises permission needs a bearer token (Authorization: Bearer <secret>, or head.auth)";
  return `${result.actor} lacks the promises permission`;
}
