import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { InvalidInputError } from "@belay/contract";
import type { AnyJobDefinition, ObserverOptions, ScheduleOptions } from "@belay/core";

/** What a jobs module gives a host. */
export interface JobsModule {
  readonly jobs: readonly AnyJobDefinition[];
  readonly observers: readonly ObserverOptions[];
  /** Schedules the host upserts at start (redefinitions keep their cursors). */
  readonly schedules: readonly ScheduleOptions<AnyJobDefinition>[];
}

function isJobDefinition(value: unknown): value is AnyJobDefinition {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { name?: unknown }).name === "string" &&
    typeof (value as { handler?: unknown }).handler === "function" &&
    typeof (value as { queue?: unknown }).queue === "string"
  );
}

/**
 * Loads a jobs module: every exported job definition (named exports, or arrays of them, or a
 * default export holding them), plus optional `observers` and `schedules` exports.
 *
 * @example
 * ```js
 * // jobs.mjs
 * export const sendWelcome = defineJob({ name: "email.welcome", handler: async () => {} });
 * export const schedules = [{ id: "nightly", cron: "0 3 * * *", job: sendWelcome, payload: undefined }];
 * ```
 */
export async function loadJobsModule(path: string): Promise<JobsModule> {
  if (typeof path !== "string" || path.length === 0) throw new InvalidInputError("jobs", "needs the path of a jobs module");
  const module = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>;
  return jobsFromModule(module, path);
}

/** The job definitions, observers and schedules a module exports. */
export function jobsFromModule(module: Record<string, unknown>, where: string): JobsModule {
  const jobs = new Map<string, AnyJobDefinition>();
  const visit = (value: unknown): void => {
    if (isJobDefinition(value)) jobs.set(value.name, value);
    else if (Array.isArray(value)) value.forEach(visit);
    else if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      for (const inner of Object.values(value)) if (isJobDefinition(inner)) jobs.set(inner.name, inner);
    }
  };
  for (const [name, value] of Object.entries(module)) if (name !== "observers" && name !== "schedules") visit(value);
  const defaults = (module["default"] ?? {}) as Record<string, unknown>;
  const observers = (module["observers"] ?? defaults["observers"] ?? []) as ObserverOptions[];
  const schedules = (module["schedules"] ?? defaults["schedules"] ?? []) as ScheduleOptions<AnyJobDefinition>[];
  if (jobs.size === 0) throw new InvalidInputError("jobs", `${where} exports no job definitions (made with defineJob)`);
  if (!Array.isArray(observers)) throw new InvalidInputError("observers", `${where}: observers must be an array`);
  if (!Array.isArray(schedules)) throw new InvalidInputError("schedules", `${where}: schedules must be an array`);
  return { jobs: [...jobs.values()], observers, schedules };
}
