import { describe, expect, it } from "vitest";
import { allowedMethods, hasDotSegment } from "./hygiene.js";
import { jsonDepth } from "./json-body.js";

describe("hasDotSegment", () => {
  it.each(["/a/../b", "/a/./b", "/a/%2e%2E/b", "/a/.%2e", "/a/%2e", "/a\\..\\b", "http://host/a/../b", "/.."])("%s has one", (target) => {
    expect(hasDotSegment(target)).toBe(true);
  });
  it.each(["/a/b", "/a/..b", "/a/b.c", "/a/...", "/a/b?x=/../", "/a/%2e%2e%2f", "http://host/a"])("%s has none", (target) => {
    expect(hasDotSegment(target)).toBe(false);
  });
});

describe("jsonDepth", () => {
  it("counts arrays and objects, not brackets in strings or escapes", () => {
    expect(jsonDepth("1", 64)).toBe(0);
    expect(jsonDepth('{"a":[{"b":[]}]}', 64)).toBe(4);
    expect(jsonDepth('["[[[", "\\"[[["]', 64)).toBe(1);
  });
  it("stops counting past the limit", () => {
    expect(jsonDepth("[".repeat(1_000_000), 64)).toBe(65);
  });
});

describe("allowedMethods", () => {
  const app = {
    routes: [
      { method: "ALL", path: "/*" },
      { method: "GET", path: "/jobs/:id" },
      { method: "POST", path: "/jobs/:id/cancel" },
      { method: "DELETE", path: "/jobs/:id" },
    ],
  };
  it("lists the methods of the routes whose pattern matches, with HEAD beside GET", () => {
    expect(allowedMethods(app, "/jobs/x")).toEqual(["DELETE", "GET", "HEAD"]);
    expect(allowedMethods(app, "/jobs/x/cancel")).toEqual(["POST"]);
    expect(allowedMethods(app, "/nothing")).toEqual([]);
  });
});
