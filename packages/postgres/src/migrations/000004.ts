/**
 * Migration 4 (issue 17), additive: the maintainer lease, one row that says which worker runs the
 * cluster-wide maintenance (schedule minting, the lease-expiry sweep, purges) and until when.
 * `requires` stays: a store of an earlier version ignores the table and maintains on its own, as
 * before, which is safe beside an elected maintainer. The row exists from the start (free: no
 * holder, expired at 0), so taking the lease is always a compare-and-set update of that row, never
 * a first insert two candidates could race.
 */
export const migration000004 = (S: string): string => `
CREATE TABLE ${S}.maintainer_lease (
  id smallint PRIMARY KEY CHECK (id = 1),
  holder text,
  expires_at bigint NOT NULL
);
INSERT INTO ${S}.maintainer_lease (id, holder, expires_at) VALUES (1, NULL, 0);
`;
