import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { jobsFromModule, loadJobsModule, parseHostConfig } from "../src/index.js";

describe("host configuration", () => {
  it("reads flags, with the store and jobs module from the environment when not given", () => {
    const config = parseHostConfig(["--pool-size", "8", "--pumps", "2", "--queues", "mail,default", "--port", "0", "--migrate"], {
      BELAY_STORE: "sqlite:./x.db",
      BELAY_JOBS: "./jobs.mjs",
    });
    expect(config).toMatchObject({
      store: "sqlite:./x.db",
      jobs: "./jobs.mjs",
      migrate: true,
      groups: [{ name: "default", queues: ["mail", "default"], poolSize: 8, pumps: 2 }],
      health: { host: "127.0.0.1", port: 0 },
      stopTimeoutMs: 30_000,
    });
  });

  it("refuses bad input naming the field", () => {
    const base = ["--store", "memory:", "--jobs", "./jobs.mjs"];
    expect(() => parseHostConfig([...base, "--pool-size", "lots"], {})).toThrow(/--pool-size/);
    expect(() => parseHostConfig([...base, "--pool-size", "0"], {})).toThrow(/groups\.0\.poolSize/);
    expect(() => parseHostConfig([...base, "--dispatch", "random"], {})).toThrow(/groups\.0\.dispatch/);
    expect(() => parseHostConfig(["--jobs", "./jobs.mjs"], {})).toThrow(/store/);
    expect(() => parseHostConfig([...base, "--bogus"], {})).toThrow(/bogus/);
  });

  it("finds job definitions among a module's exports and refuses a module without any", () => {
    const job = { name: "a", queue: "q", handler: () => {}, schema: undefined, retry: undefined, tags: [] };
    const other = { ...job, name: "b" };
    const found = jobsFromModule({ job, list: [other], helper: () => 1, schedules: [] }, "jobs.mjs");
    expect(found.jobs.map((j) => j.name).sort()).toEqual(["a", "b"]);
    expect(() => jobsFromModule({ helper: 1 }, "empty.mjs")).toThrow(/no job definitions/);
  });

  it("loads a jobs module from its path: definitions, arrays of them, and schedules", async () => {
    const found = await loadJobsModule(fileURLToPath(new URL("fixtures/jobs.mjs", import.meta.url)));
    expect(found.jobs.map((j) => j.name).sort()).toEqual(["email.welcome", "report.build"]);
    expect(found.schedules.map((s) => s.id)).toEqual(["nightly"]);
    expect(found.observers).toEqual([]);
    await expect(loadJobsModule("")).rejects.toThrow(/needs the path of a jobs module/);
  });
});
