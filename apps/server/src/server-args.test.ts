import { describe, expect, it } from "vitest";
import { ServerHelpRequested, parseServerArgs } from "./server-args.js";

describe("parseServerArgs", () => {
  it("has defaults and reads the environment", () => {
    expect(parseServerArgs(["--store", "memory:"], {})).toEqual({
      store: "memory:",
      host: "127.0.0.1",
      port: 8080,
      migrate: false,
      withWorker: false,
      jobs: null,
      tokens: [],
      title: null,
      sessionSecret: null,
      promises: { host: "127.0.0.1", port: 8001 },
      debug: false,
    });
    const env = { BELAY_STORE: "sqlite:./x.db", PORT: "9000", BELAY_JOBS: "jobs.js", BELAY_SERVER_TOKENS: "a:12345678 b:87654321:view" };
    const args = parseServerArgs(["--token", "c:abcdefgh", "--with-worker", "--migrate"], env);
    expect(args).toMatchObject({ store: "sqlite:./x.db", port: 9000, jobs: "jobs.js", withWorker: true, migrate: true });
    expect(args.tokens.map((t) => t.name)).toEqual(["a", "b", "c"]);
    expect(parseServerArgs(["--store", "memory:", "--promises-host", "::1", "--promises-port", "0", "--debug"], {})).toMatchObject({
      promises: { host: "::1", port: 0 },
      debug: true,
    });
    expect(parseServerArgs(["--store", "memory:"], { BELAY_PROMISES_PORT: "off" }).promises.port).toBeNull();
    expect(parseServerArgs(["--store", "memory:"], { BELAY_SESSION_SECRET: "s".repeat(32) }).sessionSecret).toBe("s".repeat(32));
  });

  it.each([
    [[], "--store"],
    [["--store", "memory:", "--port", "70000"], "--port"],
    [["--store", "memory:", "--with-worker"], "--jobs"],
    [["--store", "memory:", "--bogus"], "argv"],
    [["--store", "memory:", "--promises-port", "8x"], "--promises-port"],
    [["--store", "memory:", "--promises-port", "65536"], "--promises-port"],
    [["--store", "memory:", "--session-secret", "too-short"], "--session-secret"],
  ])("refuses %j naming %s", (argv, field) => {
    expect(() => parseServerArgs(argv, {})).toThrow(expect.objectContaining({ field }));
  });

  it("--help asks for the usage", () => {
    expect(() => parseServerArgs(["--help"], {})).toThrow(ServerHelpRequested);
  });
});
