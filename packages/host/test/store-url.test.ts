import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isBelayError } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { openPromiseStore, openStore, redactStoreUrl } from "../src/index.js";

describe("openStore", () => {
  it("opens memory: and sqlite: stores, with the URL's options", async () => {
    const memory = await openStore("memory:");
    expect(memory.capabilities.name).toBe("memory");
    await memory.close();

    const dir = mkdtempSync(join(tmpdir(), "belay-host-store-url-"));
    try {
      const sqlite = await openStore(`sqlite:${join(dir, "belay.db")}?prefix=app_&synchronous=full`, { bounds: { claimBatch: 7 } });
      expect(sqlite.capabilities.name).toBe("sqlite");
      expect(sqlite.capabilities.bounds.claimBatch).toBe(7);
      await sqlite.migrate();
      await sqlite.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses an empty, unknown or malformed URL, naming the store field", async () => {
    for (const [url, message] of [
      ["", /needs a store URL/],
      ["redis://localhost", /unknown store URL/],
      ["sqlite:", /needs a file path/],
      ["sqlite:./x.db?synchronous=off", /synchronous must be normal or full/],
    ] as const) {
      const error = await openStore(url).then(
        () => null,
        (e: unknown) => e,
      );
      expect(isBelayError(error, "BELAY_INVALID_INPUT"), url).toBe(true);
      expect((error as { field: string }).field).toBe("store");
      expect((error as Error).message).toMatch(message);
    }
  });

  it("opens the promise store of memory: and sqlite: URLs, beside the job store in the same file", async () => {
    const memory = await openPromiseStore("memory:", { settings: { retryTimeoutMs: 5_000 } });
    expect(memory.capabilities.name).toBe("memory");
    expect(memory.capabilities.settings.retryTimeoutMs).toBe(5_000);
    await memory.close();

    const dir = mkdtempSync(join(tmpdir(), "belay-host-promise-url-"));
    try {
      const url = `sqlite:${join(dir, "belay.db")}?prefix=app_`;
      const jobs = await openStore(url);
      await jobs.migrate();
      const promises = await openPromiseStore(url, { bounds: { idLength: 64 } });
      expect(promises.capabilities.name).toBe("sqlite");
      expect(promises.capabilities.bounds.idLength).toBe(64);
      await promises.migrate();
      expect((await promises.handle({ kind: "promise.create", id: "p1", timeoutAt: 10_000 }, 0)).status).toBe(200);
      await promises.close();
      const again = await openPromiseStore(url);
      expect(await again.handle({ kind: "promise.get", id: "p1" }, 1)).toMatchObject({ status: 200, data: { promise: { id: "p1", state: "pending" } } });
      await again.close();
      await jobs.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a bad promise store URL as openStore does", async () => {
    for (const url of ["", "redis://localhost", "sqlite:", "postgres://[bad"]) {
      const error = await openPromiseStore(url).then(
        () => null,
        (e: unknown) => e,
      );
      expect(isBelayError(error, "BELAY_INVALID_INPUT"), url).toBe(true);
      expect((error as { field: string }).field).toBe("store");
    }
  });

  it("masks a password in a URL for logs", () => {
    expect(redactStoreUrl("postgres://app:s3cr%40t@db:5432/app?schema=jobs")).toBe("postgres://app:***@db:5432/app?schema=jobs");
    expect(redactStoreUrl("postgres://app@db/app")).toBe("postgres://app@db/app");
    expect(redactStoreUrl("sqlite:./belay.db")).toBe("sqlite:./belay.db");
  });
});
