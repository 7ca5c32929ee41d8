import { describe, expect, it } from "vitest";
import { type Migration, assertSchemaUsable, schemaVersionOf } from "../src/index.js";

const m = (version: number, requires: number): Migration => ({ version, requires, sql: () => "" });

describe("migrations", () => {
  it("a list numbered 1..n creates version n", () => {
    expect(schemaVersionOf([m(1, 1)])).toBe(1);
    expect(schemaVersionOf([m(1, 1), m(2, 1), m(3, 3)])).toBe(3);
  });

  it("refuses gaps, a requires above its own version or below the previous one, and an empty list", () => {
    expect(() => schemaVersionOf([m(1, 1), m(3, 1)])).toThrow(RangeError);
    expect(() => schemaVersionOf([m(1, 2)])).toThrow(RangeError);
    expect(() => schemaVersionOf([m(1, 1), m(2, 2), m(3, 1)])).toThrow(RangeError);
    expect(() => schemaVersionOf([])).toThrow(RangeError);
  });

  it("a store runs on its own version and on a newer additive one, not on an older or incompatible one", () => {
    expect(() => assertSchemaUsable({ version: 2, requires: 1 }, 2, "db")).not.toThrow();
    expect(() => assertSchemaUsable({ version: 3, requires: 2 }, 2, "db")).not.toThrow();
    expect(() => assertSchemaUsable({ version: 0, requires: 0 }, 2, "db")).toThrow(expect.objectContaining({ code: "BELAY_SCHEMA_NOT_MIGRATED" }));
    expect(() => assertSchemaUsable({ version: 1, requires: 1 }, 2, "db")).toThrow(expect.objectContaining({ code: "BELAY_SCHEMA_NOT_MIGRATED" }));
    expect(() => assertSchemaUsable({ version: 3, requires: 3 }, 2, "db")).toThrow(
      expect.objectContaining({ code: "BELAY_SCHEMA_VERSION_UNKNOWN", found: 3, supported: 2 }),
    );
  });
});
