import { MAX_COUNT, MAX_INSTANT } from "@belay/contract";
import fc from "fast-check";

// Hostile requests derived from the server's own OpenAPI document: every operation, its path
// and query parameters and its body schema, filled with odd text, out-of-range numbers and
// dates, malformed or deep JSON and wrong content types. Nothing here names a route.

/** The parts of an OpenAPI 3 schema object the generators read. */
export interface Schema {
  readonly $ref?: string;
  readonly type?: string;
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
  readonly items?: Schema;
  readonly anyOf?: readonly Schema[];
  readonly oneOf?: readonly Schema[];
  readonly enum?: readonly unknown[];
  readonly nullable?: boolean;
  readonly example?: unknown;
  readonly minimum?: number;
  readonly minItems?: number;
}

interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly schema?: Schema;
}

/** One operation of the document. */
export interface Operation {
  readonly method: string;
  /** `/jobs/{id}`, as in the document. */
  readonly template: string;
  readonly pathParams: readonly Parameter[];
  readonly queryParams: readonly Parameter[];
  /** The JSON body's schema (refs resolved on use), or `null` when the operation takes none. */
  readonly body: Schema | null;
  /** The statuses the document gives for it. */
  readonly statuses: ReadonlySet<number>;
}

export interface OpenApiDocument {
  readonly paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: Schema }> }; responses: Record<string, unknown> }>>;
  readonly components?: { readonly schemas?: Record<string, Schema> };
}

/** Every operation of `doc`. */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const parameters = op.parameters ?? [];
      operations.push({
        method: method.toUpperCase(),
        template,
        pathParams: parameters.filter((p) => p.in === "path"),
        queryParams: parameters.filter((p) => p.in === "query"),
        body: op.requestBody?.content["application/json"]?.schema ?? null,
        statuses: new Set(Object.keys(op.responses).map(Number)),
      });
    }
  }
  return operations;
}

/** A request to send: everything about it is data, so fast-check can print and replay it. */
export interface HostileRequest {
  readonly auth: "admin" | "viewer" | "none";
  readonly params: Readonly<Record<string, string>>;
  readonly query: readonly (readonly [string, string])[];
  readonly body:
    | { readonly kind: "none" }
    | { readonly kind: "json"; readonly value: unknown }
    | { readonly kind: "text"; readonly contentType: string | null; readonly text: string };
}

// ---- the odd values ----------------------------------------------------------------------------

/** Text no store holds, text past every bound, text that looks like syntax. */
export const ODD_TEXT: readonly string[] = [
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00y",
  "x".repeat(10_000),
  "",
  " ",
  "=v",
  "k=",
  "=",
  "1",
  "2030-02-31T00:00:00Z",
  "2030-01-01T00:00:00Z\u0000",
  "\u202e\ufeff",
  "😀",
  "' OR 1=1 --",
  "<script>alert(1)</script>",
  "%00",
  "a,,b",
  "*",
];

/** Numbers past a 32-bit column, past the last instant, fractional, negative. */
export const ODD_NUMBERS: readonly number[] = [0, -1, 1.5, MAX_COUNT, MAX_COUNT + 1, 2 ** 53, 1e308, MAX_INSTANT, MAX_INSTANT + 1, -0];

/** Query-string spellings of numbers that are not integers in range. */
const ODD_NUMBER_TEXT = ["0", "-1", "1.5", "1e3", "2147483648", "99999999999999999999", "0x10", " 5"];

/** Times that are not times, or not representable. */
const ODD_DATES = ["1", "2030-02-31T00:00:00Z", "10000-01-01T00:00:00Z", "Tue, 01 Jan 2030 00:00:00 GMT", "2030-01-01", "2030-01-01T00:00:00Z\u0000"];

/** Ids that name something in the seeded store, and one that names nothing. */
export const KNOWN_IDS = ["j1", "j2", "dl", "s1", "w1", "o1", "mail", "default", "ghost"];

/** JSON text that does not parse. */
const MALFORMED_JSON = ["{nope", "", "[", '{"jobs":', "\u0000", "NaN", "{'a':1}", '{"a":1}}', "1e999999"];

/** JSON nested `depth` levels deep, as text (JSON.stringify of such a value overflows the stack). */
export function deepJson(depth: number, kind: "array" | "object"): string {
  return kind === "array" ? `${"[".repeat(depth)}${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

/** Bodies in other media types (or none named), holding JSON-looking text. */
const WRONG_MEDIA: readonly (string | null)[] = [null, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "application/json; charset=latin1"];

// ---- schema walking ------------------------------------------------------------------------------

export class SchemaWalker {
  readonly #components: Readonly<Record<string, Schema>>;

  constructor(doc: OpenApiDocument) {
    this.#components = doc.components?.schemas ?? {};
  }

  resolve(schema: Schema): Schema {
    if (schema.$ref === undefined) return schema;
    const name = schema.$ref.replace("#/components/schemas/", "");
    const found = this.#components[name];
    if (found === undefined) throw new Error(`unresolved ${schema.$ref}`);
    return this.resolve(found);
  }

  /** A plausible value: required properties only, examples and first enum values, minimal numbers. */
  sample(raw: Schema): unknown {
    const schema = this.resolve(raw);
    const members = schema.anyOf ?? schema.oneOf;
    if (members !== undefined) return this.sample(members[0]!);
    if (schema.enum !== undefined) return schema.enum[0];
    if (schema.example !== undefined) return schema.example;
    switch (schema.type) {
      case "object": {
        const out: Record<string, unknown> = {};
        for (const key of schema.required ?? []) out[key] = this.sample(schema.properties?.[key] ?? {});
        return out;
      }
      case "array":
        return Array.from({ length: Math.max(1, schema.minItems ?? 0) }, () => this.sample(schema.items ?? {}));
      case "string":
        return "x";
      case "integer":
      case "number":
        return schema.minimum ?? 1;
      case "boolean":
        return false;
      default:
        return null;
    }
  }

  /** Every property path down to a scalar (into objects, and into the first item of arrays). */
  leaves(raw: Schema, path: readonly (string | number)[] = []): { path: (string | number)[]; schema: Schema }[] {
    const schema = this.resolve(raw);
    if (schema.type === "object" && schema.properties !== undefined) {
      return Object.entries(schema.properties).flatMap(([key, child]) => this.leaves(child, [...path, key]));
    }
    if (schema.type === "array" && schema.items !== undefined) return [{ path: [...path], schema }, ...this.leaves(schema.items, [...path, 0])];
    return [{ path: [...path], schema }];
  }

  /** Any value for `raw`, well-formed or not: its own shapes with odd leaves, or odd values instead. */
  arbitrary(raw: Schema, depth = 0): fc.Arbitrary<unknown> {
    const schema = this.resolve(raw);
    const odd = oddValue();
    const members = schema.anyOf ?? schema.oneOf;
    let own: fc.Arbitrary<unknown>;
    if (members !== undefined) own = fc.oneof(...members.map((m) => this.arbitrary(m, depth + 1)));
    else if (schema.enum !== undefined) own = fc.constantFrom(...schema.enum);
    else if (schema.type === "object" && schema.properties !== undefined && depth < 4) {
      const required = new Set(schema.required ?? []);
      const entries = Object.entries(schema.properties).map(
        ([key, child]) => [key, required.has(key) ? this.arbitrary(child, depth + 1) : fc.option(this.arbitrary(child, depth + 1), { nil: undefined, freq: 2 })] as const,
      );
      own = fc.record(Object.fromEntries(entries)).map((o) => JSON.parse(JSON.stringify(o)) as unknown);
    } else if (schema.type === "array") {
      const items = this.arbitrary(schema.items ?? {}, depth + 1);
      own = fc.oneof({ weight: 5, arbitrary: fc.array(items, { maxLength: 3 }) }, { weight: 1, arbitrary: fc.array(items, { minLength: 17, maxLength: 60 }) });
    } else if (schema.type === "string") {
      const plausible = fc.constantFrom(...[schema.example, ...KNOWN_IDS, "2030-01-01T00:00:00Z"].filter((v) => typeof v === "string"));
      own = fc.oneof({ weight: 3, arbitrary: plausible }, { weight: 2, arbitrary: oddString() }, { weight: 1, arbitrary: fc.constantFrom(...ODD_DATES) });
    } else if (schema.type === "integer" || schema.type === "number") own = fc.oneof(fc.constantFrom(...ODD_NUMBERS), fc.integer());
    else if (schema.type === "boolean") own = fc.boolean();
    else own = fc.oneof(fc.jsonValue({ maxDepth: 3 }), oddString());
    const withNull = schema.nullable ? fc.oneof(own, fc.constant(null)) : own;
    return fc.oneof({ weight: 6, arbitrary: withNull }, { weight: 1, arbitrary: odd });
  }
}

/** Random text with lone surrogates and control characters among the code units. */
function oddString(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ODD_TEXT) },
    { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)), maxLength: 12 }) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
  );
}

/** A value of the wrong kind for any schema. */
function oddValue(): fc.Arbitrary<unknown> {
  return fc.oneof(oddString(), fc.constantFrom(...ODD_NUMBERS), fc.constantFrom(null, true, [], {}, [null], { "": 1 }));
}

/** Sets `value` at `path` in a copy of `base`, making the objects and arrays on the way. */
export function withLeaf(base: unknown, path: readonly (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  const container: Record<string | number, unknown> =
    typeof head === "number" ? (Array.isArray(base) ? [...base] : []) as unknown as Record<number, unknown> : { ...(typeof base === "object" && base !== null ? base : {}) };
  container[head] = withLeaf((base as Record<string | number, unknown> | null | undefined)?.[head], rest, value);
  return container;
}

// ---- requests --------------------------------------------------------------------------------

/** Odd text for a parameter or a string field: unstorable, past every bound, malformed tags, loose dates. */
const ODD_FIELD_TEXT = ["a\u0000b", "x\ud800", "x".repeat(10_000), "", "=v", "k=", "2030-02-31T00:00:00Z", "😀"];

/** Odd numbers for a numeric field: past a 32-bit column, past the last instant, negative, fractional. */
const ODD_FIELD_NUMBERS: readonly unknown[] = [MAX_COUNT + 1, MAX_INSTANT + 1, -1, 1.5, 1e308, "1"];

/** The fixed cases of `op`: each odd value in each parameter and body field, each bad body kind, one at a time. */
export function fixedCases(op: Operation, walker: SchemaWalker): HostileRequest[] {
  const base: HostileRequest = {
    auth: "admin",
    params: Object.fromEntries(op.pathParams.map((p) => [p.name, p.name === "queue" ? "mail" : "ghost"])),
    query: [],
    body: op.body === null ? { kind: "none" } : { kind: "json", value: walker.sample(op.body) },
  };
  const cases: HostileRequest[] = [base, { ...base, auth: "none" }];
  for (const p of op.pathParams) {
    for (const value of [...ODD_FIELD_TEXT.filter((t) => t !== ""), "%00", "j1", "s1"]) cases.push({ ...base, params: { ...base.params, [p.name]: value } });
  }
  for (const q of op.queryParams) {
    const integer = q.schema !== undefined && walker.resolve(q.schema).type === "integer";
    for (const value of integer ? ODD_NUMBER_TEXT : ODD_FIELD_TEXT) cases.push({ ...base, query: [[q.name, value]] });
    cases.push({ ...base, query: [[q.name, "a"], [q.name, "\u0000"]] });
  }
  if (op.body === null) {
    // A GET cannot carry a body (fetch refuses to build one).
    if (op.method === "GET") return cases;
    cases.push({ ...base, body: { kind: "text", contentType: "application/json", text: deepJson(5_000, "array") } });
    cases.push({ ...base, body: { kind: "text", contentType: "text/plain", text: "x".repeat(300_000) } });
    return cases;
  }
  const sample = walker.sample(op.body);
  const text = JSON.stringify(sample);
  for (const contentType of WRONG_MEDIA) cases.push({ ...base, body: { kind: "text", contentType, text } });
  for (const malformed of MALFORMED_JSON) cases.push({ ...base, body: { kind: "text", contentType: "application/json", text: malformed } });
  cases.push({ ...base, body: { kind: "none" } });
  for (const [depth, kind] of [[5_000, "array"], [100_000, "array"], [5_000, "object"]] as const) {
    cases.push({ ...base, body: { kind: "text", contentType: "application/json", text: text.replace(/^\{/, `{"payload":${deepJson(depth, kind)},`) } });
  }
  cases.push({ ...base, body: { kind: "text", contentType: "application/json", text: JSON.stringify({ ...(sample as object), padding: "x".repeat(300_000) }) } });
  for (const leaf of walker.leaves(op.body)) {
    const type = walker.resolve(leaf.schema).type;
    const values = type === "integer" || type === "number" ? ODD_FIELD_NUMBERS : type === "array" ? ["x", [null]] : [...ODD_FIELD_TEXT, 1e308, null];
    for (const value of values) cases.push({ ...base, body: { kind: "json", value: withLeaf(sample, leaf.path, value) } });
  }
  return cases;
}

/** Random requests for `op`: any mix of odd parameters, queries, bodies and credentials. */
export function requestArbitrary(op: Operation, walker: SchemaWalker): fc.Arbitrary<HostileRequest> {
  const text = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...KNOWN_IDS) }, { weight: 2, arbitrary: oddString() });
  const params = fc.record(Object.fromEntries(op.pathParams.map((p) => [p.name, text.filter((t) => t.length > 0 && !/^\.{1,2}$/.test(t))])));
  const queryValue = (p: Parameter) => {
    const schema = p.schema === undefined ? {} : walker.resolve(p.schema);
    const own = schema.enum !== undefined ? fc.constantFrom(...schema.enum.map(String)) : schema.type === "integer" ? fc.constantFrom("1", "50", "200", "201") : text;
    return fc.oneof(own, oddString(), fc.constantFrom(...ODD_NUMBER_TEXT));
  };
  const query = fc
    .array(fc.oneof(...(op.queryParams.length > 0 ? op.queryParams : [{ name: "unknown", in: "query" }]).map((p) => fc.tuple(fc.constant(p.name), queryValue(p)))), { maxLength: 4 })
    .map((pairs) => pairs as (readonly [string, string])[]);
  const oddBody = fc.oneof(
    fc.record({ kind: fc.constant("text" as const), contentType: fc.constantFrom(...WRONG_MEDIA), text: fc.json() }),
    fc.record({ kind: fc.constant("text" as const), contentType: fc.constant("application/json"), text: fc.constantFrom(...MALFORMED_JSON) }),
    fc.record({
      kind: fc.constant("text" as const),
      contentType: fc.constant("application/json"),
      text: fc.tuple(fc.integer({ min: 60, max: 20_000 }), fc.constantFrom("array" as const, "object" as const)).map(([d, k]) => deepJson(d, k)),
    }),
  );
  const body =
    op.method === "GET"
      ? fc.constant({ kind: "none" as const })
      : op.body === null
      ? fc.oneof({ weight: 4, arbitrary: fc.constant({ kind: "none" as const }) }, { weight: 1, arbitrary: oddBody })
      : fc.oneof({ weight: 6, arbitrary: walker.arbitrary(op.body).map((value) => ({ kind: "json" as const, value })) }, { weight: 2, arbitrary: oddBody }, { weight: 1, arbitrary: fc.constant({ kind: "none" as const }) });
  return fc.record({
    auth: fc.oneof({ weight: 5, arbitrary: fc.constant("admin" as const) }, { weight: 1, arbitrary: fc.constantFrom("viewer" as const, "none" as const) }),
    params,
    query,
    body,
  }) as fc.Arbitrary<HostileRequest>;
}

/** Percent-encodes text for a URL, lone surrogates too (as the bytes a hostile client would send). */
export function encodeComponent(text: string): string {
  let out = "";
  for (const char of text) {
    const unit = char.charCodeAt(0);
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join("");
    } else out += encodeURIComponent(char);
  }
  return out;
}

/** The path and query of `request` for `op`, under `/api/v1`. */
export function urlOf(op: Operation, request: HostileRequest): string {
  const path = op.template.replace(/\{(\w+)\}/g, (_, name: string) => encodeComponent(request.params[name] ?? "x"));
  const query = request.query.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join("&");
  return `/api/v1${path}${query.length > 0 ? `?${query}` : ""}`;
}

/** A short description of `request` for failure messages (long text elided). */
export function describeRequest(op: Operation, request: HostileRequest): string {
  const shorten = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s);
  const body =
    request.body.kind === "none" ? "no body" : request.body.kind === "json" ? `JSON ${shorten(JSON.stringify(request.body.value))}` : `${request.body.contentType ?? "no content type"}: ${shorten(JSON.stringify(request.body.text))}`;
  return `${op.method} ${shorten(urlOf(op, request))} as ${request.auth}, ${body}`;
}
