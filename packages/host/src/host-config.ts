import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { InvalidInputError } from "@belay/contract";
import { z } from "zod";

const positiveInt = z.number().int().positive();

const groupSchema = z.object({
  name: z.string().min(1),
  queues: z.array(z.union([z.string().min(1), z.object({ name: z.string().min(1), weight: positiveInt })])).min(1),
  dispatch: z.enum(["strict", "weighted"]).optional(),
  poolSize: positiveInt.optional(),
  pumps: positiveInt.optional(),
  claimBatch: positiveInt.optional(),
  prefetch: z.number().int().nonnegative().optional(),
});

/** The worker host's settings, from a JSON config file and/or flags (flags win). */
export const hostConfigSchema = z
  .object({
    store: z.string().min(1),
    jobs: z.string().min(1),
    migrate: z.boolean().default(false),
    groups: z.array(groupSchema).min(1).optional(),
    leaseMs: positiveInt.optional(),
    pollIntervalMs: positiveInt.optional(),
    maxPollIntervalMs: positiveInt.optional(),
    maintenanceIntervalMs: positiveInt.optional(),
    retention: z
      .object({
        succeededOrCancelledMs: positiveInt.nullable().optional(),
        deadLetteredOrQuarantinedMs: positiveInt.nullable().optional(),
      })
      .optional(),
    health: z
      .object({
        host: z.string().default("127.0.0.1"),
        port: z.number().int().min(0).max(65_535).default(9464),
      })
      .default({ host: "127.0.0.1", port: 9464 }),
    stopTimeoutMs: positiveInt.default(30_000),
    /** Spans and metrics through `@opentelemetry/api` and the process's registered SDK. */
    opentelemetry: z.boolean().default(false),
  })
  .strict();

export type HostConfig = z.infer<typeof hostConfigSchema>;

const USAGE = `usage: belay-worker --store <url> --jobs <module> [options]

  --store <url>               memory:, sqlite:./belay.db, postgres://user@host:5432/db   (env BELAY_STORE)
  --jobs <module>             a module exporting job definitions                         (env BELAY_JOBS)
  --config <file.json>        settings file (same names as below, plus "groups")
  --migrate                   create or upgrade the store's schema before starting
  --queues <a,b,…>            queues of the single default group ("*" = every queue the jobs name; default)
  --dispatch strict|weighted  dispatch policy of the default group
  --pool-size <n>             handlers per pump (default 20)
  --pumps <n>                 pumps of the default group (default 1)
  --lease-ms <ms>             lease duration (default 60000)
  --poll-interval-ms <ms>     idle poll interval (default 1000)
  --max-poll-interval-ms <ms> adaptive idle backoff ceiling
  --host <addr> --port <n>    health and metrics listener (default 127.0.0.1:9464; port 0 = any)
  --stop-timeout-ms <ms>      graceful stop deadline on SIGTERM/SIGINT (default 30000)
  --opentelemetry             spans and metrics through @opentelemetry/api and the SDK the
                              process registers (env BELAY_OPENTELEMETRY=1)`;

/** Parses argv (+ env + config file) into a validated config; throws InvalidInputError naming the field. */
export function parseHostConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): HostConfig {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      store: { type: "string" },
      jobs: { type: "string" },
      config: { type: "string" },
      migrate: { type: "boolean" },
      queues: { type: "string" },
      dispatch: { type: "string" },
      "pool-size": { type: "string" },
      pumps: { type: "string" },
      "lease-ms": { type: "string" },
      "poll-interval-ms": { type: "string" },
      "max-poll-interval-ms": { type: "string" },
      host: { type: "string" },
      port: { type: "string" },
      "stop-timeout-ms": { type: "string" },
      opentelemetry: { type: "boolean" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) throw new HelpRequested(USAGE);
  let file: Record<string, unknown> = {};
  if (values.config !== undefined) {
    try {
      file = JSON.parse(readFileSync(values.config, "utf8")) as Record<string, unknown>;
    } catch (error) {
      throw new InvalidInputError("config", `cannot read ${values.config}: ${(error as Error).message}`);
    }
  }
  const num = (flag: string, text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isSafeInteger(n)) throw new InvalidInputError(flag, `must be an integer, got ${text}`);
    return n;
  };
  const merged: Record<string, unknown> = { ...file };
  const set = (key: string, value: unknown) => {
    if (value !== undefined) merged[key] = value;
  };
  set("store", values.store ?? (file["store"] as string | undefined) ?? env["BELAY_STORE"]);
  set("jobs", values.jobs ?? (file["jobs"] as string | undefined) ?? env["BELAY_JOBS"]);
  if (values.migrate) merged["migrate"] = true;
  if (values.opentelemetry || (file["opentelemetry"] === undefined && truthy(env["BELAY_OPENTELEMETRY"]))) merged["opentelemetry"] = true;
  set("leaseMs", num("--lease-ms", values["lease-ms"]));
  set("pollIntervalMs", num("--poll-interval-ms", values["poll-interval-ms"]));
  set("maxPollIntervalMs", num("--max-poll-interval-ms", values["max-poll-interval-ms"]));
  set("stopTimeoutMs", num("--stop-timeout-ms", values["stop-timeout-ms"]));
  if (values.host !== undefined || values.port !== undefined) {
    const health = (file["health"] ?? {}) as Record<string, unknown>;
    merged["health"] = {
      ...health,
      ...(values.host === undefined ? {} : { host: values.host }),
      ...(values.port === undefined ? {} : { port: num("--port", values.port) }),
    };
  }
  if (values.queues !== undefined || values["pool-size"] !== undefined || values.pumps !== undefined || values.dispatch !== undefined) {
    if (file["groups"] !== undefined) throw new InvalidInputError("queues", "give a default group's flags or config groups, not both");
    merged["groups"] = [
      {
        name: "default",
        queues: (values.queues ?? "*").split(",").filter((q) => q.length > 0),
        ...(values.dispatch === undefined ? {} : { dispatch: values.dispatch }),
        ...(values["pool-size"] === undefined ? {} : { poolSize: num("--pool-size", values["pool-size"]) }),
        ...(values.pumps === undefined ? {} : { pumps: num("--pumps", values.pumps) }),
      },
    ];
  }
  const parsed = hostConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InvalidInputError(issue.path.join(".") || "config", issue.message);
  }
  return parsed.data;
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && ["1", "true", "yes", "on"].includes(value.toLowerCase());
}

/** Thrown for `--help`: the usage text is the message. */
export class HelpRequested extends Error {}
