/**
 * The simulator's randomness: one 64-bit seed, a small PRNG of our own (xoshiro128**, seeded by
 * SplitMix64), and keyed dice. Keyed dice decide a fault by the stable identity of what it hits
 * (a job's attempt, a node's n-th heartbeat), not by how many numbers were drawn before, so a
 * minimized plan that drops one fault leaves the others where they were.
 */

import { RandomSource, hashText32 } from "@belay/contract";

const MASK64 = (1n << 64n) - 1n;

/** A seed as the simulator takes it: a 64-bit unsigned integer. */
export type Seed = bigint;

/** Parses `17`, `0x11` or a bigint into a 64-bit seed; throws a `RangeError` for anything else. */
export function parseSeed(value: string | number | bigint): Seed {
  let seed: bigint;
  try {
    seed = typeof value === "bigint" ? value : BigInt(typeof value === "number" ? Math.trunc(value) : value.trim());
  } catch {
    throw new RangeError(`not a 64-bit seed: ${String(value)}`);
  }
  if (seed < 0n || seed > MASK64) throw new RangeError(`not a 64-bit seed: ${String(value)}`);
  return seed;
}

/** A seed as printed in reports and replay commands: `0x` and 16 hex digits. */
export function formatSeed(seed: Seed): string {
  return `0x${seed.toString(16).padStart(16, "0")}`;
}

/** One SplitMix64 step: the next state and its output. */
function splitMix64(state: bigint): [bigint, bigint] {
  const next = (state + 0x9e3779b97f4a7c15n) & MASK64;
  let z = next;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return [next, z ^ (z >> 31n)];
}


const rotl = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;

/** xoshiro128**: four 32-bit words of state, fast and good enough for fault schedules. */
export class Rng extends RandomSource {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  private constructor(a: number, b: number, c: number, d: number) {
    super();
    this.#a = a >>> 0;
    this.#b = b >>> 0;
    this.#c = c >>> 0;
    this.#d = d >>> 0;
    if ((this.#a | this.#b | this.#c | this.#d) === 0) this.#a = 1;
  }

  /** The stream of a 64-bit seed. */
  static fromSeed(seed: Seed): Rng {
    let state = seed;
    const words: number[] = [];
    for (let i = 0; i < 2; i++) {
      const [next, out] = splitMix64(state);
      state = next;
      words.push(Number(out & 0xffffffffn), Number(out >> 32n));
    }
    return new Rng(words[0]!, words[1]!, words[2]!, words[3]!);
  }

  /** An independent stream named `label`, derived from this one's current state (which is left alone). */
  fork(label: string): Rng {
    return new Rng(
      hashText32(label, this.#a),
      hashText32(label, this.#b ^ 0x5bd1e995),
      hashText32(label, this.#c ^ 0x27d4eb2f),
      hashText32(label, this.#d ^ 0x165667b1),
    );
  }

  /** The next 32 random bits. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.#b, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.#b << 9) >>> 0;
    this.#c ^= this.#a;
    this.#d ^= this.#b;
    this.#b ^= this.#c;
    this.#a ^= this.#d;
    this.#c ^= t;
    this.#d = rotl(this.#d, 11);
    this.#c >>>= 0;
    this.#d >>>= 0;
    this.#b >>>= 0;
    this.#a >>>= 0;
    return result;
  }

  /** A float in [0, 1). */
  override next(): number {
    return this.nextUint32() / 0x1_0000_0000;
  }

  /** True with probability `p`; `p` ≤ 0 draws nothing, so a fault switched off leaves the stream alone. */
  override chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }
}

/**
 * Decisions by identity: `unit("handler", jobId, attempt)` is the same number in every run of the
 * same seed, whatever else happened. Each call hashes its key afresh.
 */
export class KeyedDice {
  readonly #lo: number;
  readonly #hi: number;

  constructor(seed: Seed) {
    const [, mixed] = splitMix64(seed ^ 0x6a09e667f3bcc909n);
    this.#lo = Number(mixed & 0xffffffffn);
    this.#hi = Number(mixed >> 32n);
  }

  /** A float in [0, 1) for the key. */
  unit(...key: readonly (string | number)[]): number {
    const text = key.join("\u0000");
    const a = hashText32(text, this.#lo);
    const b = hashText32(text, this.#hi ^ a);
    return (a * 0x200000 + (b >>> 11)) / 0x20000000000000;
  }

  /** True with probability `p` for the key. */
  chance(p: number, ...key: readonly (string | number)[]): boolean {
    return p > 0 && this.unit(...key) < p;
  }

  /** An integer in [min, max] for the key. */
  int(min: number, max: number, ...key: readonly (string | number)[]): number {
    return min + Math.floor(this.unit(...key) * (max - min + 1));
  }
}
