import type { Statements } from "./connection.js";
import { reserveRevisions } from "./sql/promise-rows.js";

/** Revisions a connection reserves at once, when fewer than {@link REFILL_BELOW} are left. */
export const REVISION_BLOCK = 1024;
/** A group starts by reserving a new block when fewer than this many revisions are left. */
export const REFILL_BELOW = 128;

/**
 * The outbox revisions of one connection (see the outbox in migration 1): every write and take of
 * a message gets a revision no other write or take, on any connection, ever gets, so an
 * acknowledgement or release of an older take never matches a newer message. Drawing each from
 * the `outbox_revision` counter row rewrote that row's page on every commit that wrote a message;
 * instead a connection reserves a block of {@link REVISION_BLOCK} at the start of a group (the
 * counter moves past it, so no other connection can draw from it) and hands revisions out of it.
 *
 * A block is reserved before the group's first savepoint, so it commits or rolls back with the
 * whole group: only once that group has committed is the block the connection's own
 * ({@link OutboxRevisions.committed}); a group that rolled back forgets it
 * ({@link OutboxRevisions.rolledBack}). A write that
 * needs more revisions than are left reserves exactly what it needs from the counter, inside its
 * own savepoint, as every write did before (rolled back with it, never kept). Revisions a
 * rolled-back write used are skipped, not reused; a block a crashed process held is skipped too.
 * Revisions rise within one connection; across connections they are unique, not ordered.
 */
export class OutboxRevisions {
  /** The next revision to hand out and the last of the block it is drawn from (`next > last`: none left). */
  #next = 1;
  #last = 0;
  /** Whether the block was reserved by the open group (it is the connection's only once that group commits). */
  #pending = false;

  /**
   * At the start of a group, inside its transaction and outside any savepoint: a new block when
   * fewer than {@link REFILL_BELOW} are left (those few are skipped, never handed out).
   */
  refill(q: Statements): void {
    if (this.#last - this.#next + 1 >= REFILL_BELOW) return;
    const { revision: last } = q.get(reserveRevisions).get(REVISION_BLOCK) as { revision: number };
    this.#next = last - REVISION_BLOCK + 1;
    this.#last = last;
    this.#pending = true;
  }

  /** `n` consecutive revisions never handed out before; returns the first. */
  take(q: Statements, n: number): number {
    if (this.#last - this.#next + 1 >= n) {
      const first = this.#next;
      this.#next += n;
      return first;
    }
    // More than the block holds: exactly `n` from the counter, rolled back with the write if it is.
    const { revision: last } = q.get(reserveRevisions).get(n) as { revision: number };
    return last - n + 1;
  }

  /** The group committed: a block it reserved is the connection's. */
  committed(): void {
    this.#pending = false;
  }

  /** The group rolled back, and with it the counter's move past a block it reserved: that block is gone. */
  rolledBack(): void {
    if (!this.#pending) return;
    this.#pending = false;
    this.#next = 1;
    this.#last = 0;
  }
}
