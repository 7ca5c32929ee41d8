import type { OpenAPIHono, RouteConfig, RouteHandler, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ZodError } from "zod";
import type { Permission } from "../auth/permissions.js";
import type { ServerContext } from "../context.js";
import { HttpError, badRequest, found } from "../http/errors.js";
import { type ItemDoc, collectionRoute, itemRoute } from "./route-docs.js";

/**
 * The actor of an API request allowed `permission`; throws 401 (no or unknown credentials) or
 * 403 (valid credentials without the permission). The API reads bearer tokens only: a
 * dashboard cookie never authorizes an API write, so the API needs no CSRF defence.
 */
export async function requirePermission(ctx: ServerContext, c: Context, permission: Permission): Promise<string> {
  const result = await ctx.access.check(c.req.raw, permission);
  if (result.allowed) return result.actor;
  if (result.status === 401) {
    throw new HttpError(
      401,
      { code: "BELAY_UNAUTHENTICATED", field: null, message: `${permission} needs a bearer token (Authorization: Bearer <secret>)` },
      { "www-authenticate": 'Bearer realm="belay"' },
    );
  }
  throw new HttpError(403, { code: "BELAY_FORBIDDEN", field: null, message: `${result.actor} lacks the ${permission} permission` });
}

/**
 * The registrar of an app's read routes: every caller of a route it registers needs `view`
 * before the route's handler runs.
 */
export function viewRoutes(app: OpenAPIHono, ctx: ServerContext) {
  return <R extends RouteConfig>(route: R, handler: RouteHandler<R>): void => {
    app.openapi(route, (async (c: Context, next: () => Promise<void>) => {
      await requirePermission(ctx, c, "view");
      return handler(c as never, next);
    }) as never);
  };
}

/** Registers the read route of a whole collection (see `collectionRoute`): `list` reads it as of now. */
export function viewCollection<K extends string>(
  app: OpenAPIHono,
  ctx: ServerContext,
  collection: { readonly name: K; readonly item: z.ZodType; readonly summary: string },
  list: (now: number) => Promise<readonly unknown[]>,
): void {
  viewRoutes(app, ctx)(collectionRoute(collection.name, collection.item, collection.summary), async (c) =>
    c.json({ [collection.name]: await list(ctx.clock.now()) } as never, 200),
  );
}

/**
 * Registers the read route of one item (see `itemRoute`): `get` reads it by the path's id (a 404
 * naming `kind` when there is none), `respond` makes the answer from it.
 */
export function viewItem<T>(
  app: OpenAPIHono,
  ctx: ServerContext,
  item: ItemDoc<z.ZodType> & { readonly kind: string; readonly get: (id: string) => Promise<T | null> },
  respond: (item: T, id: string, c: Context) => unknown,
): void {
  viewRoutes(app, ctx)(itemRoute(item), async (c) => {
    const { id } = c.req.valid("param");
    return c.json((await respond(found(item.kind, id, await item.get(id)), id, c)) as never, 200);
  });
}

/** Whether the request may see sensitive data (without failing when it may not). */
export async function maySeeSensitive(ctx: ServerContext, c: Context): Promise<boolean> {
  return (await ctx.access.check(c.req.raw, "viewSensitive")).allowed;
}

/** A request path as a field name: `["jobs", 0, "payload"]` → `jobs[0].payload`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out.length === 0 ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** The 400 for a request that failed its route schema, naming the first field at fault. */
export function validationError(error: ZodError, target: string): HttpError {
  const issue = error.issues[0];
  if (issue === undefined) return badRequest(target === "json" ? "body" : target, "invalid request");
  let path = fieldPath(issue.path);
  let message = issue.message;
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "?";
    path = path.length === 0 ? key : `${path}.${key}`;
    message = "unknown field";
  } else if (issue.code === "invalid_type" && /received undefined/.test(issue.message)) {
    message = `required (${issue.expected})`;
  }
  return badRequest(path.length === 0 ? (target === "json" ? "body" : target) : path, message);
}
