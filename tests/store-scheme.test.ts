// The store scheme (packages/contract/README.md): every store package has the same files with the
// same names, so a reader who knows one store knows all of them.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Each store package and the folder holding its operation files. */
const STORES = [
  { name: "memory", ops: "ops", sql: false },
  { name: "sqlite", ops: "sql", sql: true },
  { name: "postgres", ops: "sql", sql: true },
  { name: "sqlserver", ops: "sql", sql: true },
] as const;

/** The operation files of the scheme, in every store. */
const OPERATION_FILES = [
  "audit.ts",
  "children.ts",
  "claim.ts",
  "enqueue.ts",
  "filters.ts",
  "jobs.ts",
  "leases.ts",
  "maintainer.ts",
  "observers.ts",
  "operator.ts",
  "outcomes.ts",
  "promise-rows.ts",
  "promise-scans.ts",
  "reads.ts",
  "retention.ts",
  "schedules.ts",
  "tags.ts",
  "workflows.ts",
];

const files = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".ts")).sort();

describe("the store scheme", () => {
  for (const store of STORES) {
    const src = join(root, "packages", store.name, "src");

    it(`${store.name}: its operation folder holds exactly the scheme's operation files`, () => {
      expect(files(join(src, store.ops))).toEqual(OPERATION_FILES);
    });

    it(`${store.name}: index, store and store-config files${store.sql ? ", migrations and migrate" : ""} sit at the top of src/`, () => {
      const top = files(src);
      for (const file of ["index.ts", `${store.name}-store.ts`, `${store.name}-store-config.ts`]) expect(top).toContain(file);
      if (store.sql) {
        expect(top).toContain("migrate.ts");
        expect(files(join(src, "migrations"))).toContain("index.ts");
        expect(existsSync(join(src, "migrations", "000001.ts"))).toBe(true);
      }
    });
  }

  it("every store's operation folder has the same file names", () => {
    const [first, ...rest] = STORES.map((s) => files(join(root, "packages", s.name, "src", s.ops)));
    for (const other of rest) expect(other).toEqual(first);
  });
});
