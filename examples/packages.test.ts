// What gets published, checked on the packed tarballs themselves (`pnpm pack` of every public
// package and app, the files `changeset publish` would upload) and on the release plan:
//  - each tarball ships the root's MIT LICENSE and the repository metadata, holds a complete build
//    (every entry point and every file its build imports) and no sources or tests, declares every
//    package its build imports, has a shebang on each binary, and its README links only to files it
//    ships (anything else links to the repository);
//  - each README's install lines name every package its examples import, and no README or
//    changeset states a clause count (the suites grow: a count would drift);
//  - the changesets: `changeset status` passes, none names a private or ignored package, and
//    `changeset version`, run in a scratch copy, releases every unreleased (0.0.0) package at 0.1.0.
// fresh-installs.test.ts installs these tarballs into fresh projects and runs them.
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, pack } from "./support/fresh-project.js";
import { type PublicPackage, importedByExample, installedByReadme, publishedPackages, readmeExamples } from "./support/readme-examples.js";

const root = fileURLToPath(new URL("..", import.meta.url));
/** The repository every package.json and README link names (a placeholder organisation until the project has its own). */
const REPOSITORY = "https://github.com/belay-dev/belay";
const packages = publishedPackages(root);
const changesetBin = join(root, "node_modules", ".bin", "changeset");

/** A tarball, unpacked: its files (relative to its `package/` folder) and its package.json. */
interface Unpacked {
  readonly source: PublicPackage;
  readonly dir: string;
  readonly files: readonly string[];
  readonly json: Record<string, unknown>;
}

function filesUnder(dir: string, prefix = ""): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? filesUnder(path, `${prefix}${entry}/`) : [`${prefix}${entry}`];
  });
}

/** Every string leaf of an `exports`-like value. */
function leaves(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value === null || typeof value !== "object") return [];
  return Object.values(value).flatMap(leaves);
}

/** The module specifiers a built file imports, re-exports, loads or requires. */
function specifiersOf(code: string): string[] {
  const found: string[] = [];
  for (const match of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)["']([^"'\s]+)["']/g)) found.push(match[1]!);
  return found;
}

const packageName = (specifier: string) => (specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!);
const builtin = (name: string) => name.startsWith("node:") || builtinModules.includes(name);

/** The relative link targets of a markdown text, outside code (inline spans and fenced blocks). */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  const targets = [
    ...[...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
    ...[...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]!),
    ...[...prose.matchAll(/\b(?:href|src)\s*=\s*["']([^"']+)["']/g)].map((m) => m[1]!),
  ];
  return targets.filter((t) => !/^(?:[a-z][a-z0-9+.-]*:|#|\/\/)/i.test(t));
}

describe("the packed packages", () => {
  const unpacked = new Map<string, Unpacked>();
  let work: string;
  const license = readFileSync(join(root, "LICENSE"), "utf8");

  beforeAll(async () => {
    const steps: string[] = [];
    await ensureBuilt(root, packages, steps);
    work = mkdtempSync(join(tmpdir(), "belay-packages-"));
    mkdirSync(join(work, "tarballs"));
    const tarballs = await pack(packages, join(work, "tarballs"), steps);
    for (const p of packages) {
      const into = join(work, "unpacked", p.name.replace("/", "__"));
      mkdirSync(into, { recursive: true });
      const untar = spawnSync("tar", ["-xzf", tarballs.get(p.name)!, "-C", into], { encoding: "utf8" });
      if (untar.status !== 0) throw new Error(`tar -xzf ${tarballs.get(p.name)}: ${untar.stderr}`);
      const dir = join(into, "package");
      unpacked.set(p.name, { source: p, dir, files: filesUnder(dir), json: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown> });
    }
    console.info(`[packages] ${steps.join("; ")}`);
  }, 900_000);

  afterAll(() => {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("packs every package and app this repository publishes", () => {
    expect(packages.map((p) => p.name)).toEqual(expect.arrayContaining(["@belay/core", "@belay/conformance", "@belay/server", "@belay/worker"]));
  });

  for (const p of packages) {
    const folder = relative(root, p.dir);
    const get = () => unpacked.get(p.name)!;

    describe(p.name, () => {
      it("ships the MIT LICENSE and names the repository, its folder, homepage and issues", () => {
        const { files, dir, json } = get();
        expect(files).toContain("LICENSE");
        expect(readFileSync(join(dir, "LICENSE"), "utf8"), "the root LICENSE, copied into the package folder").toBe(license);
        expect(json["license"]).toBe("MIT");
        expect(json["repository"]).toEqual({ type: "git", url: `git+${REPOSITORY}.git`, directory: folder });
        expect(json["homepage"]).toBe(`${REPOSITORY}/tree/main/${folder}#readme`);
        expect(json["bugs"]).toEqual({ url: `${REPOSITORY}/issues` });
        expect(json["private"]).toBeUndefined();
        expect((json["publishConfig"] as Record<string, unknown> | undefined)?.["access"]).toBe("public");
        expect(JSON.stringify(json), "pnpm pack replaces workspace: ranges").not.toContain("workspace:");
        const entries = JSON.stringify([json["exports"], json["main"], json["module"], json["types"], json["bin"]]);
        expect(entries, "publishConfig.exports leaves out the source condition").not.toContain("@belay/source");
      });

      it("holds a complete build and no sources or tests", () => {
        const { files, dir, json } = get();
        const has = (path: string) => files.includes(normalize(path).replace(/^\.\//, ""));
        const notBuilt = files.filter((f) => /(?:^|\/)(?:src|test|tests|__tests__)\//.test(f) || /\.(?:test|spec)\.[cm]?[jt]sx?$/.test(f) || (/\.[cm]?tsx?$/.test(f) && !/\.d\.[cm]?ts$/.test(f)));
        expect(notBuilt, "sources or tests in the tarball").toEqual([]);
        const entries = [...leaves(json["exports"]), ...leaves(json["bin"]), ...["main", "module", "types"].flatMap((k) => leaves(json[k]))];
        expect(entries.length).toBeGreaterThan(0);
        expect(entries.filter((e) => !has(e)), "entry points missing from the tarball").toEqual([]);
        // Every relative import of every built file (chunks included) is in the tarball.
        const missing: string[] = [];
        for (const file of files.filter((f) => /\.(?:[cm]?js|d\.[cm]?ts)$/.test(f))) {
          for (const specifier of specifiersOf(readFileSync(join(dir, file), "utf8")).filter((s) => s.startsWith("."))) {
            const target = normalize(join(dirname(file), specifier));
            const typed = [target, target.replace(/\.js$/, ".d.ts"), target.replace(/\.cjs$/, ".d.cts"), target.replace(/\.mjs$/, ".d.mts")];
            if (!typed.some((t) => files.includes(t))) missing.push(`${file} → ${specifier}`);
          }
        }
        expect(missing, "relative imports the tarball cannot satisfy").toEqual([]);
      });

      it("declares every package its build imports (dependencies or peers)", () => {
        const { files, dir, json } = get();
        const declared = new Set(["dependencies", "peerDependencies", "optionalDependencies"].flatMap((k) => Object.keys((json[k] ?? {}) as Record<string, string>)));
        const undeclared = new Set<string>();
        for (const file of files.filter((f) => /\.[cm]?js$/.test(f))) {
          for (const specifier of specifiersOf(readFileSync(join(dir, file), "utf8"))) {
            if (specifier.startsWith(".")) continue;
            const name = packageName(specifier);
            if (!builtin(name) && name !== p.name && !declared.has(name)) undeclared.add(`${name} (${file})`);
          }
        }
        expect([...undeclared], "imported by the build but not declared: a fresh install would not have it").toEqual([]);
      });

      it("starts each binary with a shebang", () => {
        const { dir, json } = get();
        for (const bin of leaves(json["bin"])) expect(readFileSync(join(dir, bin), "utf8").split("\n")[0], bin).toBe("#!/usr/bin/env node");
      });

      it("links its README only to files it ships", () => {
        const { files, dir } = get();
        expect(files).toContain("README.md");
        const broken = relativeLinks(readFileSync(join(dir, "README.md"), "utf8")).filter((link) => {
          const target = normalize(link.split("#")[0]!.replace(/^\.\//, "")).replace(/\/$/, "");
          return target.startsWith("..") || !(files.includes(target) || files.some((f) => f.startsWith(`${target}/`)));
        });
        expect(broken, `not in the tarball: link to ${REPOSITORY}/blob/main/${folder}/… instead`).toEqual([]);
      });
    });
  }
});

describe("the READMEs", () => {
  const { examples } = readmeExamples(root);

  it("name, in their install lines, every package their examples import", () => {
    const missing: string[] = [];
    for (const p of packages) {
      const readme = join(relative(root, p.dir), "README.md");
      const installed = installedByReadme(root, readme);
      for (const example of examples.filter((e) => e.readme === readme)) {
        for (const name of importedByExample(example).filter((n) => !builtin(n) && !installed.includes(n))) missing.push(`${readme}: example "${example.name}" imports ${name}`);
      }
    }
    expect(missing, "add them to the README's install line").toEqual([]);
  });

  it("state no clause counts (the suites grow, so a count drifts)", () => {
    const docs = [
      "README.md",
      ...["packages", "apps"].flatMap((folder) => readdirSync(join(root, folder)).map((entry) => join(folder, entry, "README.md"))),
      ...readdirSync(join(root, ".changeset")).filter((f) => f.endsWith(".md")).map((f) => join(".changeset", f)),
    ].filter((path) => existsSync(join(root, path)));
    const counts = docs.flatMap((path) =>
      [...readFileSync(join(root, path), "utf8").matchAll(/\b\d[\d,]*\s+(?:[a-z-]+\s+)?clauses?\b/gi)].map((m) => `${path}: "${m[0].replace(/\s+/g, " ")}"`),
    );
    expect(counts).toEqual([]);
  });
});

describe("the changesets", () => {
  const workspace = readdirSync(join(root, "packages"))
    .map((e) => join("packages", e))
    .concat(readdirSync(join(root, "apps")).map((e) => join("apps", e)), ["bench"])
    .filter((dir) => existsSync(join(root, dir, "package.json")));
  const manifests = new Map(workspace.map((dir) => [dir, JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) as Record<string, unknown>]));
  const byName = new Map([...manifests].map(([dir, json]) => [json["name"] as string, { dir, json }]));
  const config = JSON.parse(readFileSync(join(root, ".changeset", "config.json"), "utf8")) as { ignore: string[] };
  const changesets = readdirSync(join(root, ".changeset")).filter((f) => f.endsWith(".md") && f !== "README.md");

  it("name only public packages of this workspace, never a private or ignored one", () => {
    const wrong: string[] = [];
    for (const file of changesets) {
      const text = readFileSync(join(root, ".changeset", file), "utf8");
      const front = /^---\n([\s\S]*?)\n---/.exec(text);
      if (!front) {
        wrong.push(`${file}: no front matter`);
        continue;
      }
      for (const line of front[1]!.split("\n").filter((l) => l.trim() !== "")) {
        const entry = /^\s*["']?([^"':]+)["']?\s*:\s*(major|minor|patch|none)\s*$/.exec(line);
        if (!entry) wrong.push(`${file}: cannot read "${line}"`);
        else if (!byName.has(entry[1]!)) wrong.push(`${file}: ${entry[1]} is no package of this workspace`);
        else if (byName.get(entry[1]!)!.json["private"] === true) wrong.push(`${file}: ${entry[1]} is private (never released)`);
        else if (config.ignore.includes(entry[1]!)) wrong.push(`${file}: ${entry[1]} is ignored in .changeset/config.json`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("`changeset status` passes", () => {
    const out = join(mkdtempSync(join(tmpdir(), "belay-changeset-status-")), "plan.json");
    try {
      const status = spawnSync(changesetBin, ["status", `--output=${out}`], { cwd: root, encoding: "utf8", timeout: 120_000 });
      expect(status.status, `changeset status:\n${status.stdout}${status.stderr}`).toBe(0);
      // As changesets itself reads them: no changeset asks to release a private package.
      const plan = JSON.parse(readFileSync(out, "utf8")) as { changesets: { id: string; releases: { name: string }[] }[] };
      const named = plan.changesets.flatMap((c) => c.releases.filter((r) => byName.get(r.name)?.json["private"] === true).map((r) => `${c.id}: ${r.name}`));
      expect(named, "changesets naming a private package").toEqual([]);
    } finally {
      rmSync(dirname(out), { recursive: true, force: true });
    }
  });

  it("`changeset version` (in a scratch copy) releases every unreleased package at 0.1.0", () => {
    const scratch = mkdtempSync(join(tmpdir(), "belay-changeset-version-"));
    try {
      for (const file of ["package.json", "pnpm-workspace.yaml"]) copyFileSync(join(root, file), join(scratch, file));
      cpSync(join(root, ".changeset"), join(scratch, ".changeset"), { recursive: true });
      for (const dir of workspace) {
        mkdirSync(join(scratch, dir), { recursive: true });
        for (const file of ["package.json", "CHANGELOG.md"]) if (existsSync(join(root, dir, file))) copyFileSync(join(root, dir, file), join(scratch, dir, file));
      }
      const version = spawnSync(changesetBin, ["version"], { cwd: scratch, encoding: "utf8", timeout: 120_000, env: { ...process.env, CI: "true" } });
      expect(version.status, `changeset version:\n${version.stdout}${version.stderr}`).toBe(0);

      const problems: string[] = [];
      for (const [dir, before] of manifests) {
        const afterText = readFileSync(join(scratch, dir, "package.json"), "utf8");
        const after = JSON.parse(afterText) as Record<string, unknown>;
        const name = before["name"] as string;
        if (before["private"] === true) {
          if (afterText !== readFileSync(join(root, dir, "package.json"), "utf8")) problems.push(`${name} is private, but changeset version rewrote its package.json`);
          continue;
        }
        const [from, to] = [before["version"] as string, after["version"] as string];
        if (from === "0.0.0" && to !== "0.1.0") problems.push(`${name}: its first release would be ${to}, not 0.1.0 (it needs a "minor" changeset of its own)`);
        if (from !== "0.0.0" && Number(to.split(".")[0]) > Number(from.split(".")[0]) && !changesets.some((f) => new RegExp(`["']${name}["']\\s*:\\s*major`).test(readFileSync(join(root, ".changeset", f), "utf8")))) {
          problems.push(`${name}: ${from} → ${to}, a major no changeset asked for (a peer range out of range?)`);
        }
        if (to !== from && !(existsSync(join(scratch, dir, "CHANGELOG.md")) && readFileSync(join(scratch, dir, "CHANGELOG.md"), "utf8").includes(`## ${to}`))) {
          problems.push(`${name}: released as ${to} without a CHANGELOG.md entry`);
        }
      }
      const left = readdirSync(join(scratch, ".changeset")).filter((f) => f.endsWith(".md") && f !== "README.md");
      if (left.length > 0) problems.push(`changesets left unconsumed (they name no releasable package): ${left.join(", ")}`);
      expect(problems).toEqual([]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
