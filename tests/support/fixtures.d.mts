/** Which fixture of which package, and what stays out of its bundle (see fixtures.mjs). */
export interface FixtureBundle {
  /** The package's folder, holding test/fixtures/<name>.ts. */
  readonly packageDir: string;
  readonly name: string;
  readonly external: readonly (string | RegExp)[];
}

/** Bundles a package's TypeScript test fixture for plain `node`; resolves to the bundle's path. */
export declare function bundleFixture(fixture: FixtureBundle): Promise<string>;

/** The fixture bundled before the current suite's tests; `script` is its path inside a test. */
export declare function bundledBeforeAll(fixture: FixtureBundle & { readonly timeoutMs?: number | undefined }): { readonly script: string };

/** A temporary folder for the current test file, removed after its tests. */
export declare function testDir(prefix: string): string;
