// Reading the error a call fails with, for tests of several packages. Plain JavaScript with its
// types beside it (errors.d.mts), for the reason fixtures.mjs gives.

/**
 * The `code` of the error `action` fails with, when `coded` recognises it (e.g. `isBelayError`
 * of @belay/contract, which this folder cannot import); `undefined` when `action` succeeds. Any
 * other error is thrown.
 */
export async function rejectionCode(action, coded) {
  try {
    await action();
    return undefined;
  } catch (error) {
    if (coded(error)) return error.code;
    throw error;
  }
}
