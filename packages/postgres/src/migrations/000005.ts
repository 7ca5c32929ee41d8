/**
 * Migration 5 (issue 17), additive: the jobs table keeps half of each page free (fillfactor 50;
 * migration 1 set 90).
 *
 * A job's claim and its outcome each update its row, and neither update can be HOT (the state
 * moves the row between the partial indexes). When the new version does not fit on the row's
 * page, PostgreSQL writes it to another page and logs an extra lock record for the old version;
 * at 90 % that happened for most updates, because a claim updates the rows of a page together, in
 * one statement, before pruning can free their old versions. With room for them, the versions
 * stay on their page and pruning reuses the space. Measured with
 * `bench/src/tools/measure-postgres.ts --shape bench --fillfactor 50|90` (10,000 jobs, 50
 * handlers, four runs each): WAL per 1,000 jobs fell from 1,695–1,705 kB to 1,530–1,536, lock
 * records from 3.5 to 2.1 per job, and the table's heap after processing from 456–457 kB per
 * 1,000 jobs to 356–359 — smaller, not larger, since updates no longer grow the table.
 *
 * Changing the option rewrites nothing: pages written before keep their rows, and later inserts
 * and updates use the new setting. The lock it takes (SHARE UPDATE EXCLUSIVE) lets reads and
 * writes of the table go on, so a rolling deploy can run it beside workers of version 4.
 */
export const migration000005 = (S: string): string => `
ALTER TABLE ${S}.jobs SET (fillfactor = 50);
`;
