const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/**
 * A new job id: 26 characters, sortable by creation time (48-bit milliseconds, then 80 random
 * bits, Crockford base 32 — the ULID layout), so ids of later jobs sort after earlier ones.
 */
export function createJobId(now: number = Date.now()): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const random = crypto.getRandomValues(new Uint8Array(16));
  let tail = "";
  for (const byte of random) tail += CROCKFORD[byte % 32];
  return time + tail;
}

/** A worker id unique to one pump of one process: `<prefix>:<group>:<n>:<random>`. */
export function createWorkerId(prefix: string, group: string, pump: number): string {
  const random = crypto.getRandomValues(new Uint8Array(6));
  let suffix = "";
  for (const byte of random) suffix += CROCKFORD[byte % 32];
  return `${prefix}:${group}:${pump}:${suffix}`.slice(0, 128);
}
