import type { UserWorkspaceConfig } from "vitest/config";

type ProjectTest = NonNullable<UserWorkspaceConfig["test"]>;

/** Per-test and per-hook timeouts for suites that wait for events with deadlines of their own. */
export declare const EVENT_WAIT_TIMEOUTS: { readonly testTimeout: number; readonly hookTimeout: number };

/** The Vitest project of the package in the current folder (see vitest-project.mjs). */
export declare function workspaceProject(test: ProjectTest & { readonly name: string }): UserWorkspaceConfig;
