import { JOB_STATE_CODES } from "@belay/contract";

/** The quoted names of Belay's tables under one prefix, for building SQL. */
export interface Tables {
  readonly prefix: string;
  readonly migrations: string;
  readonly jobs: string;
  readonly payloads: string;
  readonly outputs: string;
  readonly tags: string;
  readonly tagCounts: string;
  readonly edges: string;
  readonly transitions: string;
  readonly schedules: string;
  readonly queues: string;
  readonly audit: string;
  readonly workflows: string;
  readonly observers: string;
  readonly deliveries: string;
  readonly deadLetters: string;
  readonly maintainerLease: string;
  // The promise surface (`SqlitePromiseStore`): its own tables and version table under the same prefix.
  readonly promiseMigrations: string;
  readonly promises: string;
  readonly tasks: string;
  readonly callbacks: string;
  readonly listeners: string;
  readonly outbox: string;
  readonly outboxRevision: string;
  readonly promiseSchedules: string;
}

/** Table names for `prefix` (already validated: letters, digits, underscores). */
export function tablesFor(prefix: string): Tables {
  const name = (table: string) => `"${prefix}${table}"`;
  return {
    prefix,
    migrations: name("migrations"),
    jobs: name("jobs"),
    payloads: name("job_payloads"),
    outputs: name("job_outputs"),
    tags: name("job_tags"),
    tagCounts: name("tag_counts"),
    edges: name("job_edges"),
    transitions: name("transitions"),
    schedules: name("schedules"),
    queues: name("queues"),
    audit: name("audit"),
    workflows: name("workflows"),
    observers: name("observers"),
    deliveries: name("observer_deliveries"),
    deadLetters: name("observer_dead_letters"),
    maintainerLease: name("maintainer_lease"),
    promiseMigrations: name("promise_migrations"),
    promises: name("promises"),
    tasks: name("tasks"),
    callbacks: name("callbacks"),
    listeners: name("listeners"),
    outbox: name("outbox"),
    outboxRevision: name("outbox_revision"),
    promiseSchedules: name("promise_schedules"),
  };
}

/**
 * The contract's state codes, under a short name for SQL text. They are spelled into the SQL
 * (`state = ${S.scheduled}`), never bound, because SQLite only uses a partial index
 * (`WHERE state = 0`) when the query's own text implies the index's condition.
 */
export const S = JOB_STATE_CODES;
