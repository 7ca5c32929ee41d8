import { JOB_STATE_CODES, TRANSITION_CAUSE_CODES } from "@belay/contract";
import { migration000003 } from "./000003.js";

/**
 * Migration 6 (issue 17): a job's history moves into its own row, and observers walk a feed of one
 * row per statement. Not additive: it drops `transitions`, which every store of version 5 writes,
 * so it raises `requires` to 6 — stop the workers of version 5 before running it.
 *
 * Why: every state change wrote a `transitions` row with two index entries (its key and the job
 * index), beside the job row's own new version. Measured with `bench/src/tools/layout-probe.ts`
 * (20,000 jobs, WAL by record type), that row was 28 % of the WAL a job's processing writes. Now
 * the UPDATE that moves the state appends the entry to `jobs.history` (JSON text, a few dozen
 * bytes, in the tuple the update writes anyway), and the statement adds one `feed` row for all
 * the jobs it moved. Failure detail goes to `failure_details` by (job, ordinal), so the row does
 * not carry up to 8 KiB of it through every later update.
 *
 * - `jobs.history`: `[[position, cause, xid, worker], …]` newest first, `NULL` for none;
 *   `trim_history` keeps the newest entries when a job passes the cap.
 * - `feed`: (xid, first_position) keyed, the walk's order, with the arrays of what moved and the
 *   instant; a history entry's ordinal, state, attempt and instant are read from it by (xid,
 *   position). A feed row leaves with the last of its jobs: the purge deletes the rows its
 *   victims' histories name, and a sweep (`feed_sweep` holds where it stands) walks the feed a
 *   batch at a time for rows whose jobs are all gone, which the purge cannot see (entries dropped
 *   beyond the cap, rows shared by two concurrent purges' victims).
 * - `transition_positions`: the positions, continuing above every position ever handed out.
 *   An observer's stored cursor (xid, position) keeps its place.
 * - The existing transitions are copied: each job's into its history, each into a feed row of its
 *   own, each failure detail into `failure_details`; then `transitions` is dropped.
 * - `add_job` is replaced by the same function writing the new way.
 *
 * The copy runs in the migration's transaction and holds its locks until commit: on a large log,
 * run it in a maintenance window.
 */
export const migration000006 = (S: string): string => `
CREATE SEQUENCE ${S}.transition_positions AS bigint;
-- Above every position ever handed out, not only those still stored (the newest may have been
-- purged): observers' cursors, deliveries and dead letters name positions too.
SELECT setval('${S}.transition_positions', greatest(
  (SELECT max(position) FROM ${S}.transitions),
  pg_sequence_last_value(pg_get_serial_sequence('${S}.transitions', 'position')::regclass),
  (SELECT max(cursor_position) FROM ${S}.observers),
  (SELECT max(position) FROM ${S}.observer_deliveries),
  (SELECT max(position) FROM ${S}.observer_dead_letters),
  0) + 1, false);

ALTER TABLE ${S}.jobs ADD COLUMN history text;

CREATE TABLE ${S}.feed (
  xid xid8 NOT NULL,
  first_position bigint NOT NULL,
  at bigint NOT NULL,
  positions bigint[] NOT NULL,
  job_seqs bigint[] NOT NULL,
  ordinals integer[] NOT NULL,
  states smallint[] NOT NULL,
  attempts integer[] NOT NULL,
  PRIMARY KEY (xid, first_position)
) WITH (toast_tuple_target = 8160);

-- Where the maintainer's sweep for feed rows whose jobs are all gone stands (see the purge).
CREATE TABLE ${S}.feed_sweep (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  xid xid8 NOT NULL,
  first_position bigint NOT NULL
);
INSERT INTO ${S}.feed_sweep (xid, first_position) VALUES ('0', -1);

CREATE TABLE ${S}.failure_details (
  job_seq bigint NOT NULL,
  ordinal integer NOT NULL,
  detail text NOT NULL,
  PRIMARY KEY (job_seq, ordinal)
);

CREATE FUNCTION ${S}.trim_history(history text, keep integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
'SELECT ''['' || string_agg(e.value::text, '','' ORDER BY e.o) || '']''
   FROM json_array_elements(history::json) WITH ORDINALITY AS e(value, o)
  WHERE e.o <= keep';

UPDATE ${S}.jobs j SET history = h.entries
FROM (
  SELECT t.job_seq, '[' || string_agg(format('[%s,%s,%s,%s]', t.position, coalesce(t.cause::text, 'null'), t.xid,
           coalesce(to_json(t.worker_id)::text, 'null')), ',' ORDER BY t.ordinal DESC) || ']' AS entries
  FROM ${S}.transitions t GROUP BY t.job_seq
) h
WHERE h.job_seq = j.seq;

INSERT INTO ${S}.feed (xid, first_position, at, positions, job_seqs, ordinals, states, attempts)
SELECT xid, position, at, ARRAY[position], ARRAY[job_seq], ARRAY[ordinal], ARRAY[state], ARRAY[attempt] FROM ${S}.transitions;

INSERT INTO ${S}.failure_details (job_seq, ordinal, detail)
SELECT job_seq, ordinal, failure_detail FROM ${S}.transitions WHERE failure_detail IS NOT NULL;

DROP TABLE ${S}.transitions;
${addJobWritingHistory(S)}`;

/** Migration 3's `add_job`, replaced, its first transition written into the row and the feed. */
function addJobWritingHistory(S: string): string {
  const entry = `'[[' || v_position || ',${TRANSITION_CAUSE_CODES.enqueued},' || pg_current_xact_id() || ',null]]'`;
  return replaceOnce(
    replaceOnce(
      replaceOnce(
        replaceOnce(
          migration000003(S),
          `CREATE FUNCTION ${S}.add_job(`,
          `CREATE OR REPLACE FUNCTION ${S}.add_job(`,
        ),
        `transition_count, retry, payload)\n  VALUES (`,
        `transition_count, retry, payload, history)\n  VALUES (`,
      ),
      `1, v_retry, v_payload)\n  ON CONFLICT (id) DO NOTHING`,
      `1, v_retry, v_payload, ${entry})\n  ON CONFLICT (id) DO NOTHING`,
    ),
    /  INSERT INTO \S+\.transitions \(xid, job_seq, ordinal, at, state, attempt, cause\)\n  VALUES \([^\n]*\n/,
    `  INSERT INTO ${S}.feed (xid, first_position, at, positions, job_seqs, ordinals, states, attempts)
  VALUES (pg_current_xact_id(), v_position, v_now, ARRAY[v_position], ARRAY[v_seq], ARRAY[1], ARRAY[${JOB_STATE_CODES.scheduled}::int2], ARRAY[0]);\n`,
  ).replace(/\nDECLARE\n/, () => `\nDECLARE\n  v_position bigint := nextval('${S}.transition_positions');\n`);
}

/** `text` with its one occurrence of `find` replaced; throws when there is not exactly one (migration 3's text is fixed, so this never throws at runtime). */
function replaceOnce(text: string, find: string | RegExp, by: string): string {
  const count = typeof find === "string" ? text.split(find).length - 1 : (text.match(new RegExp(find.source, "g")) ?? []).length;
  if (count !== 1) throw new Error(`migration 6: expected one ${String(find)} in add_job, found ${count}`);
  return text.replace(find, () => by);
}
