import { createHash, timingSafeEqual } from "node:crypto";
import { InvalidInputError } from "@belay/contract";
import { PERMISSIONS, type Permission, parsePermissions } from "./permissions.js";

/** A bearer token the server accepts: its name is the actor recorded in the audit log. */
export interface ServerToken {
  readonly name: string;
  readonly secret: string;
  /** Default: every permission. */
  readonly permissions?: readonly Permission[];
}

/**
 * Parses `name:secret` or `name:secret:perm,perm` (as given to `--token`). Names are 1..64
 * characters of letters, digits, `.`, `_`, `-`, `@`; secrets at least 8 characters.
 */
export function parseToken(text: string, field = "token"): ServerToken {
  const first = text.indexOf(":");
  if (first <= 0) throw new InvalidInputError(field, "must be name:secret or name:secret:permissions");
  const name = text.slice(0, first);
  const rest = text.slice(first + 1);
  const second = rest.indexOf(":");
  const secret = second < 0 ? rest : rest.slice(0, second);
  if (!/^[\w.@-]{1,64}$/.test(name)) throw new InvalidInputError(field, `token name ${name} must be 1-64 letters, digits, . _ - @`);
  if (secret.length < 8) throw new InvalidInputError(field, `the secret of token ${name} must be at least 8 characters`);
  const permissions = second < 0 ? PERMISSIONS : parsePermissions(rest.slice(second + 1), field);
  return { name, secret, permissions };
}

/** Parses `BELAY_SERVER_TOKENS`: tokens separated by whitespace or `;`. */
export function parseTokenList(text: string, field = "BELAY_SERVER_TOKENS"): ServerToken[] {
  return text
    .split(/[\s;]+/)
    .filter((t) => t.length > 0)
    .map((t) => parseToken(t, field));
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** Looks tokens up by secret in constant time per candidate. */
export class TokenRegistry {
  readonly #tokens: readonly { readonly token: ServerToken; readonly digest: Buffer }[];

  constructor(tokens: readonly ServerToken[]) {
    const names = new Set<string>();
    this.#tokens = tokens.map((token, i) => {
      if (names.has(token.name)) throw new InvalidInputError(`tokens[${i}]`, `repeats token name ${token.name}`);
      names.add(token.name);
      return { token, digest: digest(token.secret) };
    });
  }

  get size(): number {
    return this.#tokens.length;
  }

  /** The token with this secret, or `null`. */
  find(secret: string): ServerToken | null {
    const wanted = digest(secret);
    let found: ServerToken | null = null;
    // Compare against every token so the time taken does not reveal which one matched.
    for (const entry of this.#tokens) if (timingSafeEqual(entry.digest, wanted)) found = entry.token;
    return found;
  }
}
