import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postgresTarget, randomSchemaName } from "@belay/conformance";
import { silentLogger } from "@belay/core";
import type { PromiseRecord } from "@belay/contract";
import { type RunningServer, startServer } from "../src/index.js";
import type { PromiseServerOptions, ServerArgs } from "../src/index.js";

// What the SDK suites share: the polyfill @resonatehq/sdk 0.11.5 needs on Node 20, the stores
// they run on (a SQLite file; a schema of its own on the project's PostgreSQL), a belay-server
// for a store URL, and waits that poll state with generous deadlines.

// The SDK (engines: node >= 22) calls Promise.withResolvers, which Node 20 lacks.
const withResolvers = Promise as unknown as { withResolvers?: () => unknown };
withResolvers.withResolvers ??= function <T>() {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((a, b) => {
    resolve = a;
    reject = b;
  });
  return { promise, resolve, reject };
};

const pg = createRequire(import.meta.url)("pg") as {
  Client: new (config: { connectionString: string }) => { connect(): Promise<void>; query(sql: string): Promise<unknown>; end(): Promise<void> };
};

/** A store URL the SDK suites run against, and how to clean it up. */
export interface StoreUrlTarget {
  readonly name: "sqlite" | "postgres";
  readonly available: boolean;
  readonly reason: string;
  /** A fresh store URL (a new file, a new schema). */
  url(): string;
  /** Removes what `url()` made. */
  cleanup(): Promise<void>;
}

/** SQLite (a temporary file) and PostgreSQL (a schema of its own per URL) for the test file `file`. */
export async function storeUrlTargets(file: string): Promise<readonly StoreUrlTarget[]> {
  const dir = mkdtempSync(join(tmpdir(), "belay-sdk-"));
  let files = 0;
  const sqlite: StoreUrlTarget = {
    name: "sqlite",
    available: true,
    reason: "a file",
    url: () => `sqlite:${join(dir, `belay-${++files}.db`)}`,
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
  const target = await postgresTarget(file);
  const schemas: string[] = [];
  const postgres: StoreUrlTarget = {
    name: "postgres",
    available: target.url !== undefined,
    reason: target.reason,
    url() {
      const url = new URL(target.url!);
      const schema = randomSchemaName("sdk");
      schemas.push(schema);
      url.searchParams.set("schema", schema);
      return url.toString();
    },
    async cleanup() {
      if (target.url !== undefined && schemas.length > 0) {
        const client = new pg.Client({ connectionString: target.url });
        await client.connect();
        for (const schema of schemas.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await client.end();
      }
      await target.stop();
    },
  };
  return [sqlite, postgres];
}

/** A `belay-server` on `store` (migrated), both listeners on free ports; without `tokens`, local callers may use the promise listener. */
export function startTestServer(
  store: string,
  promises: Partial<Omit<PromiseServerOptions, "store" | "tokens" | "debug" | "logger">> = {},
  tokens: ServerArgs["tokens"] = [],
): Promise<RunningServer> {
  const args: ServerArgs = {
    store,
    host: "127.0.0.1",
    port: 0,
    migrate: true,
    withWorker: false,
    jobs: null,
    tokens,
    title: null,
    promises: { host: "127.0.0.1", port: 0 },
    debug: false,
  };
  return startServer(args, { logger: silentLogger, promises: { timerIntervalMs: 250, ...promises } });
}

/** Polls `probe` until it returns something other than `undefined`. */
/** A poller over a real socket: the parsed messages it has received so far, each with when it arrived. */
export async function connectPoller(
  base: string,
  group: string,
  id: string,
): Promise<{ readonly messages: { readonly at: number; readonly message: any }[]; close(): void }> {
  const controller = new AbortController();
  const response = await fetch(`${base}/poll/${encodeURIComponent(group)}/${encodeURIComponent(id)}`, { signal: controller.signal });
  if (response.status !== 200) throw new Error(`poll ${group}/${id}: status ${response.status}`);
  const messages: { at: number; message: any }[] = [];
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          for (const line of event.split("\n")) if (line.startsWith("data: ")) messages.push({ at: Date.now(), message: JSON.parse(line.slice("data: ".length)) });
        }
      }
    } catch {
      // aborted
    }
  })();
  // The first comment line arrives once the server has registered the poller.
  return { messages, close: () => controller.abort() };
}

export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls the promise listener at `url` (`promise.get`) until `id` is settled; answers its record. */
export async function settled(url: string, id: string, timeoutMs = 45_000): Promise<PromiseRecord> {
  let n = 0;
  return until(
    `promise ${id} to settle`,
    async () => {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ kind: "promise.get", head: { corrId: `wait-${++n}`, version: "2026-04-01" }, data: { id } }),
      });
      const body = (await response.json()) as { head: { status: number }; data: { promise: PromiseRecord } };
      return body.head.status === 200 && body.data.promise.state !== "pending" ? body.data.promise : undefined;
    },
    timeoutMs,
  );
}

/** The JSON value in a promise's base64 `data` (the SDK's encoding). */
export function decoded(record: { readonly value: { readonly data?: string } }): unknown {
  return record.value.data === undefined || record.value.data === "" ? undefined : JSON.parse(Buffer.from(record.value.data, "base64").toString("utf8"));
}
