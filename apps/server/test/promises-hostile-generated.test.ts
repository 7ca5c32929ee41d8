import { MAX_COUNT, MAX_INSTANT, PROMISE_KINDS, type PromiseSnapshot, type PromiseStore } from "@belay/contract";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { type PromiseHarness, VERSION, promiseHarness } from "./promise-helpers.js";
import { promiseStoreTargets } from "./store-targets.js";

// The envelope of the durable-promise listener (`POST /`) under hostile input, on SQLite and
// PostgreSQL: fixed cases (each odd value in each field of each kind, each bad body, one at a
// time), then seeded random mixes — malformed JSON, bodies that are not UTF-8, unknown and debug
// kinds, wrong versions (the envelope's and a nested action's), fields of the wrong type, NUL
// bytes and lone surrogates in ids and tags, out-of-range numbers (1e999 parses as Infinity),
// deep nesting, oversized bodies, wrong content types, unknown credentials. Every answer must be
// below 500 and an envelope: `kind` and `corrId` echoed where the body parsed (else ""), the
// version, `head.status` equal to the HTTP status, and a string `data` from 400 up. A refused
// request (any status from 400) must leave the store exactly as it was (its snapshot, before and
// after); an accepted one becomes the new baseline.
//
// Replay a failure with BELAY_HOSTILE_SEED=<seed printed>; BELAY_HOSTILE_RUNS sets the random
// requests per store.

const SEED = Number(process.env["BELAY_HOSTILE_SEED"] ?? 20_261_201);
const RUNS = Number(process.env["BELAY_HOSTILE_RUNS"] ?? 400);
const BODY_LIMIT = 64 * 1024;
const NOW = 1_000_000;
const HOUR = 3_600_000;
const STATUSES = new Set([200, 300, 400, 401, 403, 404, 409, 422]);

// ---- the odd values --------------------------------------------------------------------------

/** Text written into JSON verbatim: `RAW(1e999)` becomes the JSON number 1e999. */
const raw = (text: string) => `\u0001RAW(${text})\u0001`;
const unraw = (json: string) => json.replace(/"\\u0001RAW\((.*?)\)\\u0001"/g, "$1");

const ODD_TEXT = ["", " ", "\u0000", "a\u0000b", "\ud800", "x\udc00y", "\udfff\ud800", "x".repeat(5_000), "😀", "\u202e\ufeff", "' OR 1=1 --", "%00", "../..", "poll://uni@", "{{.id}}"];
const ODD_NUMBERS: readonly unknown[] = [-1, -0, 0, 1.5, MAX_COUNT + 1, 2 ** 53, 2 ** 53 + 2, MAX_INSTANT, MAX_INSTANT + 1, 1e308, -1e308, raw("1e999"), raw("-1e999"), raw("1E400"), "1", "", null, true];
const ODD_VALUES: readonly unknown[] = [null, true, false, [], [null], {}, { "": 1 }, "x", 0, -1, JSON.parse('{"__proto__":{"id":"x"}}'), [[[[[]]]]]];

/** Ids naming rows the store holds, and one that names none. */
const IDS = ["p-pending", "p-settled", "t-root", "t-pending", "s1", "ghost"];
const PIDS = ["w1", "w2"];

/** JSON nested `depth` levels, as text. */
const deep = (depth: number, kind: "array" | "object") => raw(kind === "array" ? `${"[".repeat(depth)}${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`);

const oddText = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...ODD_TEXT) },
  { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)), maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
);
const oddAny = fc.oneof(oddText, fc.constantFrom(...ODD_NUMBERS), fc.constantFrom(...ODD_VALUES), fc.constantFrom(deep(40, "array"), deep(5_000, "object")));

/** A field's plausible values, and now and then an odd one of any kind. */
const field = (plausible: fc.Arbitrary<unknown>) => fc.oneof({ weight: 4, arbitrary: plausible }, { weight: 1, arbitrary: oddAny });
const id = field(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...IDS) }, { weight: 1, arbitrary: oddText }));
const instant = field(fc.oneof(fc.constant(NOW + HOUR), fc.constant(NOW + 2 * HOUR), fc.constantFrom(...ODD_NUMBERS)));
const count = field(fc.oneof(fc.constantFrom(0, 1, 2, 10, 60_000), fc.constantFrom(...ODD_NUMBERS)));
const tags = field(
  fc.oneof(
    fc.constant({}),
    fc.constant({ "resonate:target": "poll://any@workers" }),
    fc.dictionary(oddText, fc.oneof(oddText, fc.constantFrom(...ODD_VALUES)), { maxKeys: 3 }),
    fc.constant(Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`k${i}`, "v"]))),
  ),
);
const value = field(fc.record({ headers: field(fc.dictionary(oddText, oddText, { maxKeys: 2 })), data: field(fc.constantFrom("eA==", "", "not base64 \u0000")) }, { requiredKeys: [] }));
const state = field(fc.constantFrom("resolved", "rejected", "rejected_canceled", "rejected_timedout", "pending", "RESOLVED"));

/** An envelope's head: mostly right, sometimes a wrong or missing version, an odd corrId, credentials nobody has, a debug time. */
const head = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ corrId: "c1", version: VERSION }) },
  {
    weight: 3,
    arbitrary: fc.record(
      { corrId: field(fc.constantFrom("c1", "corr-ü", "x".repeat(1_024), "x".repeat(1_025))), version: field(fc.constantFrom(VERSION, VERSION, "2025-01-01", "2026-04-01 ", "")), "resonate:origin": oddText },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.record({ corrId: fc.constant("c1"), version: fc.constant(VERSION), auth: fc.constantFrom("not-a-token", 7, null) }) },
  { weight: 1, arbitrary: fc.record({ corrId: fc.constant("c1"), version: fc.constant(VERSION), "resonate:debug_time": fc.constantFrom(NOW, -1, 1.5, "now") }) },
  { weight: 1, arbitrary: oddAny },
);

const nested = (kinds: readonly string[], data: fc.Arbitrary<unknown>) =>
  field(fc.record({ kind: field(fc.constantFrom(...kinds)), head, data }, { requiredKeys: ["kind", "data"] }).map((e) => ({ head: { corrId: "n1", version: VERSION }, ...e })));

const createData = fc.record({ id, timeoutAt: instant, param: value, tags }, { requiredKeys: [] });
const settleData = fc.record({ id, state, value }, { requiredKeys: [] });
const callbackData = fc.record({ awaited: id, awaiter: id }, { requiredKeys: [] });

/** Each kind's data, its fields filled with plausible and odd values. */
const DATA: Readonly<Record<string, fc.Arbitrary<unknown>>> = {
  "promise.get": fc.record({ id }, { requiredKeys: [] }),
  "promise.create": createData,
  "promise.settle": settleData,
  "promise.register_callback": callbackData,
  "promise.register_listener": fc.record({ awaited: id, address: field(fc.constantFrom("poll://uni@g/w1", "poll://any@g", "https://hooks.example/x")) }, { requiredKeys: [] }),
  "promise.search": fc.record({ state, tags, limit: count, cursor: field(oddText) }, { requiredKeys: [] }),
  "task.get": fc.record({ id }, { requiredKeys: [] }),
  "task.create": fc.record({ pid: field(fc.constantFrom(...PIDS)), ttl: count, action: nested(["promise.create", "promise.settle"], createData) }, { requiredKeys: [] }),
  "task.acquire": fc.record({ id, version: count, pid: field(fc.constantFrom(...PIDS)), ttl: count }, { requiredKeys: [] }),
  "task.release": fc.record({ id, version: count }, { requiredKeys: [] }),
  "task.fulfill": fc.record({ id, version: count, action: nested(["promise.settle", "promise.create"], settleData) }, { requiredKeys: [] }),
  "task.suspend": fc.record({ id, version: count, actions: field(fc.array(nested(["promise.register_callback"], callbackData), { maxLength: 3 })) }, { requiredKeys: [] }),
  "task.fence": fc.record({ id, version: count, action: nested(["promise.create", "promise.settle", "task.fence"], fc.oneof(createData, settleData)) }, { requiredKeys: [] }),
  "task.heartbeat": fc.record({ pid: field(fc.constantFrom(...PIDS)), tasks: field(fc.array(field(fc.record({ id, version: count })), { maxLength: 3 })) }, { requiredKeys: [] }),
  "task.halt": fc.record({ id }, { requiredKeys: [] }),
  "task.continue": fc.record({ id }, { requiredKeys: [] }),
  "task.search": fc.record({ state, limit: count, cursor: field(oddText) }, { requiredKeys: [] }),
  "schedule.get": fc.record({ id }, { requiredKeys: [] }),
  "schedule.create": fc.record(
    { id, cron: field(fc.constantFrom("0 * * * *", "*/5 * * * * *", "61 * * * *", "* * * *", "0 0 0 1 1 * 2001")), promiseId: field(fc.constantFrom("{{.id}}-{{.timestamp}}", "{{.id}}")), promiseTimeout: count, promiseParam: value, promiseTags: tags },
    { requiredKeys: [] },
  ),
  "schedule.delete": fc.record({ id }, { requiredKeys: [] }),
  "schedule.search": fc.record({ tags, limit: count, cursor: field(oddText) }, { requiredKeys: [] }),
};

const kind = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...PROMISE_KINDS) },
  { weight: 1, arbitrary: fc.constantFrom("debug.start", "debug.reset", "debug.snap", "debug.tick", "promise.delete", "Promise.Get", "promise.get ", "") },
  { weight: 1, arbitrary: oddAny },
);

/** A request to send: everything about it is data, so fast-check can print and replay it. */
interface HostileEnvelope {
  /** The body as JSON data (with `raw(…)` markers), or `null` for `bytes`. */
  readonly body: unknown;
  /** How the body's text is spoiled on the way, if at all. */
  readonly spoil: "none" | "truncate" | "bad-utf8" | "cesu-surrogate" | "oversize" | "bom" | "deep";
  readonly contentType: string | null;
  readonly authorization: string | null;
}

const envelopeBody = kind.chain((k) =>
  fc.record(
    { kind: fc.constant(k), head, data: typeof k === "string" && DATA[k] !== undefined ? field(DATA[k]!) : field(DATA["promise.create"]!), extra: fc.constantFrom(undefined, 1, "x") },
    { requiredKeys: ["kind", "head", "data"] },
  ),
);

const hostileRequest: fc.Arbitrary<HostileEnvelope> = fc.record({
  body: fc.oneof({ weight: 12, arbitrary: envelopeBody }, { weight: 1, arbitrary: oddAny }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) }),
  spoil: fc.oneof({ weight: 16, arbitrary: fc.constant("none" as const) }, { weight: 1, arbitrary: fc.constantFrom("truncate" as const, "bad-utf8" as const, "cesu-surrogate" as const, "oversize" as const, "bom" as const, "deep" as const) }),
  contentType: fc.oneof({ weight: 12, arbitrary: fc.constant("application/json") }, { weight: 1, arbitrary: fc.constantFrom(null, "text/plain", "application/json; charset=latin1", "application/vnd.x+json", "multipart/form-data") }),
  authorization: fc.oneof({ weight: 16, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom("Bearer nobody", "Basic eDp5", "Bearer ") }),
});

/** The fixed cases: each odd value in each field of each kind, one at a time, and each spoilt body. */
function fixedCases(): HostileEnvelope[] {
  const base = (kind: string, data: unknown): HostileEnvelope => ({ body: { kind, head: { corrId: "fixed", version: VERSION }, data }, spoil: "none", contentType: "application/json", authorization: null });
  const plain: Record<string, Record<string, unknown>> = {
    "promise.get": { id: "p-pending" },
    "promise.create": { id: "fresh", timeoutAt: NOW + HOUR, param: { data: "eA==" }, tags: { a: "b" } },
    "promise.settle": { id: "p-pending", state: "resolved", value: { data: "eA==" } },
    "promise.register_callback": { awaited: "p-pending", awaiter: "t-pending" },
    "promise.register_listener": { awaited: "p-pending", address: "poll://uni@g/w1" },
    "promise.search": { state: "pending", tags: { a: "b" }, limit: 10 },
    "task.acquire": { id: "t-pending", version: 0, pid: "w1", ttl: 60_000 },
    "task.release": { id: "t-root", version: 1 },
    "task.heartbeat": { pid: "w1", tasks: [{ id: "t-root", version: 1 }] },
    "task.halt": { id: "t-root" },
    "schedule.create": { id: "s2", cron: "0 * * * *", promiseId: "{{.id}}-{{.timestamp}}", promiseTimeout: 60_000, promiseParam: {}, promiseTags: { "resonate:target": "poll://any@workers" } },
  };
  const cases: HostileEnvelope[] = [];
  const odd = [...ODD_TEXT.filter((t) => t.length < 100), "x".repeat(5_000), ...ODD_NUMBERS, ...ODD_VALUES, deep(40, "array"), deep(5_000, "object")];
  for (const [kind, data] of Object.entries(plain)) {
    for (const key of Object.keys(data)) for (const value of odd) cases.push(base(kind, { ...data, [key]: value }));
    for (const key of Object.keys(data)) cases.push(base(kind, Object.fromEntries(Object.entries(data).filter(([k]) => k !== key))));
  }
  // Nested actions: their kind, head, version and fields.
  const action = (head: unknown, kind: unknown = "promise.create", data: unknown = plain["promise.create"]) => ({ kind, head, data });
  for (const nestedHead of [undefined, null, {}, { corrId: "n" }, { corrId: "n", version: "2025-01-01" }, { corrId: 7, version: VERSION }, { corrId: "\u0000", version: VERSION }]) {
    cases.push(base("task.create", { pid: "w1", ttl: 60_000, action: action(nestedHead) }));
  }
  for (const nestedKind of ["promise.get", "task.create", "", 7, null]) cases.push(base("task.fence", { id: "t-root", version: 1, action: action({ corrId: "n", version: VERSION }, nestedKind) }));
  cases.push(base("task.suspend", { id: "t-root", version: 1, actions: Array.from({ length: 200 }, () => action({ corrId: "n", version: VERSION }, "promise.register_callback", { awaited: "p-pending", awaiter: "t-root" })) }));
  // The envelope itself.
  for (const kind of ["", "promise.delete", "debug.reset", "debug.tick", 7, null, ["promise.get"], "x".repeat(2_000), "promise.get\u0000", "\ud800"]) cases.push(base(kind as string, plain["promise.get"]));
  for (const head of [undefined, null, [], "h", { version: VERSION }, { corrId: "c" }, { corrId: "c", version: 20260401 }, { corrId: "c", version: VERSION, auth: 1 }, { corrId: "c", version: VERSION, "resonate:debug_time": NOW }]) {
    cases.push({ ...base("promise.get", plain["promise.get"]), body: { kind: "promise.get", head, data: plain["promise.get"] } });
  }
  for (const body of [null, 7, "text", [], [{ kind: "promise.get" }], { kind: "promise.get", head: { corrId: "c", version: VERSION } }, { kind: "promise.get", head: { corrId: "c", version: VERSION }, data: [] }]) {
    cases.push({ body, spoil: "none", contentType: "application/json", authorization: null });
  }
  for (const spoil of ["truncate", "bad-utf8", "cesu-surrogate", "oversize", "bom", "deep"] as const) cases.push({ ...base("promise.create", plain["promise.create"]), spoil });
  for (const contentType of [null, "text/plain", "application/json; charset=latin1", "application/xml"]) cases.push({ ...base("promise.create", plain["promise.create"]), contentType });
  for (const authorization of ["Bearer nobody", "Basic eDp5", "Bearer "]) cases.push({ ...base("promise.get", plain["promise.get"]), authorization });
  return cases;
}

// ---- sending and checking ------------------------------------------------------------------------

/** The body's bytes, and whether the server can parse them (valid UTF-8 JSON within the bounds). */
function bytesOf(request: HostileEnvelope): { readonly bytes: Uint8Array; readonly parsed: { readonly ok: true; readonly value: unknown } | { readonly ok: false } } {
  const text = unraw(JSON.stringify(request.body) ?? "null");
  const encoder = new TextEncoder();
  const parse = (t: string) => {
    try {
      return { ok: true as const, value: JSON.parse(t) as unknown };
    } catch {
      return { ok: false as const };
    }
  };
  // Nesting past 32 levels is refused before parsing.
  const deepest = (t: string) => {
    let depth = 0;
    let max = 0;
    let inString = false;
    for (let i = 0; i < t.length; i++) {
      const c = t[i];
      if (inString) {
        if (c === "\\") i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === "[" || c === "{") max = Math.max(max, ++depth);
      else if (c === "]" || c === "}") depth--;
    }
    return max;
  };
  const judged = (t: string, bytes: Uint8Array) => ({ bytes, parsed: bytes.byteLength > BODY_LIMIT || deepest(t) > 32 ? { ok: false as const } : parse(t) });
  switch (request.spoil) {
    case "none":
      return judged(text, encoder.encode(text));
    case "truncate":
      return { bytes: encoder.encode(text.slice(0, Math.max(1, text.length - 3))), parsed: { ok: false } };
    case "bad-utf8":
      return { bytes: new Uint8Array([...encoder.encode(text.slice(0, 10)), 0xff, 0xfe, ...encoder.encode(text.slice(10))]), parsed: { ok: false } };
    case "cesu-surrogate": {
      // A lone surrogate written as its 3 bytes (CESU-8): not UTF-8.
      const [before, after] = [text.slice(0, text.length - 1), text.slice(text.length - 1)];
      return { bytes: new Uint8Array([...encoder.encode(before), 0x20, 0xed, 0xa0, 0x80, ...encoder.encode(after)]), parsed: { ok: false } };
    }
    case "oversize": {
      const padded = text.replace(/^\{/, `{"padding":"${"x".repeat(BODY_LIMIT)}",`);
      return { bytes: encoder.encode(padded), parsed: { ok: false } };
    }
    case "bom":
      // A byte-order mark before the JSON: decoded away.
      return judged(text, new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode(text)]));
    case "deep": {
      const nestedText = text.replace(/^\{/, `{"deep":${"[".repeat(10_000)}${"]".repeat(10_000)},`);
      return { bytes: encoder.encode(nestedText), parsed: { ok: false } };
    }
  }
}

const wellFormed = (s: string) => (s as unknown as { isWellFormed(): boolean }).isWellFormed() && !s.includes("\u0000");
const echoable = (value: unknown) => (typeof value === "string" && value.length <= 1_024 && wellFormed(value) ? value : "");
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** What the answer must echo: the body's `kind` and `head.corrId` when the body parsed and they are usable text. */
function expectedEcho(parsed: ReturnType<typeof bytesOf>["parsed"]): { kind: string; corrId: string } {
  if (!parsed.ok || !isObject(parsed.value)) return { kind: "", corrId: "" };
  const head = parsed.value["head"];
  return { kind: echoable(parsed.value["kind"]), corrId: isObject(head) ? echoable(head["corrId"]) : "" };
}

function describeRequest(request: HostileEnvelope): string {
  const text = unraw(JSON.stringify(request.body) ?? "null");
  return `${request.spoil === "none" ? "" : `(${request.spoil}) `}${request.contentType ?? "no content type"}${request.authorization === null ? "" : `, Authorization: ${request.authorization}`}: ${text.length > 300 ? `${text.slice(0, 300)}… (${text.length} chars)` : text}`;
}

/** The requests against one store, and what the store must look like after each. */
class EnvelopeWalk {
  readonly #h: PromiseHarness;
  readonly #store: PromiseStore;
  #current: PromiseSnapshot;
  readonly statuses = new Map<number, number>();

  constructor(h: PromiseHarness, store: PromiseStore, current: PromiseSnapshot) {
    this.#h = h;
    this.#store = store;
    this.#current = current;
  }

  async check(request: HostileEnvelope): Promise<void> {
    const { bytes, parsed } = bytesOf(request);
    const headers: Record<string, string> = {};
    if (request.contentType !== null) headers["content-type"] = request.contentType;
    if (request.authorization !== null) headers["authorization"] = request.authorization;
    const response = await this.#h.server.fetch(new Request("http://127.0.0.1:8001/", { method: "POST", headers, body: bytes as unknown as BodyInit }), { incoming: { socket: { remoteAddress: "127.0.0.1" } } });
    const text = await response.text();
    const what = `${describeRequest(request)} → ${response.status} ${text.slice(0, 300)}`;
    this.statuses.set(response.status, (this.statuses.get(response.status) ?? 0) + 1);
    if (response.status >= 500) throw new Error(`5xx: ${what}`);
    if (!STATUSES.has(response.status)) throw new Error(`a status the listener does not document: ${what}`);
    let body: { kind?: unknown; head?: { corrId?: unknown; status?: unknown; version?: unknown }; data?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new Error(`an answer that is not JSON: ${what}`);
    }
    const echo = expectedEcho(parsed);
    try {
      expect(Object.keys(body).sort()).toEqual(["data", "head", "kind"]);
      expect(body.kind).toBe(echo.kind);
      expect(body.head).toEqual({ corrId: echo.corrId, status: response.status, version: VERSION });
      if (response.status >= 400) expect(typeof body.data).toBe("string");
    } catch (error) {
      throw new Error(`${(error as Error).message.split("\n")[0]}: ${what}`);
    }
    const after = await this.#store.snapshot(NOW);
    if (response.status >= 400) {
      try {
        expect(after).toEqual(this.#current);
      } catch {
        throw new Error(`a refused request changed the store: ${what}`);
      }
    } else this.#current = after;
  }
}

/** A little of everything, so requests that pass the envelope meet real rows. */
async function seed(h: PromiseHarness): Promise<void> {
  const ok = async (kind: string, data: unknown) => {
    const answer = await h.send(kind, data);
    if (answer.status >= 300) throw new Error(`seed ${kind}: ${answer.status} ${JSON.stringify(answer.body)}`);
  };
  const action = (kind: string, data: unknown) => ({ kind, head: { corrId: "seed", version: VERSION }, data });
  await ok("promise.create", { id: "p-pending", timeoutAt: NOW + HOUR, tags: { a: "b" } });
  await ok("promise.create", { id: "p-settled", timeoutAt: NOW + HOUR });
  await ok("promise.settle", { id: "p-settled", state: "resolved", value: { data: "eA==" } });
  await ok("task.create", { pid: "w1", ttl: HOUR, action: action("promise.create", { id: "t-root", timeoutAt: NOW + 2 * HOUR, tags: { "resonate:target": "poll://any@workers" } }) });
  await ok("promise.create", { id: "t-pending", timeoutAt: NOW + 2 * HOUR, tags: { "resonate:target": "poll://any@workers" } });
  await ok("promise.register_listener", { awaited: "p-pending", address: "poll://uni@client/c1" });
  await ok("schedule.create", { id: "s1", cron: "0 * * * *", promiseId: "{{.id}}-{{.timestamp}}", promiseTimeout: 60_000, promiseParam: {}, promiseTags: { "resonate:target": "poll://any@workers" } });
}

const targets = await promiseStoreTargets("apps/server/test/promises-hostile-generated.test.ts");
afterAll(async () => {
  for (const target of targets) await target.end();
});

for (const target of targets) {
  describe.skipIf(!target.available)(`hostile envelopes on the promise listener, ${target.name} (${target.reason})`, () => {
    it("no 5xx; every answer an envelope echoing what parsed, a string data from 400 up; nothing written by a refusal", async () => {
      const started = performance.now();
      const store = await target.create();
      const h = await promiseHarness({ store, bodyLimitBytes: BODY_LIMIT });
      h.clock.time = NOW;
      try {
        await seed(h);
        const walk = new EnvelopeWalk(h, store, await store.snapshot(NOW));
        const fixed = fixedCases();
        for (const request of fixed) await walk.check(request);
        try {
          await fc.assert(
            fc.asyncProperty(hostileRequest, (request) => walk.check(request)),
            { seed: SEED, numRuns: RUNS, endOnFailure: true },
          );
        } catch (error) {
          throw new Error(`seed ${SEED} (replay: BELAY_HOSTILE_SEED=${SEED}): ${(error as Error).message}`);
        }
        const statuses = [...walk.statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`).join(" ");
        console.info(`[hostile envelopes] ${target.name}: ${fixed.length} fixed + ${RUNS} random requests in ${((performance.now() - started) / 1000).toFixed(1)} s (seed ${SEED}); ${statuses}`);
        // The mix reaches past the envelope: some requests are accepted, some refused by the store.
        expect(walk.statuses.get(200) ?? 0).toBeGreaterThan(0);
        expect((walk.statuses.get(404) ?? 0) + (walk.statuses.get(409) ?? 0) + (walk.statuses.get(422) ?? 0)).toBeGreaterThan(0);
      } finally {
        await h.close();
        await target.destroy(store);
      }
    }, 240_000);
  });
}
