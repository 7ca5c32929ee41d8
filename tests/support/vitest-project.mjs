// The Vitest project every workspace package and app declares in its vitest.config.ts. Plain
// JavaScript with its types beside it (vitest-project.d.mts): a package's tsconfig checks its
// vitest.config.ts, and its rootDir admits a declaration file from outside the package, not a
// TypeScript source.
import { defineProject } from "vitest/config";

/**
 * Per-test and per-hook timeouts for suites that wait for events with deadlines of their own (up to
 * 30 s, for a loaded machine): the default 5 s per test would cut those waits short.
 */
export const EVENT_WAIT_TIMEOUTS = { testTimeout: 60_000, hookTimeout: 60_000 };

/**
 * The project of the package in the current folder: its `src/**` and `test/**` test files, with
 * workspace packages resolved to their src/ (the "@belay/source" export condition) in the test
 * files (ssr) and, when `test.globalSetup` is given, in the globalSetup file too, which vitest loads
 * in its own `__vitest__` environment; after-hooks in reverse order of registration. `test` names
 * the project and adds or overrides settings.
 */
export function workspaceProject(test) {
  const source = () => ({ resolve: { conditions: ["@belay/source"] } });
  return defineProject({
    environments: test.globalSetup === undefined ? { ssr: source() } : { ssr: source(), __vitest__: source() },
    // After-hooks run in reverse order of registration (vitest's default, pinned): a fixture that
    // registers its cleanup after the target's (a pool on a throwaway cluster) is undone first.
    test: { include: ["src/**/*.test.ts", "test/**/*.test.ts"], sequence: { hooks: "stack" }, ...test },
  });
}
