import {
  type BoundErrorCode, BOUND_OF_CODE, DEFAULT_BOUNDS, DEPENDENCY_MODE_CODES, JOB_STATE_CODES, MAX_COUNT, MAX_DURATION_MS,
  MAX_INSTANT, MAX_RETRY_DELAYS, TRANSITION_CAUSE_CODES,
} from "@belay/contract";
import { hintChannel } from "../hints.js";

// Every number in the function's checks comes from the contract (its default bounds and ranges)
// and every code from its code tables, so the text this renders is the text released as long as
// those do not change. A change of a default bound therefore needs a new migration that replaces
// the function (CREATE OR REPLACE): a database migrated earlier keeps the function it got.

const B = DEFAULT_BOUNDS;
const STATE = JOB_STATE_CODES;
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const EARLIEST = new Date(0).toISOString();
const LATEST = new Date(MAX_INSTANT).toISOString();

/** A refusal naming `field` (an SQL expression) with the contract's code: SQLSTATE 22023. */
const refuse = (code: string, field: string, message: string) =>
  `RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = ${message}, DETAIL = '${code}', COLUMN = ${field}`;

/** `invalid <field>: <reason>`, as the contract's `InvalidInputError` words it. */
const invalid = (field: string, reason: string) =>
  refuse("BELAY_INVALID_INPUT", field, `'invalid ' || ${field} || ': ' || ${literal(reason)}`);

/** `<field> exceeds <bound>: <actual> > <limit>`, as the contract's `boundRejection` words it. */
const exceeds = (code: BoundErrorCode, field: string, actual: string) =>
  refuse(code, field, `${field} || ' exceeds ${BOUND_OF_CODE[code]}: ' || ${actual} || ' > ${limitOf(code)}'`);

const limitOf = (code: BoundErrorCode): number => B[BOUND_OF_CODE[code]];

const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** Length in UTF-16 code units, as the contract counts characters: a character above U+FFFF counts twice. */
const units = (expr: string) => `(char_length(${expr}) + char_length(regexp_replace(${expr}, '[^\\U00010000-\\U0010FFFF]', '', 'g')))`;

/** The checks of a name field (id, job name, queue): present, non-empty, within its bound. */
const nameChecks = (expr: string, field: string, code: BoundErrorCode) => `
  IF ${expr} IS NULL OR ${expr} = '' THEN ${invalid(literal(field), "must be a non-empty string")}; END IF;
  IF ${units(expr)} > ${limitOf(code)} THEN ${exceeds(code, literal(field), units(expr))}; END IF;`;

/**
 * The dollar-quote tag of the function body: `$fn$`, unless the schema name (which may hold `$`)
 * contains it — then the first `$fn<n>$` it does not contain, so the body is never cut short.
 */
function bodyTag(S: string): string {
  let tag = "$fn$";
  for (let n = 1; S.includes(tag); n++) tag = `$fn${n}$`;
  return tag;
}

/**
 * Migration 3 (issue 18), additive: `add_job`, a function that enqueues one job from SQL — from
 * any language, or from a trigger inside the transaction that writes the user's row. It runs the
 * contract's checks on the job's own fields in the contract's order, with the default bounds,
 * refusing with SQLSTATE 22023 (`invalid_parameter_value`) whose column field names the
 * parameter and whose detail is the contract's code; writes exactly what `enqueue` writes for a
 * job without parents (the job row, its queue row, its tags, its first transition); and, for a
 * job due now, sends the same NOTIFY hint, delivered at the caller's commit and dropped at its
 * rollback. A job whose id exists is left unchanged (the contract's `duplicate`); either way it
 * returns the id.
 *
 * Ids given are the caller's idempotency keys; ids left out are generated as core's
 * `createJobId` does (26 characters: 48-bit milliseconds then 80 random bits, Crockford base 32),
 * the random part from `gen_random_uuid()`'s random bytes (the version byte is skipped).
 *
 * What it cannot know is left to the worker: the job type's retry policy (without
 * `max_attempts`, the job stores none, and a worker applies its job type's or group's policy)
 * and payload schema (the worker validates the payload before the handler runs). Its first
 * transition is recorded whatever a store's history policy, which the function cannot see.
 */
export const migration000003 = (S: string): string => `
CREATE FUNCTION ${S}.add_job(
  job_name text,
  payload jsonb DEFAULT '{}',
  queue text DEFAULT 'default',
  run_at timestamptz DEFAULT NULL,
  job_id text DEFAULT NULL,
  tags text[] DEFAULT NULL,
  trace_context text DEFAULT NULL,
  max_attempts integer DEFAULT NULL,
  retry_delays_ms integer[] DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql VOLATILE AS ${bodyTag(S)}
#variable_conflict use_column
DECLARE
  v_now bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  v_id text := add_job.job_id;
  v_payload text;
  v_due bigint;
  v_keys text[] := '{}';
  v_values text[] := '{}';
  v_tag text;
  v_key text;
  v_value text;
  v_at integer := 0;
  v_tags text;
  v_retry text;
  v_delay integer;
  v_seq bigint;
  v_bits bytea;
  v_t bigint;
BEGIN
  IF v_id IS NULL THEN
    v_t := v_now;
    v_id := '';
    FOR i IN 1..10 LOOP
      v_id := substr('${CROCKFORD}', (v_t % 32)::int + 1, 1) || v_id;
      v_t := v_t / 32;
    END LOOP;
    v_bits := uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid());
    FOREACH v_delay IN ARRAY ARRAY[0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16] LOOP
      v_id := v_id || substr('${CROCKFORD}', get_byte(v_bits, v_delay) % 32 + 1, 1);
    END LOOP;
  END IF;
${nameChecks("v_id", "job_id", "BELAY_ID_TOO_LONG")}
${nameChecks("add_job.job_name", "job_name", "BELAY_JOB_NAME_TOO_LONG")}
${nameChecks("add_job.queue", "queue", "BELAY_QUEUE_NAME_TOO_LONG")}

  IF add_job.payload IS NULL THEN ${invalid("'payload'", "must be JSON (jsonb), not NULL")}; END IF;
  v_payload := add_job.payload::text;
  IF octet_length(v_payload) > ${limitOf("BELAY_PAYLOAD_TOO_LARGE")} THEN
    ${exceeds("BELAY_PAYLOAD_TOO_LARGE", "'payload'", "octet_length(v_payload)")};
  END IF;

  IF add_job.run_at IS NULL THEN
    v_due := v_now;
  ELSIF NOT isfinite(add_job.run_at) OR add_job.run_at < '${EARLIEST}' OR add_job.run_at >= '${LATEST}'::timestamptz + interval '1 millisecond' THEN
    ${invalid("'run_at'", `must be between ${EARLIEST} and ${LATEST}`)};
  ELSE
    v_due := floor(extract(epoch FROM add_job.run_at) * 1000)::bigint;
  END IF;

  IF add_job.tags IS NOT NULL THEN
    IF array_ndims(add_job.tags) > 1 THEN ${invalid("'tags'", "must be a one-dimensional array")}; END IF;
    FOREACH v_tag IN ARRAY add_job.tags LOOP
      IF v_tag IS NULL THEN ${invalid("'tags[' || v_at || ']'", 'must be "label" or "key=value"')}; END IF;
      IF strpos(v_tag, '=') = 0 THEN
        v_key := '';
        v_value := v_tag;
      ELSE
        v_key := substr(v_tag, 1, strpos(v_tag, '=') - 1);
        v_value := substr(v_tag, strpos(v_tag, '=') + 1);
      END IF;
      IF v_value = '' THEN ${invalid("'tags[' || v_at || '].value'", "must be a non-empty string")}; END IF;
      IF ${units("v_key")} > ${limitOf("BELAY_TAG_KEY_TOO_LONG")} THEN
        ${exceeds("BELAY_TAG_KEY_TOO_LONG", "'tags[' || v_at || '].key'", units("v_key"))};
      END IF;
      IF ${units("v_value")} > ${limitOf("BELAY_TAG_TOO_LONG")} THEN
        ${exceeds("BELAY_TAG_TOO_LONG", "'tags[' || v_at || '].value'", units("v_value"))};
      END IF;
      -- First occurrence wins, order kept.
      IF NOT EXISTS (SELECT 1 FROM unnest(v_keys, v_values) AS t(k, v) WHERE t.k = v_key AND t.v = v_value) THEN
        v_keys := v_keys || v_key;
        v_values := v_values || v_value;
      END IF;
      v_at := v_at + 1;
    END LOOP;
    IF cardinality(v_keys) > ${limitOf("BELAY_TOO_MANY_TAGS")} THEN
      ${exceeds("BELAY_TOO_MANY_TAGS", "'tags'", "cardinality(v_keys)")};
    END IF;
  END IF;
  -- As encodeTags writes them (JSON.stringify of [key, value] pairs): outcomes compare pairs by their text.
  IF cardinality(v_keys) > 0 THEN
    SELECT '[' || string_agg('[' || to_json(t.k)::text || ',' || to_json(t.v)::text || ']', ',' ORDER BY t.o) || ']'
      INTO v_tags FROM unnest(v_keys, v_values) WITH ORDINALITY AS t(k, v, o);
  END IF;

  IF add_job.trace_context IS NOT NULL AND ${units("add_job.trace_context")} > ${limitOf("BELAY_TRACE_CONTEXT_TOO_LONG")} THEN
    ${exceeds("BELAY_TRACE_CONTEXT_TOO_LONG", "'trace_context'", units("add_job.trace_context"))};
  END IF;

  IF add_job.max_attempts IS NOT NULL OR add_job.retry_delays_ms IS NOT NULL THEN
    IF add_job.max_attempts IS NULL OR add_job.max_attempts < 1 OR add_job.max_attempts > ${MAX_COUNT} THEN
      ${invalid("'max_attempts'", `must be an integer from 1 to ${MAX_COUNT} (given with retry_delays_ms)`)};
    END IF;
    IF add_job.retry_delays_ms IS NULL OR cardinality(add_job.retry_delays_ms) = 0 OR array_ndims(add_job.retry_delays_ms) > 1
       OR cardinality(add_job.retry_delays_ms) > ${MAX_RETRY_DELAYS} THEN
      ${invalid("'retry_delays_ms'", `must hold 1 to ${MAX_RETRY_DELAYS} delays (given with max_attempts)`)};
    END IF;
    v_at := 0;
    FOREACH v_delay IN ARRAY add_job.retry_delays_ms LOOP
      IF v_delay IS NULL OR v_delay < 0 OR v_delay > ${MAX_DURATION_MS} THEN
        ${invalid("'retry_delays_ms[' || v_at || ']'", `must be an integer from 0 to ${MAX_DURATION_MS}`)};
      END IF;
      v_at := v_at + 1;
    END LOOP;
    -- As encodeRetry writes it: [maxAttempts, delay, …].
    v_retry := '[' || array_to_string(add_job.max_attempts || add_job.retry_delays_ms, ',') || ']';
  END IF;

  INSERT INTO ${S}.jobs (id, job_name, queue, state, due_at, enqueued_at, terminal_at, terminal_cause, parents_remaining,
                         parent_ids, dependency_mode, tags, trace_context, schedule_id, workflow_id, has_children,
                         transition_count, retry, payload)
  VALUES (v_id, add_job.job_name, add_job.queue, ${STATE.scheduled}, v_due, v_now, NULL, NULL, 0,
          NULL, ${DEPENDENCY_MODE_CODES.onSuccess}, v_tags, add_job.trace_context, NULL, NULL, false,
          1, v_retry, v_payload)
  ON CONFLICT (id) DO NOTHING
  RETURNING seq INTO v_seq;
  -- The id exists: the job is left unchanged, and nothing else is written.
  IF v_seq IS NULL THEN RETURN v_id; END IF;

  INSERT INTO ${S}.queues (queue) VALUES (add_job.queue) ON CONFLICT (queue) DO NOTHING;
  INSERT INTO ${S}.job_tags (job_seq, key, value)
  SELECT v_seq, t.k, t.v FROM unnest(v_keys, v_values) AS t(k, v) ON CONFLICT DO NOTHING;
  INSERT INTO ${S}.transitions (xid, job_seq, ordinal, at, state, attempt, cause)
  VALUES (pg_current_xact_id(), v_seq, 1, v_now, ${STATE.scheduled}, 0, ${TRANSITION_CAUSE_CODES.enqueued});
  -- The store's wake-up hint, delivered at the caller's commit (one per queue and transaction).
  IF v_due <= v_now THEN
    PERFORM pg_notify('${hintChannel(S.slice(1, -1))}', add_job.queue);
  END IF;
  RETURN v_id;
END
${bodyTag(S)};

COMMENT ON FUNCTION ${S}.add_job(text, jsonb, text, timestamptz, text, text[], text, integer, integer[]) IS
  'Belay: enqueues one job with the contract''s checks and wake-up hint; returns its id (an existing id is left unchanged).';
`;
