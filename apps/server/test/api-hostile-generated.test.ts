import type { JobStore } from "@belay/contract";
import { snapshot } from "@belay/conformance";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ADMIN, type Harness, VIEWER, harness } from "./helpers.js";
import {
  type HostileRequest, type OpenApiDocument, type Operation, SchemaWalker, describeRequest, fixedCases, operationsOf,
  requestArbitrary, urlOf,
} from "./hostile-requests.js";
import { storeTargets } from "./store-targets.js";

// Every operation of the OpenAPI document the running server serves, walked with hostile input
// on SQLite and PostgreSQL: fixed cases (each odd value in each parameter and body field, each
// bad body kind, one at a time), then seeded random mixes. Each answer must be below 500; each
// 4xx must have the documented error shape and a status the document lists for the operation,
// and must leave the store exactly as it was (a snapshot of everything it shows, before/after).
//
// Replay a failure with BELAY_HOSTILE_SEED=<seed printed>; BELAY_HOSTILE_RUNS sets the random
// requests per operation.

const SEED = Number(process.env["BELAY_HOSTILE_SEED"] ?? 20_240_611);
const RUNS = Number(process.env["BELAY_HOSTILE_RUNS"] ?? 40);
const BODY_LIMIT = 256 * 1024;

const ErrorShape = z
  .object({
    error: z
      .object({
        code: z.string().regex(/^BELAY_[A-Z0-9_]+$/),
        field: z.string().nullable(),
        message: z.string().min(1),
        bound: z.string().optional(),
        limit: z.number().int().optional(),
        actual: z.number().int().optional(),
        state: z.string().optional(),
      })
      .strict(),
  })
  .strict();

/** Seeds a little of everything, so requests that pass validation meet real rows. */
async function seed(h: Harness, store: JobStore): Promise<void> {
  const post = async (method: string, path: string, body?: unknown) => {
    const res = await h.json(method, path, { token: ADMIN, ...(body === undefined ? {} : { body }) });
    if (res.status >= 300) throw new Error(`seed ${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  };
  await post("POST", "/api/v1/jobs", {
    jobs: [
      { id: "j1", jobName: "email.welcome", queue: "mail", tags: ["urgent", "tenant=acme"], payload: { to: "a@example.com" }, delayMs: 3_600_000 },
      { id: "j2", jobName: "email.welcome", queue: "mail", parents: ["j1"] },
      { id: "dl", jobName: "ledger.sync", queue: "dead" },
    ],
  });
  await post("POST", "/api/v1/workflows", { id: "w1", name: "order", jobs: [{ id: "w1-a", jobName: "order.validate", queue: "orders" }] });
  await post("PUT", "/api/v1/schedules/s1", { cron: "0 * * * *", jobName: "report.build", tags: ["nightly"] });
  const now = Date.now();
  await store.claim({ workerId: "seed", queues: ["dead"], max: 1, leaseMs: 60_000, now });
  await store.reportOutcomes({ reports: [{ jobId: "dl", workerId: "seed", attempt: 1, outcome: { type: "failed", retryAt: null, failureDetail: "boom" } }], now });
  await store.registerObserver({ subscription: { observerId: "o1", states: ["deadLettered"] }, now });
}

function send(h: Harness, op: Operation, request: HostileRequest): Promise<Response> {
  const headers: Record<string, string> = {};
  if (request.auth !== "none") headers["authorization"] = `Bearer ${request.auth === "admin" ? ADMIN : VIEWER}`;
  let body: BodyInit | undefined;
  if (request.body.kind === "json") {
    headers["content-type"] = "application/json";
    body = JSON.stringify(request.body.value) ?? "";
  } else if (request.body.kind === "text") {
    if (request.body.contentType !== null) headers["content-type"] = request.body.contentType;
    // A Blob without a type: the request then carries no content-type of its own.
    body = request.body.contentType === null ? new Blob([request.body.text]) : request.body.text;
  }
  return Promise.resolve(h.server.fetch(new Request(`http://belay.test${urlOf(op, request)}`, { method: op.method, headers, ...(body === undefined ? {} : { body }) })));
}

const targets = await storeTargets("api-hostile-generated.test.ts");

for (const target of targets) {
  describe.skipIf(!target.available)(`hostile requests on every documented operation, ${target.name} (${target.reason})`, () => {
    let operations: Operation[];
    let walker: SchemaWalker;
    let routes: readonly { method: string; path: string }[];

    beforeAll(async () => {
      const store = await target.create();
      const h = await harness({ store, bodyLimitBytes: BODY_LIMIT });
      const doc = (await h.json("GET", "/api/v1/openapi.json")).body as OpenApiDocument;
      operations = operationsOf(doc);
      walker = new SchemaWalker(doc);
      routes = h.server.app.routes;
      await h.close();
      await target.destroy(store);
    });
    afterAll(() => target.end());

    it("the document covers every API route the app serves", () => {
      const served = new Set(
        routes
          .filter((r) => r.method !== "ALL" && r.path.startsWith("/api/v1/") && r.path !== "/api/v1/openapi.json")
          .map((r) => `${r.method} ${r.path.replace("/api/v1", "").replace(/:(\w+)/g, "{$1}")}`),
      );
      expect(new Set(operations.map((op) => `${op.method} ${op.template}`))).toEqual(served);
      expect(operations.length).toBeGreaterThanOrEqual(20);
    });

    it("no 5xx, the error shape on every 4xx, only documented statuses, nothing written by a refusal", async () => {
      const started = performance.now();
      let sent = 0;
      for (const [index, op] of operations.entries()) {
        // A store of each operation's own keeps every snapshot small (what earlier operations
        // wrote would be read again by each one).
        const store = await target.create();
        const h = await harness({ store, bodyLimitBytes: BODY_LIMIT });
        try {
          await seed(h, store);
          const walk = new OperationWalk(h, store, op, await snapshot(store));
          for (const request of fixedCases(op, walker)) {
            await walk.check(request);
            sent++;
          }
          const opSeed = SEED + index;
          try {
            await fc.assert(
              fc.asyncProperty(requestArbitrary(op, walker), (request) => walk.check(request)),
              { seed: opSeed, numRuns: RUNS, endOnFailure: true },
            );
          } catch (error) {
            throw new Error(`${op.method} ${op.template}, seed ${opSeed} (replay: BELAY_HOSTILE_SEED=${SEED}): ${(error as Error).message}`);
          }
          sent += RUNS;
          await walk.checkReadsWroteNothing();
        } finally {
          await h.close();
          await target.destroy(store);
        }
      }
      console.info(`[hostile] ${target.name}: ${operations.length} operations, ${sent} requests in ${((performance.now() - started) / 1000).toFixed(1)} s (seed ${SEED})`);
      // Thousands of requests, each with its snapshot checks: ~20 s on a quiet machine, past the
      // project's 60 s on a loaded one.
    }, 300_000);
  });
}

/** The requests of one operation against one store, and what the store must look like after each. */
class OperationWalk {
  readonly #h: Harness;
  readonly #store: JobStore;
  readonly #op: Operation;
  /** The store as last seen: what a refused request must leave. */
  #current: unknown;

  constructor(h: Harness, store: JobStore, op: Operation, current: unknown) {
    this.#h = h;
    this.#store = store;
    this.#op = op;
    this.#current = current;
  }

  /**
   * Sends `request` and checks the answer, throwing on a violation. A refused write is checked
   * against a snapshot at once; reads (which must write nothing at all, whatever they answer)
   * once, after all of the operation's requests: a snapshot per read would be most of the run.
   */
  async check(request: HostileRequest): Promise<void> {
    const op = this.#op;
    const res = await send(this.#h, op, request);
    const text = await res.text();
    const what = `${describeRequest(op, request)} → ${res.status} ${text.slice(0, 300)}`;
    if (res.status >= 500) throw new Error(`5xx: ${what}`);
    if (!op.statuses.has(res.status)) throw new Error(`status not in the document (${[...op.statuses].join(", ")}): ${what}`);
    if (res.status >= 400) {
      if (!/^application\/json/.test(res.headers.get("content-type") ?? "")) throw new Error(`error without JSON: ${what}`);
      const shape = ErrorShape.safeParse(JSON.parse(text));
      if (!shape.success) throw new Error(`error shape ${JSON.stringify(shape.error.issues)}: ${what}`);
      if (op.method === "GET") return;
      const after = await snapshot(this.#store);
      try {
        expect(after).toEqual(this.#current);
      } catch {
        throw new Error(`a refused request changed the store: ${what}`);
      }
    } else if (op.method !== "GET") {
      this.#current = await snapshot(this.#store);
    }
  }

  async checkReadsWroteNothing(): Promise<void> {
    if (this.#op.method !== "GET") return;
    expect(await snapshot(this.#store), `${this.#op.method} ${this.#op.template} wrote to the store`).toEqual(this.#current);
  }
}
