import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, expect, it } from "vitest";
import { startTestServer } from "./sdk-helpers.js";

// The README's durable-promise example, as written, run by node against a belay-server on SQLite
// (its import of @resonatehq/sdk pointed at this package's copy).

const dir = mkdtempSync(join(tmpdir(), "belay-readme-promises-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it.each([
  ["without tokens (a local program needs none)", [], undefined],
  ["with tokens (RESONATE_TOKEN, a token with the promises permission)", [{ name: "app", secret: "app-secret-123", permissions: ["promises" as const] }], "app-secret-123"],
] as const)("the README's SDK example runs against belay-server %s and prints hello ada", async (_what, tokens, token) => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("## Durable promises (Resonate SDK)"));
  const example = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  expect(example).toContain('from "@resonatehq/sdk"');
  const sdk = pathToFileURL(createRequire(import.meta.url).resolve("@resonatehq/sdk")).href;
  const file = join(dir, `app-${tokens.length}.mjs`);
  writeFileSync(file, example!.replace('from "@resonatehq/sdk"', `from ${JSON.stringify(sdk)}`));

  const running = await startTestServer(`sqlite:${join(dir, `belay-${tokens.length}.db`)}`, {}, tokens);
  expect(running.promises!.server.anonymous).toBe(tokens.length === 0 ? "local" : "none");
  try {
    const child = spawn(process.execPath, [file], { env: { ...process.env, RESONATE_URL: running.promises!.url, ...(token === undefined ? {} : { RESONATE_TOKEN: token }) }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, output).toBe(0);
    expect(output.trim().split("\n")).toContain("hello ada");
  } finally {
    await running.stop();
  }
});
