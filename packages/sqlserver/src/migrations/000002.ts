import { COLUMN_BYTES } from "../sqlserver-store-config.js";

/**
 * Migration 2 (issue 17), additive: the maintainer lease, one row that says which worker runs the
 * cluster-wide maintenance (schedule minting, the lease-expiry sweep, purges) and until when. The
 * holder is a worker id, stored like `lease_owner` (its UTF-8 bytes). `requires` stays: a store of
 * version 1 ignores the table and maintains on its own, which is safe beside an elected
 * maintainer. The row exists from the start (free: no holder, expired at 0), so taking the lease
 * is always an update of that row under its lock, never a first insert two candidates could race.
 */
export const migration000002 = (S: string): string => `
CREATE TABLE ${S}.maintainer_lease (
  id tinyint NOT NULL CONSTRAINT maintainer_lease_pk PRIMARY KEY CONSTRAINT maintainer_lease_one CHECK (id = 1),
  holder varbinary(${COLUMN_BYTES.id}) NULL,
  expires_at bigint NOT NULL
);
INSERT INTO ${S}.maintainer_lease (id, holder, expires_at) VALUES (1, NULL, 0);
`;
