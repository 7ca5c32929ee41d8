import type { MiddlewareHandler } from "hono";
import { HttpError, badRequest } from "./errors.js";

// The one way the API reads a request body. Hono would answer a wrong content type with an
// exception the error handler cannot tell from a bug, decode bytes that are not UTF-8 into
// U+FFFD silently, and parse JSON nested thousands of levels deep, which then overflows the
// stack of whatever walks it (validation, JSON.stringify). Here the body is checked in that
// order, each refusal in the API's error shape, before any route code sees it.

/** The deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 64;

const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json$/i;

/** 415 naming the content type the route takes. */
function unsupportedMediaType(message: string): HttpError {
  return new HttpError(415, { code: "BELAY_UNSUPPORTED_MEDIA_TYPE", field: "content-type", message });
}

/** Why `header` is not a JSON content type in UTF-8, or `null`. */
function mediaTypeProblem(header: string | undefined): string | null {
  if (header === undefined || header.trim() === "") return "the body must be JSON: send content-type: application/json";
  const [type = "", ...parameters] = header.split(";").map((part) => part.trim());
  if (!JSON_MEDIA_TYPE.test(type)) return `the body must be JSON (application/json), not ${type}`;
  for (const parameter of parameters) {
    const [name = "", value = ""] = parameter.split("=").map((part) => part.trim());
    if (name.toLowerCase() === "charset" && value.replace(/^"|"$/g, "").toLowerCase() !== "utf-8") {
      return `the body must be JSON in UTF-8, not ${value}`;
    }
  }
  return null;
}

/**
 * The deepest nesting of arrays and objects in JSON `text`, counted without parsing (brackets
 * inside strings do not count); stops counting once past `limit`.
 */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Route middleware for a JSON body: 415 for a missing or other content type (or a charset other
 * than UTF-8), 400 for bytes that are not UTF-8 or text that is not JSON, 422 for nesting deeper
 * than {@link MAX_JSON_DEPTH}. The body's size is bounded before this (the API's body limit).
 * The text is left for the route's validator, which parses it again (cheap, and bounded now).
 */
export const jsonBody: MiddlewareHandler = async (c, next) => {
  const problem = mediaTypeProblem(c.req.header("content-type"));
  if (problem !== null) throw unsupportedMediaType(problem);
  let text: string;
  try {
    text = utf8.decode(await c.req.arrayBuffer());
  } catch {
    throw badRequest("body", "the body is not valid UTF-8");
  }
  const depth = jsonDepth(text, MAX_JSON_DEPTH);
  if (depth > MAX_JSON_DEPTH) {
    throw new HttpError(422, {
      code: "BELAY_BODY_TOO_DEEP",
      field: "body",
      message: `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
      bound: "jsonDepth",
      limit: MAX_JSON_DEPTH,
    });
  }
  try {
    JSON.parse(text);
  } catch (error) {
    throw badRequest("body", text.trim().length === 0 ? "a JSON body is required" : `malformed JSON: ${(error as Error).message}`);
  }
  // Hono's json() reads its cached text: the validator sees exactly the bytes checked here.
  (c.req.bodyCache as unknown as { text?: Promise<string> }).text = Promise.resolve(text);
  await next();
};
