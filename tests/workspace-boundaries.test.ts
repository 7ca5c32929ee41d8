// The workspace's dependency rules (DESIGN.md §2), checked on the files themselves: no app depends
// on or imports another app (what both apps share lives in @belay/host), and no store package
// imports another store package (each stands on @belay/contract alone).
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const SKIPPED_FOLDERS = new Set(["node_modules", "dist", ".turbo", "test-output", "coverage"]);
const SOURCE_FILE = /\.(?:[cm]?[jt]s|tsx|jsx)$/;
const DEPENDENCY_FIELDS = ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"] as const;
const STORE_FOLDERS = ["memory", "sqlite", "postgres", "sqlserver"];

interface WorkspacePackage {
  readonly name: string;
  readonly dir: string;
  readonly dependencies: readonly string[];
}

function readPackage(dir: string): WorkspacePackage {
  const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
  const dependencies = DEPENDENCY_FIELDS.flatMap((field) => Object.keys((json[field] ?? {}) as Record<string, string>));
  return { name: json["name"] as string, dir, dependencies };
}

function packagesUnder(folder: string, only?: readonly string[]): WorkspacePackage[] {
  return readdirSync(join(root, folder))
    .filter((entry) => only === undefined || only.includes(entry))
    .map((entry) => join(root, folder, entry))
    .filter((dir) => existsSync(join(dir, "package.json")))
    .map(readPackage);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return SKIPPED_FOLDERS.has(entry) ? [] : sourceFiles(path);
    return SOURCE_FILE.test(entry) ? [path] : [];
  });
}

/** Every module specifier a source text imports, re-exports or requires (comments ignored). */
function importedSpecifiers(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[\s;{}])\/\/.*$/gm, "$1");
  const found: string[] = [];
  const patterns = [
    /\bfrom\s*["']([^"']+)["']/g, // import … from "x", export … from "x"
    /\bimport\s*["']([^"']+)["']/g, // import "x"
    /\bimport\s*\(\s*["']([^"']+)["']/g, // import("x")
    /\brequire(?:\.resolve)?\s*\(\s*["']([^"']+)["']/g, // require("x")
  ];
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) found.push(match[1]!);
  return found;
}

/** The workspace package a specifier in `file` reaches, by name or by a relative path into its folder. */
function reachedPackage(specifier: string, file: string, candidates: readonly WorkspacePackage[]): WorkspacePackage | undefined {
  if (specifier.startsWith(".")) {
    const target = resolve(dirname(file), specifier);
    return candidates.find((p) => target === p.dir || target.startsWith(p.dir + sep));
  }
  return candidates.find((p) => specifier === p.name || specifier.startsWith(`${p.name}/`));
}

/** "file: specifier → package" for every import in `pkg` that reaches one of `others`. */
function crossings(pkg: WorkspacePackage, others: readonly WorkspacePackage[]): string[] {
  return sourceFiles(pkg.dir).flatMap((file) =>
    importedSpecifiers(readFileSync(file, "utf8")).flatMap((specifier) => {
      const reached = reachedPackage(specifier, file, others);
      return reached === undefined ? [] : [`${relative(root, file)}: ${specifier} → ${reached.name}`];
    }),
  );
}

describe("workspace boundaries", () => {
  const apps = packagesUnder("apps");
  const stores = packagesUnder("packages", STORE_FOLDERS);

  it("finds the imports it looks for", () => {
    const sample = [
      'import { a } from "@belay/worker";',
      "import {\n  b,\n} from '../../worker/src/b.js';",
      'export * from "./c.js";',
      'import "side-effect";',
      'const d = await import("@belay/sqlite");',
      'const e = require("pg");',
      '// import { f } from "commented-out";',
      '/* import("also-commented") */ const url = "postgres://x"; import g from "g";',
    ].join("\n");
    expect(importedSpecifiers(sample).sort()).toEqual(["../../worker/src/b.js", "./c.js", "@belay/sqlite", "@belay/worker", "g", "pg", "side-effect"]);
    expect(apps.map((a) => a.name).sort()).toEqual(expect.arrayContaining(["@belay/server", "@belay/worker"]));
    expect(stores.map((s) => s.name).sort()).toEqual(expect.arrayContaining(["@belay/memory", "@belay/postgres", "@belay/sqlite"]));
    for (const pkg of [...apps, ...stores]) expect(sourceFiles(join(pkg.dir, "src")).length, pkg.name).toBeGreaterThan(0);
  });

  it("no app depends on another app", () => {
    const offending = apps.flatMap((app) =>
      app.dependencies.filter((dep) => apps.some((other) => other !== app && other.name === dep)).map((dep) => `${app.name} → ${dep}`),
    );
    expect(offending, "share code through a package (e.g. @belay/host), not through an app").toEqual([]);
  });

  it("no app imports another app", () => {
    const offending = apps.flatMap((app) => crossings(app, apps.filter((other) => other !== app)));
    expect(offending, "share code through a package (e.g. @belay/host), not through an app").toEqual([]);
  });

  it("no store package depends on or imports another store package", () => {
    const offending = stores.flatMap((store) => {
      const others = stores.filter((other) => other !== store);
      const dependencies = store.dependencies.filter((dep) => others.some((o) => o.name === dep)).map((dep) => `${store.name}/package.json → ${dep}`);
      return [...dependencies, ...crossings(store, others)];
    });
    expect(offending, "a store stands on @belay/contract alone").toEqual([]);
  });
});
