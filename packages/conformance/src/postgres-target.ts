import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import type { ProvidedPostgres } from "./postgres-global-setup.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The project's PostgreSQL, from `postgresGlobalSetup` (absent in projects without it). */
    belayPostgres?: ProvidedPostgres;
  }
}

/**
 * The PostgreSQL server an integration test file runs against. `url` is `undefined` when there
 * is none: the file skips its database tests (outside CI only).
 */
export interface PostgresTarget {
  readonly url: string | undefined;
  /** Where the server came from, or why there is none. */
  readonly reason: string;
  /**
   * Stops what was started for this file by `options.start`; a no-op for an external server and
   * for the project's server of `postgresGlobalSetup` (that one stops when the run ends).
   */
  stop(): Promise<void>;
}

/** Options of {@link postgresTarget}. */
export interface PostgresTargetOptions {
  /**
   * A fallback when `BELAY_TEST_POSTGRES_URL` is unset: starts a server (e.g. a testcontainers
   * container) and returns its target, or `undefined` when it cannot (no container runtime).
   * Called at most once per process.
   */
  readonly start?: () => Promise<PostgresTarget | undefined>;
}

let started: Promise<PostgresTarget | undefined> | undefined;

/**
 * Where a test file gets its PostgreSQL from. In a project whose `globalSetup` is
 * `postgresGlobalSetup` (of `@belay/conformance/postgres`), the project's own server, shared by
 * all its files: `BELAY_TEST_POSTGRES_URL` (a database of the project's own on it), else a
 * throwaway cluster from the local server binaries, else a container — or none, and the file's
 * database tests are skipped (the setup warned loudly; under `CI=true` it failed the run).
 *
 * Elsewhere, in order: `BELAY_TEST_POSTGRES_URL` itself; `options.start()`, when given and it can
 * start one; nothing: the file's database tests are skipped with a loud warning — except under
 * `CI=true`, where this throws, so a missing database fails the run instead of turning into
 * "all green, nothing ran".
 *
 * @example
 * ```ts
 * const target = await postgresTarget("my-bridge.test.ts");
 * describe.skipIf(target.url === undefined)(`my bridge on postgres (${target.reason})`, () => { … });
 * ```
 */
export async function postgresTarget(file: string, options: PostgresTargetOptions = {}): Promise<PostgresTarget> {
  const provided = inject("belayPostgres");
  if (provided !== undefined) {
    if (provided.url !== null) return { url: provided.url, reason: provided.reason, stop: async () => {} };
    console.warn(`[postgres] ${file}: ${provided.reason}. SKIPPING these tests.`);
    return { url: undefined, reason: provided.reason, stop: async () => {} };
  }
  const external = process.env["BELAY_TEST_POSTGRES_URL"];
  if (external) return { url: external, reason: "BELAY_TEST_POSTGRES_URL", stop: async () => {} };
  if (options.start !== undefined) {
    started ??= options.start();
    const target = await started;
    if (target !== undefined) return target;
  }
  const reason = options.start === undefined ? "no BELAY_TEST_POSTGRES_URL" : "no BELAY_TEST_POSTGRES_URL and none could be started";
  const message = `[postgres] ${file}: no PostgreSQL — ${reason}. Set BELAY_TEST_POSTGRES_URL=postgres://user@host:5432/db.`;
  if (process.env["CI"] === "true") throw new Error(`${message} Under CI a missing database fails the run.`);
  console.warn(`${message} SKIPPING these tests.`);
  return { url: undefined, reason, stop: async () => {} };
}

/** A fresh name for a schema (or database) owned by one test file or one test: `belay_test_<prefix>_<hex>`. */
export function randomSchemaName(prefix: string): string {
  return `belay_test_${prefix}_${randomBytes(5).toString("hex")}`;
}
