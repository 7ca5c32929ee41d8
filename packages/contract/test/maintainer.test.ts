import { describe, expect, it } from "vitest";
import { decideMaintainerLease, releasedMaintainerLease } from "../src/index.js";

const request = (holder: string, now: number, leaseMs = 100) => ({ holder, now, leaseMs });

describe("the maintainer lease rule", () => {
  it("grants a free lease to the caller, to now + leaseMs", () => {
    expect(decideMaintainerLease(null, request("a", 1_000))).toEqual({ status: "granted", holder: "a", expiresAt: 1_100 });
  });

  it("refuses a live lease of another holder, naming it and its expiry", () => {
    expect(decideMaintainerLease({ holder: "a", expiresAt: 1_100 }, request("b", 1_099))).toEqual({
      status: "heldByOther",
      holder: "a",
      expiresAt: 1_100,
    });
  });

  it("grants another holder's lease at exactly its expiry instant (dead at expiry) and after", () => {
    expect(decideMaintainerLease({ holder: "a", expiresAt: 1_100 }, request("b", 1_100))).toEqual({ status: "granted", holder: "b", expiresAt: 1_200 });
    expect(decideMaintainerLease({ holder: "a", expiresAt: 1_100 }, request("b", 5_000))).toEqual({ status: "granted", holder: "b", expiresAt: 5_100 });
  });

  it("renews the holder's own lease, live or dead, to now + leaseMs exactly", () => {
    expect(decideMaintainerLease({ holder: "a", expiresAt: 1_100 }, request("a", 1_050))).toEqual({ status: "granted", holder: "a", expiresAt: 1_150 });
    expect(decideMaintainerLease({ holder: "a", expiresAt: 1_100 }, request("a", 2_000))).toEqual({ status: "granted", holder: "a", expiresAt: 2_100 });
    // An expiry written by a clock that ran ahead is replaced, not kept: a holder that dies after blocks one lease at most.
    expect(decideMaintainerLease({ holder: "a", expiresAt: 1_000_000 }, request("a", 900))).toEqual({ status: "granted", holder: "a", expiresAt: 1_000 });
  });

  it("releases only the holder's own lease", () => {
    expect(releasedMaintainerLease({ holder: "a", expiresAt: 1_100 }, { holder: "a" })).toEqual({ status: "released" });
    expect(releasedMaintainerLease({ holder: "a", expiresAt: 1_100 }, { holder: "b" })).toEqual({ status: "notHeld" });
    expect(releasedMaintainerLease(null, { holder: "a" })).toEqual({ status: "notHeld" });
  });
});
