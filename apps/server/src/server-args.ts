import { parseArgs } from "node:util";
import { InvalidInputError } from "@belay/contract";
import { HelpRequested } from "@belay/host";
import { SESSION_SECRET_MIN_LENGTH } from "./auth/sessions.js";
import { type ServerToken, parseToken, parseTokenList } from "./auth/tokens.js";

/** What `belay-server` runs with. */
export interface ServerArgs {
  readonly store: string;
  readonly host: string;
  readonly port: number;
  readonly migrate: boolean;
  readonly withWorker: boolean;
  /** A jobs module: its definitions validate enqueues; with `withWorker` the embedded worker runs them. */
  readonly jobs: string | null;
  readonly tokens: readonly ServerToken[];
  readonly title: string | null;
  /** Seals the dashboard's session cookies; `null`: a random one per process (a restart signs everybody out). */
  readonly sessionSecret?: string | null;
  /** The durable-promise listener's address (the Resonate envelope); `port: null` runs none. */
  readonly promises: { readonly host: string; readonly port: number | null };
  /** Debug mode of the promise listener: the debug kinds and `resonate:debug_time` are answered. */
  readonly debug: boolean;
}

/** The text `belay-server --help` prints. */
export const SERVER_USAGE = `usage: belay-server --store <url> [options]

  --store <url>            memory:, sqlite:./belay.db, postgres://user@host:5432/db      (env BELAY_STORE)
  --host <addr>            listen address (default 127.0.0.1)
  --port <n>               listen port (default 8080; 0 = any free port)                 (env PORT)
  --migrate                create or upgrade the store's schema first
  --jobs <module>          job definitions: validate enqueued payloads, default queues  (env BELAY_JOBS)
  --with-worker            also run the jobs module's handlers in this process
  --token <name:secret[:permissions]>
                           a bearer token (repeatable); the name is the audit actor; permissions
                           default to all: view,viewSensitive,enqueue,cancel,requeue,pauseQueue,
                           triggerSchedule,manageSchedules,promises                       (env BELAY_SERVER_TOKENS)
  --title <text>           the dashboard's title (default Belay)
  --session-secret <text>  seals the dashboard's session cookies (at least 32 characters); the
                           same secret across restarts and instances keeps browsers signed in
                           (default: random per process)                           (env BELAY_SESSION_SECRET)
  --promises-host <addr>   the durable-promise listener's address (default 127.0.0.1)
  --promises-port <n|off>  its port: the Resonate protocol (2026-04-01) for @resonatehq/sdk
                           clients (default 8001; 0 = any free port; off = none)     (env BELAY_PROMISES_PORT)
  --debug                  answer the protocol's debug kinds and resonate:debug_time (for trace
                           checkers; never in production)`;

/** Thrown for `--help`: the usage text is the message (a `HelpRequested`, as the worker host's is). */
export class ServerHelpRequested extends HelpRequested {}

/** Parses argv and the environment; throws `InvalidInputError` naming the flag at fault. */
export function parseServerArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServerArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        store: { type: "string" },
        host: { type: "string" },
        port: { type: "string" },
        migrate: { type: "boolean" },
        jobs: { type: "string" },
        "with-worker": { type: "boolean" },
        token: { type: "string", multiple: true },
        title: { type: "string" },
        "session-secret": { type: "string" },
        "promises-host": { type: "string" },
        "promises-port": { type: "string" },
        debug: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (error) {
    throw new InvalidInputError("argv", (error as Error).message);
  }
  if (values.help) throw new ServerHelpRequested(SERVER_USAGE);
  const store = values.store ?? env["BELAY_STORE"];
  if (store === undefined || store.length === 0) throw new InvalidInputError("--store", "is required (memory:, sqlite:./belay.db, postgres://…)");
  const portText = values.port ?? env["PORT"] ?? "8080";
  const port = Number(portText);
  if (!Number.isSafeInteger(port) || port < 0 || port > 65_535) throw new InvalidInputError("--port", `must be 0..65535, got ${portText}`);
  const promisesPortText = values["promises-port"] ?? env["BELAY_PROMISES_PORT"] ?? "8001";
  let promisesPort: number | null = null;
  if (promisesPortText !== "off") {
    promisesPort = Number(promisesPortText);
    if (!/^\d+$/.test(promisesPortText) || promisesPort > 65_535) throw new InvalidInputError("--promises-port", `must be 0..65535 or off, got ${promisesPortText}`);
  }
  const jobs = values.jobs ?? env["BELAY_JOBS"] ?? null;
  const withWorker = values["with-worker"] ?? false;
  if (withWorker && jobs === null) throw new InvalidInputError("--jobs", "--with-worker needs --jobs <module>");
  const tokens = [
    ...(env["BELAY_SERVER_TOKENS"] ? parseTokenList(env["BELAY_SERVER_TOKENS"]) : []),
    ...(values.token ?? []).map((t) => parseToken(t, "--token")),
  ];
  const sessionSecret = values["session-secret"] ?? env["BELAY_SESSION_SECRET"] ?? null;
  if (sessionSecret !== null && sessionSecret.length < SESSION_SECRET_MIN_LENGTH) {
    throw new InvalidInputError("--session-secret", `must be at least ${SESSION_SECRET_MIN_LENGTH} characters, got ${sessionSecret.length} (for example: openssl rand -base64 32)`);
  }
  return {
    store,
    host: values.host ?? "127.0.0.1",
    port,
    migrate: values.migrate ?? false,
    withWorker,
    jobs,
    tokens,
    title: values.title ?? null,
    sessionSecret,
    promises: { host: values["promises-host"] ?? "127.0.0.1", port: promisesPort },
    debug: values.debug ?? false,
  };
}
