import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { DELAY_PROXY_SOURCE } from "./delay-proxy-source.js";

/**
 * Network namespaces between worker processes and a database, for tests and benchmarks that must
 * cross a real (virtual) network: each worker namespace gets a veth pair to the namespace this
 * process runs in (where the database is), loopback-range addresses only (`127.77.X.4i+2` on the
 * worker's end, `127.77.X.4i+1` on this end, a /30 each), and a forwarder on this end of every
 * pair that relays TCP to the database (which may listen on a unix socket only).
 *
 * Added latency, each way, comes from `tc qdisc … netem delay` on both ends of each pair when the
 * kernel has `sch_netem`; when it has not, the forwarder itself holds every chunk for the delay
 * before passing it on — a userspace delay proxy, not netem: {@link NetworkNamespaces.delayKind}
 * says which, and {@link createNetworkNamespaces} prints it loudly.
 *
 * Needs root and iproute2 (`ip`); without them {@link createNetworkNamespaces} throws a
 * {@link NetnsUnavailableError} naming what is missing. Names are unique per run and carry this
 * process's PID, so a run that died without cleaning up is swept by the next one.
 */
export interface NetworkNamespaceOptions {
  /** How many worker namespaces (each with its own veth pair). */
  readonly count: number;
  /** Latency added each way between a worker namespace and the database, ms (0 = none). */
  readonly delayMs: number;
  /** Where the database listens, from this namespace: a unix socket path or a TCP address. */
  readonly upstream: { readonly path: string } | { readonly host: string; readonly port: number };
  /** Prefix of the namespaces' names (default `belay`). */
  readonly prefix?: string;
  /** Force the userspace delay proxy even where netem works (to compare the two). */
  readonly forceProxy?: boolean;
  /** Where the loud line about the delay's kind goes (default console.warn). */
  readonly log?: (line: string) => void;
}

/** One worker namespace. */
export interface WorkerNamespace {
  /** The namespace's name (`ip netns exec <name> …`). */
  readonly name: string;
  /** This process's end of the veth pair (an interface of this namespace). */
  readonly hostInterface: string;
  /** The worker's address inside the namespace. */
  readonly address: string;
  /** Where the worker reaches the database: the forwarder on this end of the pair. */
  readonly databaseHost: string;
  readonly databasePort: number;
}

/** What {@link createNetworkNamespaces} built; {@link NetworkNamespaces.close} removes all of it. */
export interface NetworkNamespaces {
  readonly namespaces: readonly WorkerNamespace[];
  readonly delayMs: number;
  /** How the delay is added: `netem` (kernel qdisc on both veth ends), `userspace-proxy`, or `none`. */
  readonly delayKind: "netem" | "userspace-proxy" | "none";
  /** Why the delay is added the way it is (e.g. the tc error when netem is missing). */
  readonly delayNote: string;
  /** The argv prefix that runs a command inside namespace `index`: `["ip", "netns", "exec", name]`. */
  exec(index: number): readonly string[];
  /** `url` with its host and port replaced by namespace `index`'s way to the database (unix-socket `host=` parameter dropped). */
  connectionString(index: number, url: string): string;
  /** Bytes that crossed namespace `index`'s veth pair so far (this end's counters). */
  traffic(index: number): { readonly rxBytes: number; readonly txBytes: number };
  /** CPU time the forwarder process used so far, ms (it also adds the delay when delayKind is userspace-proxy). */
  forwarderCpuMs(): number;
  /** Stops the forwarder and deletes every namespace and veth pair. Idempotent; never throws. */
  close(): void;
}

/** The namespaces could not be made: not root, no `ip`, or the kernel refused. */
export class NetnsUnavailableError extends Error {
  readonly code = "BELAY_NETNS_UNAVAILABLE";
  constructor(
    readonly reason: string,
    readonly step: string,
  ) {
    super(`network namespaces unavailable (${step}): ${reason}`);
    this.name = "NetnsUnavailableError";
  }
}

/** Why network namespaces cannot be made here, or null when they can (root and `ip` present). */
export function netnsUnavailableReason(): string | null {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return "not running as root (ip netns needs CAP_SYS_ADMIN and CAP_NET_ADMIN)";
  const ip = spawnSync("ip", ["-V"], { encoding: "utf8" });
  if (ip.error) return `iproute2's \`ip\` is not runnable: ${ip.error.message}`;
  return null;
}

/**
 * Where a PostgreSQL URL points, as a forwarder's upstream: its unix socket (`?host=/dir` or a
 * host starting with `/`, socket `.s.PGSQL.<port>`) or its TCP host and port (default 5432).
 */
export function databaseUpstream(url: string): NetworkNamespaceOptions["upstream"] {
  const u = new URL(url);
  const port = Number(u.port || 5432);
  const socketDir = u.searchParams.get("host") ?? (decodeURIComponent(u.hostname).startsWith("/") ? decodeURIComponent(u.hostname) : null);
  if (socketDir !== null && socketDir.startsWith("/")) return { path: `${socketDir}/.s.PGSQL.${port}` };
  return { host: u.hostname === "localhost" || u.hostname === "" ? "127.0.0.1" : u.hostname, port };
}

function run(step: string, cmd: string, args: readonly string[]): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 30_000 });
  if (r.error) throw new NetnsUnavailableError(r.error.message, step);
  if (r.status !== 0) throw new NetnsUnavailableError(`${cmd} ${args.join(" ")} exited ${r.status}: ${(r.stderr || r.stdout).trim()}`, step);
  return r.stdout;
}

const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Deletes namespaces `<prefix>-<pid>-…` whose creating process is gone (a run killed before its cleanup). */
function sweepStale(prefix: string): void {
  const listed = spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout ?? "";
  for (const line of listed.split("\n")) {
    const name = line.split(" ")[0] ?? "";
    const m = new RegExp(`^${prefix}-(\\d+)-[0-9a-f]+-w\\d+$`).exec(name);
    if (m && !pidAlive(Number(m[1]))) spawnSync("ip", ["netns", "delete", name]);
  }
}

/** A third octet no interface of this namespace uses in 127.77.0.0/16. */
function freeOctet(): number {
  const used = new Set<number>();
  const addrs = spawnSync("ip", ["-4", "-o", "addr", "show"], { encoding: "utf8" }).stdout ?? "";
  for (const m of addrs.matchAll(/inet 127\.77\.(\d+)\./g)) used.add(Number(m[1]));
  for (let tries = 0; tries < 512; tries++) {
    const x = randomBytes(1)[0]!;
    if (!used.has(x)) return x;
  }
  throw new NetnsUnavailableError("every 127.77.X.0/24 is in use", "choosing addresses");
}

const setSysctl = (iface: string, key: string, value: string): void => {
  const path = `/proc/sys/net/ipv4/conf/${iface}/${key}`;
  if (existsSync(path)) writeFileSync(path, value);
};

function tryNetem(ns: string | null, iface: string, delayMs: number): { ok: true } | { ok: false; error: string } {
  const args = [...(ns ? ["-n", ns] : []), "qdisc", "add", "dev", iface, "root", "netem", "delay", `${delayMs}ms`];
  const r = spawnSync("tc", args, { encoding: "utf8" });
  if (r.error) return { ok: false, error: `tc: ${r.error.message}` };
  return r.status === 0 ? { ok: true } : { ok: false, error: `tc ${args.join(" ")}: ${(r.stderr || r.stdout).trim()}` };
}

/**
 * Builds `count` worker namespaces with a way to the database from each. Throws
 * {@link NetnsUnavailableError} when that cannot be done; on any failure what was made is removed.
 *
 * @example
 * const net = await createNetworkNamespaces({ count: 1, delayMs: 5, upstream: { path: "/run/postgresql/.s.PGSQL.5432" } });
 * try {
 *   spawn(net.exec(0)[0], [...net.exec(0).slice(1), process.execPath, "worker.js"], { env: { URL: net.connectionString(0, url) } });
 * } finally {
 *   net.close();
 * }
 */
export async function createNetworkNamespaces(options: NetworkNamespaceOptions): Promise<NetworkNamespaces> {
  const why = netnsUnavailableReason();
  if (why !== null) throw new NetnsUnavailableError(why, "prerequisites");
  if (!Number.isInteger(options.count) || options.count < 1 || options.count > 60) throw new RangeError(`count must be an integer 1..60, got ${options.count}`);
  if (!Number.isFinite(options.delayMs) || options.delayMs < 0) throw new RangeError(`delayMs must be ≥ 0, got ${options.delayMs}`);
  const prefix = options.prefix ?? "belay";
  const say = options.log ?? ((line: string) => console.warn(line));
  sweepStale(prefix);

  const id = randomBytes(3).toString("hex");
  const octet = freeOctet();
  const namespaces: { name: string; hostInterface: string; address: string; databaseHost: string }[] = [];
  let forwarder: ChildProcess | null = null;
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    process.off("exit", close);
    if (forwarder?.pid && forwarder.exitCode === null && forwarder.signalCode === null) {
      try {
        forwarder.kill("SIGKILL");
      } catch {
        /* gone */
      }
    }
    for (const ns of namespaces) {
      // Deleting the namespace removes the veth's peer and with it the pair.
      spawnSync("ip", ["link", "delete", ns.hostInterface]);
      spawnSync("ip", ["netns", "delete", ns.name]);
    }
  };
  process.on("exit", close);

  try {
    for (let i = 0; i < options.count; i++) {
      const name = `${prefix}-${process.pid}-${id}-w${i}`;
      const hostInterface = `bl${id}w${i}`;
      const address = `127.77.${octet}.${4 * i + 2}`;
      const databaseHost = `127.77.${octet}.${4 * i + 1}`;
      run("ip netns add", "ip", ["netns", "add", name]);
      namespaces.push({ name, hostInterface, address, databaseHost });
      run("veth pair", "ip", ["link", "add", hostInterface, "type", "veth", "peer", "name", "veth0", "netns", name]);
      run("host address", "ip", ["addr", "add", `${databaseHost}/30`, "dev", hostInterface]);
      run("host link up", "ip", ["link", "set", hostInterface, "up"]);
      // 127/8 on an interface other than lo is a martian unless route_localnet allows it.
      setSysctl(hostInterface, "route_localnet", "1");
      run("namespace lo up", "ip", ["-n", name, "link", "set", "lo", "up"]);
      run("namespace address", "ip", ["-n", name, "addr", "add", `${address}/30`, "dev", "veth0"]);
      run("namespace link up", "ip", ["-n", name, "link", "set", "veth0", "up"]);
      run("namespace route_localnet", "ip", ["netns", "exec", name, "sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1", "net.ipv4.conf.veth0.route_localnet=1"]);
    }

    let delayKind: NetworkNamespaces["delayKind"] = options.delayMs === 0 ? "none" : "netem";
    let delayNote = options.delayMs === 0 ? "no delay added" : `tc netem delay ${options.delayMs}ms on both ends of each veth pair`;
    if (options.delayMs > 0) {
      const first = options.forceProxy ? ({ ok: false, error: "forceProxy" } as const) : tryNetem(null, namespaces[0]!.hostInterface, options.delayMs);
      if (first.ok) {
        for (const [k, ns] of namespaces.entries()) {
          if (k > 0) run("netem", "tc", ["qdisc", "add", "dev", ns.hostInterface, "root", "netem", "delay", `${options.delayMs}ms`]);
          run("netem", "tc", ["-n", ns.name, "qdisc", "add", "dev", "veth0", "root", "netem", "delay", `${options.delayMs}ms`]);
        }
      } else {
        delayKind = "userspace-proxy";
        delayNote = `NOT netem (${first.error}): a userspace delay proxy in the database's namespace holds every chunk ${options.delayMs} ms each way`;
        say(`[netns] ${delayNote}`);
      }
    }

    // The forwarder: one process, a listener on this end of every pair, relaying to the database.
    const config = {
      listen: namespaces.map((ns) => ({ host: ns.databaseHost, port: 0 })),
      upstream: options.upstream,
      delayMs: delayKind === "userspace-proxy" ? options.delayMs : 0,
    };
    const child = spawn(process.execPath, ["-e", DELAY_PROXY_SOURCE], {
      env: { ...process.env, BELAY_DELAY_PROXY: JSON.stringify(config) },
      stdio: ["pipe", "pipe", "pipe"],
    });
    forwarder = child;
    const ports = await new Promise<number[]>((resolve, reject) => {
      let out = "";
      let err = "";
      const timer = setTimeout(() => reject(new NetnsUnavailableError(`no answer in 30 s: ${err}`, "forwarder")), 30_000);
      child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
      child.stdout!.setEncoding("utf8").on("data", (d: string) => {
        out += d;
        const m = /^listening (\[.*\])$/m.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(JSON.parse(m[1]!) as number[]);
        }
      });
      child.on("exit", (code) => {
        clearTimeout(timer);
        reject(new NetnsUnavailableError(`exited ${code}: ${err.trim()}`, "forwarder"));
      });
    });
    child.stderr!.on("data", (d: string) => process.stderr.write(`[netns forwarder] ${d}`));

    const built: WorkerNamespace[] = namespaces.map((ns, i) => ({ ...ns, databasePort: ports[i]! }));
    return {
      namespaces: built,
      delayMs: options.delayMs,
      delayKind,
      delayNote,
      exec: (index) => ["ip", "netns", "exec", built[index]!.name],
      connectionString(index, url) {
        const u = new URL(url);
        u.hostname = built[index]!.databaseHost;
        u.port = String(built[index]!.databasePort);
        u.searchParams.delete("host");
        return u.toString();
      },
      traffic(index) {
        const read = (k: string) => Number(readFileSync(`/sys/class/net/${built[index]!.hostInterface}/statistics/${k}`, "utf8"));
        return { rxBytes: read("rx_bytes"), txBytes: read("tx_bytes") };
      },
      forwarderCpuMs() {
        try {
          const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
          return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in USER_HZ (100)
        } catch {
          return Number.NaN;
        }
      },
      close,
    };
  } catch (error) {
    close();
    throw error;
  }
}
