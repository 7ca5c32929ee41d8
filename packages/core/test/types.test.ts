import { MemoryStore } from "@belay/memory";
import { describe, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { Client, defineJob, type OutputOf, type PayloadOf } from "../src/index.js";

// Type-level tests: `pnpm typecheck` (tsc --noEmit over test/) fails if a @ts-expect-error line
// stops being an error, i.e. if a wrong payload starts to compile.

const sendWelcome = defineJob({
  name: "email.welcome",
  schema: z.object({ userId: z.string(), locale: z.enum(["en", "de"]).default("en") }),
  handler: async ({ userId, locale }) => ({ userId, locale, sent: true as const }),
});

const resize = defineJob({
  name: "image.resize",
  handler: (payload: { url: string; width: number }) => payload.width,
});

describe("typed jobs", () => {
  it("infers payloads from the schema's input and the handler's parameter, outputs from the return", () => {
    expectTypeOf<PayloadOf<typeof sendWelcome>>().toEqualTypeOf<{ userId: string; locale?: "en" | "de" | undefined }>();
    expectTypeOf<OutputOf<typeof sendWelcome>>().toEqualTypeOf<{ userId: string; locale: "en" | "de"; sent: true }>();
    expectTypeOf<PayloadOf<typeof resize>>().toEqualTypeOf<{ url: string; width: number }>();
    expectTypeOf<OutputOf<typeof resize>>().toEqualTypeOf<number>();
  });

  it("rejects a wrong payload at compile time and accepts a right one", async () => {
    const client = new Client({ store: new MemoryStore() });
    await client.enqueue(sendWelcome, { userId: "u1" });
    await client.enqueue(resize, { url: "https://x/y.png", width: 200 });
    // @ts-expect-error userId must be a string
    await client.enqueue(sendWelcome, { userId: 42 }).catch(() => undefined);
    // @ts-expect-error a required field is missing
    await client.enqueue(resize, { url: "https://x/y.png" }).catch(() => undefined);
    // @ts-expect-error an unknown locale
    await client.enqueue(sendWelcome, { userId: "u1", locale: "fr" }).catch(() => undefined);
  });
});
