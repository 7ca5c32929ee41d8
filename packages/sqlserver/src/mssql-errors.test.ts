import { isBelayError } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { classifyError, errorNumbers, toStoreError } from "./mssql-errors.js";

// Shapes of the errors the driver raises, as `mssql` 12 / `tedious` 19 build them: a
// RequestError (code EREQUEST, the server's `number`, the tedious original with `number` and
// `info`), a ConnectionError (ELOGIN, ESOCKET, ETIMEOUT, …, the original under
// `originalError`), a TransactionError (EABORT, ENOTBEGUN).
const requestError = (number: number, message = `error ${number}`) =>
  Object.assign(new Error(message), { name: "RequestError", code: "EREQUEST", number, originalError: Object.assign(new Error(message), { number, info: { number } }) });
const connectionError = (code: string, number?: number) =>
  Object.assign(new Error(`connection ${code}`), {
    name: "ConnectionError",
    code,
    originalError: Object.assign(new Error(`tedious ${code}`), { code, ...(number === undefined ? {} : { number }) }),
  });

describe("the SQL Server error classifier", () => {
  it.each([
    [1205, "deadlock victim"],
    [1222, "lock request timeout"],
    [40001, "serialization failure"],
    [40197, "Azure SQL reconfiguration"],
    [40501, "Azure SQL busy"],
    [40613, "Azure SQL database unavailable"],
    [4060, "cannot open database"],
    [3960, "snapshot update conflict"],
  ])("error %i (%s) is transient", (number) => {
    expect(classifyError(requestError(number))).toBe("transient");
    const mapped = toStoreError(requestError(number), "claim");
    expect(isBelayError(mapped, "BELAY_TRANSIENT_STORE")).toBe(true);
    expect((mapped as Error).message).toMatch(/^claim: /);
  });

  it("a request timeout (-2, tedious ETIMEOUT) is transient", () => {
    const timeout = Object.assign(new Error("Timeout: Request failed to complete in 15000ms"), { name: "RequestError", code: "ETIMEOUT" });
    expect(classifyError(timeout)).toBe("transient");
    expect(classifyError(requestError(-2, "Execution Timeout Expired"))).toBe("transient");
  });

  it.each(["ESOCKET", "ECONNCLOSED", "ECONNRESET", "ETIMEOUT", "EINSTLOOKUP"])("a connection error %s is transient", (code) => {
    expect(classifyError(connectionError(code))).toBe("transient");
  });

  it("a transaction the server aborted (EABORT) is transient", () => {
    expect(classifyError(Object.assign(new Error("Transaction has been aborted."), { name: "TransactionError", code: "EABORT" }))).toBe("transient");
  });

  it("login failed (18456) is permanent, also as a ConnectionError ELOGIN: retrying cannot fix credentials", () => {
    expect(classifyError(requestError(18456))).toBe("permanent");
    expect(classifyError(connectionError("ELOGIN", 18456))).toBe("permanent");
    expect(classifyError(connectionError("ELOGIN"))).toBe("permanent");
    const error = connectionError("ELOGIN", 18456);
    expect(toStoreError(error, "claim")).toBe(error);
  });

  it("a login refused because the database is moving (4060 under ELOGIN) is transient", () => {
    expect(classifyError(connectionError("ELOGIN", 4060))).toBe("transient");
  });

  it.each([
    [102, "syntax error"],
    [208, "invalid object name"],
    [2627, "unique constraint"],
    [2601, "unique index"],
    [547, "constraint conflict"],
    [8152, "string or binary data would be truncated"],
  ])("error %i (%s) is permanent and propagates unchanged", (number) => {
    const error = requestError(number);
    expect(classifyError(error)).toBe("permanent");
    expect(toStoreError(error, "enqueue")).toBe(error);
  });

  it("numbers are found in preceding errors and aggregates too", () => {
    const aggregate = Object.assign(new Error("multiple"), { errors: [requestError(3621), requestError(1205)] });
    expect(errorNumbers(aggregate)).toEqual(expect.arrayContaining([3621, 1205]));
    expect(classifyError(aggregate)).toBe("transient");
    const preceded = Object.assign(requestError(3621), { precedingErrors: [requestError(40613)] });
    expect(classifyError(preceded)).toBe("transient");
  });

  it("a Belay error is passed through as it is", () => {
    const error = Object.assign(new Error("closed"), { code: "BELAY_STORE_CLOSED" });
    expect(toStoreError(error, "claim")).toBe(error);
  });

  it("an error without a number or code is permanent", () => {
    expect(classifyError(new TypeError("x is not a function"))).toBe("permanent");
    expect(classifyError("text")).toBe("permanent");
    expect(classifyError(null)).toBe("permanent");
  });
});
