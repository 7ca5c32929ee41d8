/**
 * Promise migration 2, additive: the function a write checked against remembered rows calls.
 *
 * A `PostgresPromiseStore` remembers the rows of the promises it last wrote, and an operation whose
 * rows are all remembered skips its load: its write carries what it decided on (each promise's
 * revision, each task's columns, a branch's members), locks those rows and compares them in the
 * same statement (see `src/promise-row-cache.ts`). When anything differs, this function aborts the
 * statement with SQLSTATE BLY02 before any of its changes commit, and the operation runs again
 * with a real load. Version 1 stores never call it, so both versions run side by side.
 *
 * During such a rolling deploy, version 1 processes write as before: a new promise at revision 1,
 * and no revision raised for a promise that becomes the awaiter of a new callback. Two races of
 * theirs with a newer store's remembered rows go unseen: a callback an old process registers for
 * an awaiter at the instant a newer store fulfills that awaiter from memory can stay behind on the
 * fulfilled awaiter (it wakes nothing, and goes when the awaited promise settles), and a promise an
 * old process creates again after a reset can pass for the one remembered. Set `rowCache: 0` on
 * the new processes until the old ones are gone to rule both out.
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
