/**
 * One lock for the whole store: operations run one at a time, in call order, so a parked
 * operation (a test hook awaiting inside it) holds back every later one, as a database
 * transaction holding locks would.
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
