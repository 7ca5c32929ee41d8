/**
 * Migration 3 (issue 17): the maintainer lease, one row that says which worker runs the
 * cluster-wide maintenance (schedule minting, the lease-expiry sweep, purges) and until when.
 * Additive — a new table, `requires` unchanged — so a store still at version 2 keeps running
 * against the file (it maintains on its own, as before, which is safe beside an elected one).
 * The row exists from the start (free: no holder, expired at 0), so taking the lease is always an
 * update of that row, never a first insert two candidates could race.
 */
export const MIGRATION_000003 = `
CREATE TABLE "{prefix}maintainer_lease" (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  holder TEXT,
  expires_at INTEGER NOT NULL
);
INSERT INTO "{prefix}maintainer_lease" (id, holder, expires_at) VALUES (1, NULL, 0);
`;
