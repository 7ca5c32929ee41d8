/**
 * Seeded randomness for reproducible tests and for jitter that must not differ between hosts.
 * Both are small hashes of our own, so the same seed gives the same numbers on every platform
 * and a failing seed replays exactly.
 */

/** A 32-bit string hash (FNV-1a, then a murmur-style finalizer), mixed with `salt`. */
export function hashText32(text: string, salt = 0): number {
  let h = (0x811c9dc5 ^ salt) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A number in [0, 1) from a string: stable across runs and hosts. */
export function seededUnit(text: string): number {
  return hashText32(text) / 0x1_0000_0000;
}

/**
 * What a seeded generator offers once it has `next()`: integers, coin flips and choices, each
 * drawn from `next()` alone, so two generators that agree on `next()` agree on everything.
 */
export abstract class RandomSource {
  /** A float in [0, 1). */
  abstract next(): number;

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One of `items`; a `RangeError` for an empty list. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("pick from an empty list");
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One of `choices`, each as likely as its weight. */
  weighted<T>(choices: readonly (readonly [T, number])[]): T {
    const total = choices.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = this.next() * total;
    for (const [choice, weight] of choices) {
      roll -= weight;
      if (roll < 0) return choice;
    }
    return choices[choices.length - 1]![0];
  }

  /** A shuffled copy of `items`. */
  shuffle<T>(items: readonly T[]): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy;
  }

  /** Between `min` and `max` distinct items of `items`, in random order. */
  some<T>(items: readonly T[], min: number, max: number): T[] {
    const pool = [...items];
    const count = Math.min(pool.length, this.int(min, max));
    const out: T[] = [];
    for (let i = 0; i < count; i++) out.push(pool.splice(Math.floor(this.next() * pool.length), 1)[0]!);
    return out;
  }
}

/**
 * A seeded random source: a 32-bit counter hashed by multiply-xorshift rounds. Sequences from
 * one seed are identical everywhere; `derive` gives each client or lane a sequence of its own.
 */
export class SeededRandom extends RandomSource {
  #state: number;

  constructor(seed: number) {
    super();
    this.#state = seed >>> 0;
  }

  /** A new source derived from `seed` and `salt`. */
  static derive(seed: number, salt: number): SeededRandom {
    let h = Math.imul((seed >>> 0) ^ 0x5bd1e995, 0x27d4eb2d) ^ Math.imul(salt + 1, 0x165667b1);
    h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
    return new SeededRandom(h ^ (h >>> 13));
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x9e3779b9) >>> 0;
    let z = this.#state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z ^= z >>> 16;
    return (z >>> 0) / 0x1_0000_0000;
  }
}
