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
  if (entropyAt + 16 > entropy.length) {
    crypto.getRandomValues(entropy);
    entropyAt = 0;
  }
  let tail = "";
  for (let i = entropyAt; i < entropyAt + 16; i++) tail += CROCKFORD[entropy[i]! % 32];
  entropyAt += 16;
  return time + tail;
}

// Random bytes drawn 4 KiB at a time (one call to the system's generator per 256 ids, not per id);
// each byte is used once.
const entropy = new Uint8Array(4096);
let entropyAt = entropy.length;

/** A worker id unique to one pump of one process: `<prefix>:<group>:<n>:<random>`. */
export function createWorkerId(prefix: string, group: string, pump: number): string {
  const random = crypto.getRandomValues(new Uint8Array(6));
  let suffix = "";
  for (const byte of random) suffix += CROCKFORD[byte % 32];
  return `${prefix}:${group}:${pump}:${suffix}`.slice(0, 128);
}
