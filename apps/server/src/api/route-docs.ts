import { createRoute, z } from "@hono/zod-openapi";
import { ErrorSchema, IdParam } from "./schemas.js";

/** A JSON answer of the OpenAPI document: what its status means and its body's schema. */
export function jsonAnswer<S extends z.ZodType>(description: string, schema: S) {
  return { description, content: { "application/json": { schema } } };
}

/** A required JSON request body of the OpenAPI document (validated by `schema`). */
export function jsonRequest<S extends z.ZodType>(schema: S) {
  return { required: true, content: { "application/json": { schema } } };
}

/** Error answers every route may give, for the OpenAPI document. */
export function errorResponses(...statuses: number[]) {
  const descriptions: Record<number, string> = {
    400: "Malformed input (names the field)",
    401: "No or unknown bearer token",
    403: "The token lacks the permission",
    404: "Unknown target",
    409: "The target's state does not allow the action",
    413: "Payload (or request body) too large",
    415: "The body is not JSON (content-type: application/json, UTF-8)",
    422: "A bound exceeded (names the bound, its limit and the actual size; also a body nested deeper than 64 levels) or a reference unknown",
    503: "The store is busy (retry after Retry-After seconds) or unavailable",
  };
  return Object.fromEntries(statuses.map((s) => [s, jsonAnswer(descriptions[s] ?? "Error", ErrorSchema)]));
}

/**
 * The route of a whole collection, tagged with its name: `GET /<name>` answers `{ <name>: [item] }`
 * (its only error: the store busy or unavailable).
 */
export function collectionRoute<K extends string, S extends z.ZodType>(name: K, item: S, summary: string) {
  const answer = z.object({ [name]: z.array(item) } as Record<K, z.ZodArray<S>>);
  return createRoute({
    method: "get",
    path: `/${name}`,
    tags: [name],
    summary,
    responses: { 200: jsonAnswer(`${name[0]!.toUpperCase()}${name.slice(1)}`, answer), ...errorResponses(503) },
  });
}

/** Where one item is read and what it answers: `path` holds its `{id}`. */
export interface ItemDoc<S extends z.ZodType> {
  readonly path: string;
  readonly tag: string;
  readonly summary: string;
  readonly answer: readonly [description: string, schema: S];
}

/** The route of one item found by the `{id}` of its path: its answer, else 400 or 404 (or 503). */
export function itemRoute<S extends z.ZodType>({ path, tag, summary, answer }: ItemDoc<S>) {
  return createRoute({
    method: "get",
    path,
    tags: [tag],
    summary,
    request: { params: IdParam },
    responses: { 200: jsonAnswer(answer[0], answer[1]), ...errorResponses(400, 404, 503) },
  });
}
