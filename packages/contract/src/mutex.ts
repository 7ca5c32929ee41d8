/**
 * A lock that runs bodies one at a time, in call order. A store that keeps its state in the
 * process (the memory store) or owns one connection (the SQLite store) takes it around every
 * operation, so a parked operation (a test hook awaiting inside it) holds back every later one,
 * as a database transaction holding locks would.
 */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `body` after every earlier body has settled; resolves or rejects as `body` does. */
  run<T>(body: () => T | Promise<T>): Promise<T> {
    const result = this.#tail.then(body);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
