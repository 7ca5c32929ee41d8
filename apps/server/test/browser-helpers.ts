import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { MemoryStore } from "@belay/memory";
import { type Browser, type Locator, type Page, chromium } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type BelayServer, type Listener, serve } from "../src/index.js";

// What the browser tests share: Debian's Chromium (never a downloaded build), the loud answer
// when it is missing, retries for playwright-core (it has no web-first assertions), and
// screenshots whose sizes, not pixels (fonts differ between machines), are compared to a stored
// file. BELAY_UPDATE_SCREENSHOT_SIZES=1 rewrites that file from the run.

export const CHROMIUM = "/usr/bin/chromium";
export const SCREENSHOTS = fileURLToPath(new URL("../test-output/screenshots/", import.meta.url));
const UPDATE_SIZES = process.env["BELAY_UPDATE_SCREENSHOT_SIZES"] === "1";

/**
 * Whether Chromium is here. When it is not, a test says so: a failing one under `CI=true`, else
 * a skipped one with a warning on stderr. Call at the top level of a test file.
 */
export function chromiumAvailable(what: string): boolean {
  const available = existsSync(CHROMIUM);
  if (available) return true;
  const reason = `the browser tests need ${CHROMIUM} (apt-get install -y chromium)`;
  if (process.env["CI"] === "true") {
    it(`Chromium is installed for the ${what}`, () => {
      throw new Error(`${reason}, and it is missing under CI=true`);
    });
  } else {
    console.warn(`\n*** SKIPPING the ${what}: ${reason} ***\n`);
    it.skip(`${what}: skipped, ${reason}`, () => {});
  }
  return false;
}

/** Headless Chromium with the flags this machine's closed network needs. */
export function launchChromium(): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
}

/** What a browser suite runs on: a memory store, the server over it, its listener, Chromium. */
export interface BrowserRig {
  readonly store: MemoryStore;
  readonly server: BelayServer;
  readonly listener: Listener;
  readonly browser: Browser;
}

/**
 * Before the enclosing block's tests: a migrated memory store, the server `open` makes over it
 * (seeding it as the suite needs), listening on a free port, and Chromium; after them, all closed.
 * The answer is filled in by the time the block's own `beforeAll` hooks run.
 */
export function browserRig(open: (store: MemoryStore) => Promise<BelayServer>): BrowserRig {
  const rig: { -readonly [K in keyof BrowserRig]?: BrowserRig[K] } = {};
  beforeAll(async () => {
    rig.store = new MemoryStore();
    await rig.store.migrate();
    rig.server = await open(rig.store);
    rig.listener = await serve(rig.server, { port: 0 });
    rig.browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await rig.browser?.close();
    await rig.listener?.close();
    await rig.server?.close();
  });
  return rig as BrowserRig;
}

/** Retries `check` until it passes or `timeoutMs` runs out. */
export async function eventually(check: () => Promise<void>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export const text = (locator: Locator) => locator.innerText();

export interface Size {
  readonly width: number;
  readonly height: number;
}

/** A PNG's size, from its IHDR chunk. */
export function pngSize(png: Buffer): Size {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** Full-page screenshots checked against the sizes stored in `file` (the width exactly, the height within 15%). */
export class ScreenshotSizes {
  readonly #file: string;
  readonly #stored: Record<string, Size>;
  readonly #measured: Record<string, Size> = {};

  constructor(file: string) {
    this.#file = file;
    this.#stored = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, Size>) : {};
  }

  /** Takes `name`'s screenshot, checks its size and answers it. */
  async check(page: Page, name: string): Promise<Size> {
    const size = pngSize(await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true }));
    this.#measured[name] = size;
    if (UPDATE_SIZES) return size;
    const expected = this.#stored[name];
    expect(expected, `no stored size for ${name} (run with BELAY_UPDATE_SCREENSHOT_SIZES=1)`).toBeDefined();
    expect(size.width, `${name} width`).toBe(expected!.width);
    expect(Math.abs(size.height - expected!.height), `${name} is ${size.height}px high, stored ${expected!.height}px`).toBeLessThanOrEqual(Math.max(120, expected!.height * 0.15));
    return size;
  }

  /** With BELAY_UPDATE_SCREENSHOT_SIZES=1, writes what this run measured into the file. */
  save(): void {
    if (UPDATE_SIZES && Object.keys(this.#measured).length > 0) writeFileSync(this.#file, `${JSON.stringify({ ...this.#stored, ...this.#measured }, null, 2)}\n`);
  }
}
