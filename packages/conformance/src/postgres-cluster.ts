import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

// A private PostgreSQL cluster started from the local server binaries (initdb + pg_ctl): unix
// socket only, trust auth. The test projects start one each (see postgres-global-setup.ts) and
// the benchmark harness starts its own; both go through this one implementation.

const isRoot = process.getuid?.() === 0;

/** PostgreSQL refuses to run as root: as root, server commands run as the `postgres` OS user. */
function asServerUser(cmd: string, args: readonly string[]): [string, string[]] {
  return isRoot ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, [...args]];
}

function run(cmd: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", env: options.env ?? process.env, timeout: options.timeoutMs ?? 120_000 });
  if (r.error) throw new Error(`${cmd} ${args.join(" ")}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}: ${(r.stderr || r.stdout).trim().slice(-2000)}`);
  return r.stdout;
}

const serverBinaries = ["initdb", "pg_ctl", "postgres"] as const;

function holdsServer(folder: string | undefined): folder is string {
  return folder !== undefined && folder !== "" && serverBinaries.every((b) => existsSync(join(folder, b)));
}

/** Major versions first, newest first: `/usr/lib/postgresql/17/bin`, `/usr/lib/postgresql/15/bin`. */
function debianBinFolders(): string[] {
  try {
    return readdirSync("/usr/lib/postgresql")
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a))
      .map((v) => join("/usr/lib/postgresql", v, "bin"));
  } catch {
    return [];
  }
}

/**
 * The folder holding the local PostgreSQL server binaries (`initdb`, `pg_ctl`, `postgres`), looked
 * for in `$PGBIN`, `pg_config --bindir`, `/usr/lib/postgresql/<newest>/bin`, then `PATH`;
 * `undefined` when there are none.
 */
export function findPostgresBin(): string | undefined {
  const pgConfig = spawnSync("pg_config", ["--bindir"], { encoding: "utf8" });
  const fromPgConfig = pgConfig.status === 0 ? pgConfig.stdout.trim() : undefined;
  for (const folder of [process.env["PGBIN"], fromPgConfig, ...debianBinFolders()]) if (holdsServer(folder)) return folder;
  const which = spawnSync("sh", ["-c", "command -v pg_ctl"], { encoding: "utf8" });
  if (which.status === 0 && which.stdout.trim() !== "") {
    // PATH often holds symlinks (/usr/local/bin/pg_ctl): the server binary sits beside the target.
    const folder = dirname(realpathSync(which.stdout.trim()));
    if (holdsServer(folder)) return folder;
  }
  return undefined;
}

/** Options of {@link PostgresCluster.start}. */
export interface PostgresClusterStartOptions {
  /** Databases to create once the server is up. */
  readonly databases?: readonly string[];
  /** Extra server settings, as `-c name=value` flags in one string. */
  readonly serverOptions?: string;
  /** `initdb --no-sync`: for clusters that are thrown away (no crash safety needed). */
  readonly noSync?: boolean;
}

/**
 * One PostgreSQL cluster in `root`: its data folder, its unix socket folder (no TCP listener at
 * all, so no port can clash) and its log. Trust authentication for the `postgres` role.
 */
export class PostgresCluster {
  readonly root: string;
  readonly data: string;
  readonly sock: string;
  readonly log: string;
  /** The postmaster's PID while the cluster runs. */
  pid: number | null = null;
  /** `postgres --version`, known once started. */
  version = "";

  constructor(
    root: string,
    /** The port number in the socket's name (`.s.PGSQL.<port>`); nothing listens on TCP. */
    readonly port: number,
    /** The folder holding initdb, pg_ctl and postgres (see {@link findPostgresBin}). */
    readonly bin: string,
    private readonly say: (message: string) => void = () => {},
  ) {
    this.root = root;
    this.data = join(root, "data");
    this.sock = join(root, "sock");
    this.log = join(root, "postgres.log");
  }

  /** Environment for the client tools (psql, pgbench) to reach this cluster. */
  get env(): NodeJS.ProcessEnv {
    return { ...process.env, PGHOST: this.sock, PGPORT: String(this.port), PGUSER: "postgres" };
  }

  /** initdb, then pg_ctl start (waiting until it accepts connections), then the databases. */
  start(options: PostgresClusterStartOptions = {}): void {
    mkdirSync(this.sock, { recursive: true });
    if (isRoot) run("chown", ["-R", "postgres", this.root]);
    this.version = run(join(this.bin, "postgres"), ["--version"]).trim();
    const initdb = ["-D", this.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", ...(options.noSync ? ["--no-sync"] : [])];
    run(...asServerUser(join(this.bin, "initdb"), initdb));
    const listen = `-c listen_addresses='' -c port=${this.port} -c unix_socket_directories=${this.sock}`;
    run(
      ...asServerUser(join(this.bin, "pg_ctl"), [
        "-D", this.data, "-l", this.log, "-w", "-t", "120", "start",
        "-o", `${listen} ${options.serverOptions ?? ""}`.trim(),
      ]),
      { timeoutMs: 150_000 },
    );
    this.pid = Number(readFileSync(join(this.data, "postmaster.pid"), "utf8").split("\n")[0]);
    this.say(`postgres up: pid ${this.pid}, socket ${this.sock}/.s.PGSQL.${this.port} (${this.version})`);
    const psql = existsSync(join(this.bin, "psql")) ? join(this.bin, "psql") : "psql";
    for (const db of options.databases ?? []) run(psql, ["-qAt", "-d", "postgres", "-c", `create database ${db}`], { env: this.env });
  }

  /** Stops the cluster (pg_ctl stop, `mode` fast by default), then signals the postmaster if that fails. */
  stop(mode: "fast" | "immediate" = "fast"): void {
    if (this.pid === null) return;
    const pid = this.pid;
    this.pid = null;
    const [cmd, args] = asServerUser(join(this.bin, "pg_ctl"), ["-D", this.data, "-m", mode, "-w", "-t", "30", "stop"]);
    const r = spawnSync(cmd, args, { stdio: "ignore", timeout: 40_000 });
    if (r.status === 0) {
      this.say(`postgres (${pid}) stopped`);
      return;
    }
    for (const sig of ["SIGQUIT", "SIGKILL"] as const) {
      try {
        process.kill(pid, sig);
        this.say(`postgres (${pid}) sent ${sig}`);
      } catch {
        return;
      }
      spawnSync("sleep", ["2"]);
    }
  }

  /** A `pg` connection string to `database` over the unix socket. */
  connectionString(database = "postgres"): string {
    return `postgres://postgres@localhost:${this.port}/${database}?host=${encodeURIComponent(this.sock)}`;
  }
}

/** A new folder the `postgres` OS user can enter (mkdtemp makes it 0700 and root's). */
function scratchFolder(prefix: string): string {
  const path = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(path, 0o755);
  return path;
}

// Stops the cluster and removes its folder once `owner` is gone (or a zombie), however it ended:
// a SIGKILL or a crash skips every 'exit' handler.
const WATCHDOG = `
alive() { kill -0 "$1" 2>/dev/null || return 1; [ -r "/proc/$1/stat" ] || return 0; [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -c1)" != Z ]; }
while alive "$OWNER"; do sleep 1; done
if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$PG_CTL" -D "$DATA" -m immediate -w -t 30 stop; else "$PG_CTL" -D "$DATA" -m immediate -w -t 30 stop; fi >/dev/null 2>&1 || kill -KILL "$POSTMASTER" 2>/dev/null
rm -rf "$SCRATCH"
`;

/** A cluster in its own temp folder, and how to get rid of both. */
export interface ThrowawayPostgresCluster {
  readonly cluster: PostgresCluster;
  /** Where the cluster lives (removed by `cleanup`). */
  readonly scratch: string;
  /**
   * Starts the cluster; from then on it is stopped and its folder removed when this process
   * exits, also on a crash or a SIGKILL (a detached watchdog polls this process's PID).
   */
  start(options?: PostgresClusterStartOptions): void;
  /** Stops the cluster and removes its folder (idempotent). */
  cleanup(): void;
}

/** Options of {@link throwawayPostgresCluster}. */
export interface ThrowawayPostgresClusterOptions {
  /** Name prefix of the temp folder. */
  readonly prefix: string;
  /** The port number in the socket's name (default 5432; nothing listens on TCP). */
  readonly port?: number;
  /** Where the server binaries are (default {@link findPostgresBin}). */
  readonly bin?: string;
  /** Progress lines (started, stopped). */
  readonly log?: (message: string) => void;
}

/**
 * A private PostgreSQL cluster in a new temp folder. Nothing runs until `start()`.
 *
 * @example
 * ```ts
 * const pg = throwawayPostgresCluster({ prefix: "my-tests-" });
 * pg.start({ noSync: true });
 * const url = pg.cluster.connectionString();
 * // … later
 * pg.cleanup();
 * ```
 */
export function throwawayPostgresCluster(options: ThrowawayPostgresClusterOptions): ThrowawayPostgresCluster {
  const bin = options.bin ?? findPostgresBin();
  if (bin === undefined) {
    throw new Error("PostgreSQL server binaries not found: install the PostgreSQL server or set PGBIN to the folder holding initdb, pg_ctl and postgres");
  }
  const scratch = scratchFolder(options.prefix);
  const cluster = new PostgresCluster(join(scratch, "pg"), options.port ?? 5432, bin, options.log);
  let watchdog: number | undefined;
  let done = false;
  const cleanup = (): void => {
    if (done) return;
    done = true;
    process.off("exit", cleanup);
    try {
      // Nothing in it is kept: no shutdown checkpoint needed.
      cluster.stop("immediate");
    } finally {
      if (watchdog !== undefined) {
        try {
          process.kill(-watchdog, "SIGTERM");
        } catch {
          /* already gone */
        }
      }
      rmSync(scratch, { recursive: true, force: true });
    }
  };
  return {
    cluster,
    scratch,
    cleanup,
    start: (startOptions) => {
      process.on("exit", cleanup);
      try {
        cluster.start(startOptions);
      } catch (error) {
        // A half-started cluster (initdb done, pg_ctl timed out) still has a postmaster.pid.
        const pidFile = join(cluster.data, "postmaster.pid");
        if (existsSync(pidFile)) cluster.pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
        cleanup();
        throw error;
      }
      const child = spawn("sh", ["-c", WATCHDOG], {
        detached: true,
        stdio: "ignore",
        env: {
          PATH: process.env["PATH"] ?? "/usr/bin:/bin",
          OWNER: String(process.pid),
          POSTMASTER: String(cluster.pid),
          PG_CTL: join(bin, "pg_ctl"),
          DATA: cluster.data,
          SCRATCH: scratch,
        },
      });
      child.unref();
      watchdog = child.pid;
    },
  };
}
