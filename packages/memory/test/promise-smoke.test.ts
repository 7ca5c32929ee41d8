import { promiseLifecycleSmoke } from "@belay/conformance";
import { describe, it } from "vitest";
import { MemoryPromiseStore } from "../src/index.js";

describe("memory promise store smoke", () => {
  it("lifecycle", async () => {
    const s = new MemoryPromiseStore();
    await s.migrate();
    await promiseLifecycleSmoke(s);
  });
});
