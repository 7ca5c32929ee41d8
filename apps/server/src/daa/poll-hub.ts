import type { OutboxFilter } from "@belay/contract";
import type { DeliveryAddress } from "./addresses.js";

// The pollers connected to this process (`GET /poll/:group/:id`, Server-Sent Events), by group
// and id, and the routing of `poll://` addresses to them. A bounded number of pollers: past the
// capacity a new one is refused (503), so a flood of connections cannot exhaust the process.
// `outboxFilter()` names what they can take, so the outbox drain takes only that.

/** The push targets every process can deliver to (a `http(s)://` URL, POSTed). */
const PUSH_PREFIXES = Object.freeze(["http://", "https://", "HTTP://", "HTTPS://"]);

/** One connected poller. */
export interface Poller {
  readonly group: string;
  readonly id: string;
  /** Writes one message (`data:` line); `false` when the connection is gone or too slow. */
  send(data: string): Promise<boolean>;
  /** Ends the connection. */
  close(): void;
}

/** The pollers of this process. */
export class PollHub {
  readonly capacity: number;
  /** group → id → pollers with that id, newest last (a reconnect may overlap the old connection). */
  readonly #groups = new Map<string, Map<string, Poller[]>>();
  /** Where `any@group` routing last left off, per group. */
  readonly #cursor = new Map<string, number>();
  readonly #onConnect: () => void;
  #size = 0;
  #filter: OutboxFilter | null = null;

  constructor(capacity: number, onConnect: () => void = () => {}) {
    this.capacity = capacity;
    this.#onConnect = onConnect;
  }

  get size(): number {
    return this.#size;
  }

  /** Registers a poller; `false` at capacity (nothing registered). */
  add(poller: Poller): boolean {
    if (this.#size >= this.capacity) return false;
    let ids = this.#groups.get(poller.group);
    if (ids === undefined) this.#groups.set(poller.group, (ids = new Map()));
    const list = ids.get(poller.id);
    if (list === undefined) ids.set(poller.id, [poller]);
    else list.push(poller);
    this.#size++;
    this.#filter = null;
    this.#onConnect();
    return true;
  }

  remove(poller: Poller): void {
    const ids = this.#groups.get(poller.group);
    const list = ids?.get(poller.id);
    const at = list?.indexOf(poller) ?? -1;
    if (at < 0) return;
    list!.splice(at, 1);
    this.#size--;
    this.#filter = null;
    if (list!.length === 0) ids!.delete(poller.id);
    if (ids!.size === 0) {
      this.#groups.delete(poller.group);
      this.#cursor.delete(poller.group);
    }
  }

  /**
   * The poller a `poll://` address reaches now, or `null`: `uni@group/id` only that id's;
   * `any@group/id` that id's, else the group's next (round robin); `any@group` the group's next.
   */
  pick(address: Extract<DeliveryAddress, { kind: "poll" }>): Poller | null {
    const ids = this.#groups.get(address.group);
    if (ids === undefined) return null;
    if (address.id !== null) {
      const own = ids.get(address.id);
      if (own !== undefined && own.length > 0) return own[own.length - 1]!;
      if (address.mode === "uni") return null;
    }
    const all = [...ids.values()];
    if (all.length === 0) return null;
    const next = (this.#cursor.get(address.group) ?? 0) % all.length;
    this.#cursor.set(address.group, next + 1);
    const list = all[next]!;
    return list[list.length - 1]!;
  }

  /**
   * The outbox messages this process can deliver now: for each connected poller (group G, id ID)
   * `poll://uni@G/ID`, `poll://any@G` and every `poll://any@G/…` (any poller of the group takes
   * those when their own id is elsewhere); and every `http(s)://` push target.
   */
  outboxFilter(): OutboxFilter {
    if (this.#filter !== null) return this.#filter;
    const addresses: string[] = [];
    const prefixes: string[] = [...PUSH_PREFIXES];
    for (const [group, ids] of this.#groups) {
      addresses.push(`poll://any@${group}`);
      prefixes.push(`poll://any@${group}/`);
      for (const id of ids.keys()) addresses.push(`poll://uni@${group}/${id}`);
    }
    this.#filter = { addresses, prefixes };
    return this.#filter;
  }

  /** Ends every connection. */
  closeAll(): void {
    for (const ids of [...this.#groups.values()]) for (const list of [...ids.values()]) for (const poller of [...list]) poller.close();
  }
}
