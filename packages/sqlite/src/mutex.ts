/**
 * One lock per store instance: its operations run one at a time, in call order. better-sqlite3 is
 * synchronous, but the step hook may park an operation inside its transaction; the lock keeps every
 * other operation of the instance off the connection until it commits or rolls back.
 */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(body: () => T | Promise<T>): Promise<T> {
    const result = this.#tail.then(body);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
