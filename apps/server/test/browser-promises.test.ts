import { fileURLToPath } from "node:url";
import { silentLogger } from "@belay/core";
import { MemoryPromiseStore } from "@belay/memory";
import type { Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { createServer } from "../src/index.js";
import { ScreenshotSizes, browserRig, chromiumAvailable, eventually, text } from "./browser-helpers.js";
import { ADMIN, TOKENS } from "./helpers.js";
import { type SeededPromises, seedPromises } from "./promise-fixtures.js";

// The durable-promise pages in headless Chromium (Debian's, never a downloaded build), at 1,280
// and 1,920 pixels wide: the list, a search, a task waiting on its children, the schedules.
// Nothing may overflow the viewport sideways; each screenshot's size is compared to the one
// stored in fixtures/promise-screenshot-sizes.json (sizes, not pixels: fonts differ between
// machines). BELAY_UPDATE_SCREENSHOT_SIZES=1 rewrites that file from this run.

const WIDTHS = [1280, 1920] as const;
const SIZES = fileURLToPath(new URL("./fixtures/promise-screenshot-sizes.json", import.meta.url));
const available = chromiumAvailable("promise dashboard browser tests");

describe.runIf(available)("promise pages in a browser", () => {
  let promises: MemoryPromiseStore;
  let seeded: SeededPromises;
  const rig = browserRig(async (store) => {
    promises = new MemoryPromiseStore();
    await promises.migrate();
    seeded = await seedPromises(promises, Date.now(), { batch: 120, extraSchedules: 30 });
    return createServer({ store, promises, tokens: TOKENS, logger: silentLogger, livePollMs: 250 });
  });
  const sizes = new ScreenshotSizes(SIZES);

  afterAll(() => {
    sizes.save();
  });

  /** A page signed in as admin (who may see data), at `width` pixels. */
  async function open(width: number): Promise<Page> {
    const context = await rig.browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${rig.listener.url}/?token=${ADMIN}`);
    await eventually(async () => expect(await text(page.locator(".who"))).toContain("Signed in as admin"));
    return page;
  }

  /** Nothing overflows sideways: the document, the main content and each card body fit. */
  async function fits(page: Page, what: string): Promise<void> {
    const overflow = await page.evaluate(() => {
      const main = document.querySelector("main.content")!;
      const over = (el: Element) => el.scrollWidth - el.clientWidth;
      return {
        document: document.documentElement.scrollWidth - window.innerWidth,
        main: over(main),
        cards: Math.max(0, ...Array.from(main.querySelectorAll(".card-b"), over)),
      };
    });
    expect(overflow, `${what} overflows sideways`).toEqual({ document: 0, main: 0, cards: 0 });
  }


  for (const width of WIDTHS) {
    describe(`at ${width} px`, () => {
      it("lists promises with their state, deadline, target and task, and pages on", async () => {
        const page = await open(width);
        await page.click("nav a:has-text('Promises')");
        await page.waitForURL(/\/promises$/);
        const rows = page.locator("table[data-test=promises] tbody tr");
        await eventually(async () => expect(await rows.count()).toBe(50));
        const row = (id: string) => page.locator("tr", { has: page.locator(`a[href="/promises/${id}"]`) });
        expect(await text(row("batch-000"))).toMatch(/Resolved[\s\S]*poll:\/\/any@batch[\s\S]*Fulfilled\s+v0/);
        expect(await text(row("batch-004"))).toMatch(/Pending[\s\S]*in (4 min \d+ s|5 min)[\s\S]*poll:\/\/any@batch[\s\S]*Pending\s+v0/);
        await sizes.check(page, `promises-${width}`);
        await fits(page, "the promises list");
        // By id, the workflow comes after the 120 batch promises: on the third page.
        for (const cursor of ["batch-049", "batch-099"]) {
          await page.click("[data-test=next-page]");
          await page.waitForURL(new RegExp(`cursor=${cursor}$`));
        }
        await eventually(async () => expect(await text(row(seeded.root))).toMatch(/Pending[\s\S]*in (1 d|23 h \d+ min)[\s\S]*poll:\/\/any@orders[\s\S]*Suspended\s+v1/));
        expect(await page.locator("[data-test=next-page]").getAttribute("aria-disabled")).toBe("true");
        await fits(page, "the third page");
        await page.context().close();
      });

      it("searches by id prefix, state and tag", async () => {
        const page = await open(width);
        await page.goto(`${rig.listener.url}/promises`);
        await page.fill("input[name=prefix]", "order-7");
        await page.selectOption("select[name=state]", "pending");
        await page.click("button:has-text('Search')");
        await page.waitForURL(/prefix=order-7/);
        const ids = page.locator("table[data-test=promises] tbody tr td:first-child a");
        await eventually(async () => expect(await ids.allInnerTexts()).toEqual([seeded.root, seeded.child, seeded.timer]));
        await page.fill("input[name=tag]", "tenant=acme");
        await page.click("button:has-text('Search')");
        await page.waitForURL(/tag=tenant%3Dacme/);
        await eventually(async () => expect(await ids.allInnerTexts()).toEqual([seeded.root]));
        await eventually(async () => expect(await text(page.locator(".chip"))).toContain("tenant=acme"));
        await sizes.check(page, `promises-search-${width}`);
        await fits(page, "the search");
        await page.context().close();
      });

      it("shows a task waiting on its children, and follows a callback to the child", async () => {
        const page = await open(width);
        await page.goto(`${rig.listener.url}/promises?prefix=order-7`);
        await page.click(`table[data-test=promises] a[href="/promises/${seeded.root}"]`);
        await page.waitForURL(new RegExp(`/promises/${seeded.root}$`));
        await eventually(async () => expect((await text(page.locator(".head .id"))).trim()).toBe(seeded.root));
        expect(await text(page.locator("[data-test=task]"))).toMatch(/Suspended[\s\S]*Version\s*1/);
        const waitsOn = page.locator("[data-test=callbacks] > div").first().locator("li");
        expect(await waitsOn.allInnerTexts()).toEqual([expect.stringMatching(new RegExp(`^${seeded.child}\\s*Pending`)), expect.stringMatching(new RegExp(`^${seeded.timer}\\s*Pending`))]);
        expect(await text(page.locator("[data-test=listeners]"))).toContain(seeded.listener);
        expect(await text(page.locator("[data-test=lineage]"))).toContain(seeded.step);
        expect(await text(page.locator("pre.json").first())).toContain("4242-4242-secret");
        await sizes.check(page, `promise-detail-${width}`);
        await fits(page, "the promise's page");

        await page.locator("[data-test=callbacks] a", { hasText: seeded.child }).click();
        await page.waitForURL(new RegExp(`/promises/${seeded.child.replace(".", "\\.")}$`));
        await eventually(async () => expect(await text(page.locator("[data-test=task]"))).toMatch(new RegExp(`Acquired[\\s\\S]*${seeded.childPid}[\\s\\S]*15 min`)));
        await sizes.check(page, `promise-detail-child-${width}`);
        await fits(page, "the child's page");

        await page.goto(`${rig.listener.url}/promises/${seeded.timer}`);
        await eventually(async () => expect(await text(page.locator("table[data-test=messages] tbody tr"))).toMatch(/execute\s+poll:\/\/any@orders\s+0\s+1/));
        await fits(page, "the timer's page");
        await page.context().close();
      });

      it("lists the promise schedules", async () => {
        const page = await open(width);
        await page.click("nav a:has-text('Promise schedules')");
        await page.waitForURL(/\/promise-schedules$/);
        const rows = page.locator("table[data-test=promise-schedules] tbody tr");
        await eventually(async () => expect(await rows.count()).toBe(32));
        const nightly = page.locator("tr", { hasText: "nightly-report.{{.timestamp}}" });
        expect(await text(nightly)).toMatch(/nightly-report[\s\S]*0 3 \* \* \*[\s\S]*in (4 h 5\d min|5 h)[\s\S]*never[\s\S]*poll:\/\/any@orders/);
        await sizes.check(page, `promise-schedules-${width}`);
        await fits(page, "the promise schedules");
        await page.context().close();
      });
    });
  }
});
