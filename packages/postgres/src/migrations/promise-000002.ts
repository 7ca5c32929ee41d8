/**
 * Promise migration 2, additive: the function a write checked against remembered rows calls.
 *
 * A `PostgresPromiseStore` remembers the rows of the promises it last wrote, and an operation whose
 * rows are all remembered skips its load: its write carries what it decided on (each promise's
 * revision, each task's columns, a branch's members), locks those rows and compares them in the
 * same statement (see `src/promise-row-cache.ts`). When anything differs, this function aborts the
 * statement with SQLSTATE BLY02 before any of its changes commit, and the operation runs again
 * with a real load. Version 1 stores never call it, so both versions run side by side.
 */
export const promiseMigration000002 = (S: string): string => `
CREATE FUNCTION ${S}.promise_rows_changed(changed boolean) RETURNS integer
LANGUAGE plpgsql AS $fn$
BEGIN
  IF changed THEN
    RAISE EXCEPTION 'belay: the rows this write decided on changed' USING ERRCODE = 'BLY02';
  END IF;
  RETURN 1;
END
$fn$;
`;
