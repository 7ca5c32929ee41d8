import { rmSync } from "node:fs";
import { join } from "node:path";
import { testDir } from "../../../../tests/support/fixtures.mjs";

/**
 * Database files of the current test file: a temporary folder (`prefix` and a random tail,
 * removed after the file's tests) and `fresh()`, a new path in it on each call (`<stem>-1.db`, …).
 */
export function databaseFiles(prefix: string, stem: string): { readonly dir: string; fresh(): string } {
  const dir = testDir(prefix);
  let files = 0;
  return { dir, fresh: () => join(dir, `${stem}-${++files}.db`) };
}

/** Removes the database file at `path` and its WAL companions (`-wal`, `-shm`). */
export function removeDatabase(path: string): void {
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
}
