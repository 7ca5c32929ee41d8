// The package README's example, verbatim: if this test breaks, fix the README too.
import { defineJob } from "@belay/core";
import { expect, it } from "vitest";
import { createTestHarness } from "../src/index.js";

const flaky = defineJob({
  name: "flaky",
  retry: { maxAttempts: 3, delaysMs: [10_000, 20_000] },
  handler: () => {
    throw new Error("upstream down");
  },
});

it("retries three times then dead-letters", async () => {
  const h = await createTestHarness({ jobs: [flaky] });
  const { id } = await h.client.enqueue(flaky, undefined);
  await h.advance(60_000);
  expect((await h.job(id)).state).toBe("deadLettered");
  expect((await h.history(id)).filter((t) => t.state === "leased")).toHaveLength(3);
  await h.stop();
});
