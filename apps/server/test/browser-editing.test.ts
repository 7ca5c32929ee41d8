import { fileURLToPath } from "node:url";
import { silentLogger } from "@belay/core";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "../src/index.js";
import { SEED_JOBS, seedShowcase } from "./fixtures.js";
import { SCREENSHOTS, ScreenshotSizes, browserRig, chromiumAvailable, eventually, text } from "./browser-helpers.js";
import { ADMIN, TOKENS, VIEWER, welcome } from "./helpers.js";

// The dashboard's editing forms and the workflow drawing in headless Chromium (Debian's): an
// operator enqueues, defines and redefines a schedule and cancels a workflow, each checked in
// the store and the audit trail; a viewer sees none of the forms and is refused when forcing
// one; and every page fits 1,280- and 1,920-pixel windows, its action column in view.

// Screenshot sizes are compared to the ones stored in fixtures/dashboard-screenshot-sizes.json.
const SIZES = fileURLToPath(new URL("./fixtures/dashboard-screenshot-sizes.json", import.meta.url));
const available = chromiumAvailable("dashboard editing browser tests");

/** Every dashboard page, as an operator with every permission sees it. */
const PAGES = [
  ["/", "overview"],
  ["/jobs", "jobs"],
  ["/jobs/ord-1-charge", "job-detail"],
  ["/enqueue", "enqueue"],
  ["/queues", "queues"],
  ["/failures", "failures"],
  ["/failures?tab=quarantined", "failures-quarantined"],
  ["/schedules", "schedules"],
  ["/schedules/new", "schedule-new"],
  ["/schedules/nightly-report/edit", "schedule-edit"],
  ["/workflows", "workflows"],
  ["/workflows/wf-ord-1", "workflow"],
  ["/observers", "observers"],
  ["/audit", "audit"],
  ["/login", "login"],
] as const;

describe.runIf(available)("dashboard editing in a browser", () => {
  const rig = browserRig(async (store) => {
    const server = createServer({ store, tokens: TOKENS, jobs: [welcome, ...Object.values(SEED_JOBS)], logger: silentLogger, livePollMs: 250 });
    await seedShowcase(store, server);
    return server;
  });
  let admin: BrowserContext;
  let page: Page;
  const sizes = new ScreenshotSizes(SIZES);

  beforeAll(async () => {
    admin = await rig.browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await admin.newPage();
    page.on("dialog", (dialog) => void dialog.accept());
    await page.goto(`${rig.listener.url}/?token=${ADMIN}`);
    await eventually(async () => expect(await text(page.locator(".who"))).toContain("Signed in as admin"));
  }, 60_000);

  afterAll(() => {
    sizes.save();
  });

  it("enqueues a job: a payload its schema refuses is named and writes nothing, a valid one is enqueued and audited", async () => {
    await page.goto(`${rig.listener.url}/jobs`);
    await page.click("[data-test=enqueue-link]");
    await page.waitForURL(/\/enqueue$/);
    const before = (await rig.store.listJobs({ jobNames: ["email.welcome"] })).jobs.length;
    await page.selectOption("#f-jobName", "email.welcome");
    await page.fill("#f-payload", '{"userId": ""}');
    await page.fill("#f-tags", "from-browser");
    await page.click("[data-test=enqueue-submit]");
    await eventually(async () => expect(await text(page.locator(".flash.error"))).toContain("payload.userId"));
    expect((await rig.store.listJobs({ jobNames: ["email.welcome"] })).jobs).toHaveLength(before);
    // The form keeps what was typed.
    expect(await page.inputValue("#f-tags")).toBe("from-browser");
    await page.screenshot({ path: `${SCREENSHOTS}enqueue-refused.png`, fullPage: true });
    await page.fill("#f-payload", '{"userId": "u-browser"}');
    await page.click("[data-test=enqueue-submit]");
    await page.waitForURL(/\/jobs\/[^/]+$/);
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toMatch(/enqueued \(email\.welcome in queue mail\)/));
    const id = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1)!);
    const job = await rig.store.getJob(id);
    expect(job).toMatchObject({ jobName: "email.welcome", queue: "mail" });
    expect(JSON.parse(job!.payload)).toEqual({ userId: "u-browser" });
    expect((await rig.store.listAuditRecords({ target: id })).records).toEqual([expect.objectContaining({ actor: "admin", action: "enqueue", targetKind: "job", detail: "email.welcome" })]);
  });

  it("creates a schedule (a bad cron is named first) and redefines it", async () => {
    await page.goto(`${rig.listener.url}/schedules`);
    await page.click("[data-test=new-schedule]");
    await page.waitForURL(/\/schedules\/new$/);
    await page.fill("#f-id", "browser-sweep");
    await page.fill("#f-cron", "every minute");
    await page.selectOption("#f-jobName", "report.build");
    await page.fill("#f-payload", '{"rows": 5}');
    await page.click("[data-test=schedule-submit]");
    await eventually(async () => expect(await text(page.locator(".flash.error"))).toContain("cron:"));
    expect(await rig.store.getSchedule("browser-sweep")).toBeNull();
    await page.fill("#f-cron", "*/15 * * * *");
    await page.click("[data-test=schedule-submit]");
    await page.waitForURL(/\/schedules$/);
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toContain("Schedule browser-sweep created"));
    expect(await rig.store.getSchedule("browser-sweep")).toMatchObject({ cron: "*/15 * * * *", jobName: "report.build", queue: "reports" });
    await page.click("[data-test=edit-browser-sweep]");
    await page.waitForURL(/\/schedules\/browser-sweep\/edit$/);
    expect(await page.inputValue("#f-cron")).toBe("*/15 * * * *");
    await page.fill("#f-cron", "0 6 * * 1");
    await page.check("input[name=noOverlap]");
    await page.click("[data-test=schedule-submit]");
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toContain("Schedule browser-sweep redefined"));
    expect(await rig.store.getSchedule("browser-sweep")).toMatchObject({ cron: "0 6 * * 1", noOverlap: true });
    expect((await rig.store.listAuditRecords({ target: "browser-sweep", targetKind: "schedule" })).records).toEqual([
      expect.objectContaining({ actor: "admin", action: "upsertSchedule", target: "browser-sweep", detail: "created" }),
      expect.objectContaining({ actor: "admin", action: "upsertSchedule", target: "browser-sweep", detail: "updated" }),
    ]);
  });

  it("draws a workflow from a job's page, each node linking back to its job", async () => {
    await page.goto(`${rig.listener.url}/jobs/ord-1-charge`);
    await page.click("[data-test=workflow-link]");
    await page.waitForURL(/\/workflows\/wf-ord-1$/);
    const nodes = page.locator("svg.wf [data-test=wf-node]");
    await eventually(async () => expect(await nodes.count()).toBe(3));
    for (const id of ["ord-1-validate", "ord-1-charge", "ord-1-ship"]) {
      const node = page.locator(`svg.wf [data-job="${id}"]`);
      expect(await node.getAttribute("data-state")).toBe((await rig.store.getJob(id))!.state);
      expect(await node.isVisible()).toBe(true);
    }
    expect(await page.locator("svg.wf [data-test=wf-edge]").count()).toBe(2);
    // Parents left of their children.
    const x = async (id: string) => (await page.locator(`svg.wf [data-job="${id}"] rect`).boundingBox())!.x;
    expect(await x("ord-1-validate")).toBeLessThan(await x("ord-1-charge"));
    expect(await x("ord-1-charge")).toBeLessThan(await x("ord-1-ship"));
    await page.screenshot({ path: `${SCREENSHOTS}workflow.png`, fullPage: true });
    await page.locator('svg.wf [data-job="ord-1-ship"]').click();
    await page.waitForURL(/\/jobs\/ord-1-ship$/);
    await eventually(async () => expect((await text(page.locator(".head .id"))).trim()).toBe("ord-1-ship"));
  });

  it("cancels a workflow's unfinished members in one click, each audited", async () => {
    await page.goto(`${rig.listener.url}/workflows/wf-ord-1`);
    const live = (await rig.store.listJobs({ workflowId: "wf-ord-1", states: ["scheduled", "awaitingParents", "leased"] })).jobs.map((j) => j.id);
    expect(live.length).toBeGreaterThan(0);
    await page.click("[data-test=cancel-workflow]");
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toMatch(/^Workflow wf-ord-1: \d+ cancelled/));
    for (const id of live) expect((await rig.store.getJob(id))?.state).toBe("cancelled");
    const records = (await rig.store.listAuditRecords({ order: "newestFirst" })).records;
    expect(records[0]).toMatchObject({ actor: "admin", action: "cancel", targetKind: "job" });
    expect(live).toContain(records[0]!.target);
    await eventually(async () => expect(await page.locator("[data-test=cancel-workflow]").count()).toBe(0));
    await eventually(async () => expect(await page.locator('svg.wf [data-state="cancelled"]').count()).toBe(live.length));
  });

  it("shows a viewer none of the forms and refuses them when forced", async () => {
    const viewer = await rig.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await viewer.newPage();
    await p.goto(`${rig.listener.url}/jobs?token=${VIEWER}`);
    await eventually(async () => expect(await text(p.locator(".who"))).toContain("Signed in as viewer"));
    expect(await p.locator("[data-test=enqueue-link]").count()).toBe(0);
    await p.goto(`${rig.listener.url}/enqueue`);
    await eventually(async () => expect(await text(p.locator("main"))).toContain("You may not enqueue jobs"));
    await p.goto(`${rig.listener.url}/schedules`);
    expect(await p.locator("[data-test=new-schedule], [data-test^=edit-]").count()).toBe(0);
    await p.goto(`${rig.listener.url}/workflows/wf-ord-1`);
    expect(await p.locator("[data-test=cancel-workflow]").count()).toBe(0);
    const jobsBefore = (await rig.store.listJobs({ limit: 200 })).jobs.length;
    const schedulesBefore = await rig.store.listSchedules();
    const statuses = await p.evaluate(async () => {
      const csrf = (document.querySelector("input[name=_csrf]") as HTMLInputElement).value;
      const send = (path: string, fields: Record<string, string>) =>
        fetch(path, { method: "POST", body: new URLSearchParams({ _csrf: csrf, _confirmed: "1", ...fields }), redirect: "manual" }).then((r) => r.status);
      return [
        await send("/actions/enqueue", { jobName: "email.welcome", payload: '{"userId":"x"}' }),
        await send("/actions/schedules/save", { mode: "new", id: "forced", cron: "* * * * *", jobName: "report.build" }),
        await send("/actions/workflows/wf-ord-1/cancel", {}),
      ];
    });
    expect(statuses).toEqual([403, 403, 403]);
    expect((await rig.store.listJobs({ limit: 200 })).jobs).toHaveLength(jobsBefore);
    expect(await rig.store.listSchedules()).toEqual(schedulesBefore);
    await viewer.close();
  });

  it.each([1280, 1400, 1920])("every page fits a %i px window, its action column in view", async (width) => {
    const p = await admin.newPage();
    await p.setViewportSize({ width, height: 900 });
    for (const [path, name] of PAGES) {
      await p.goto(rig.listener.url + path);
      await eventually(async () => expect(await p.locator("body").isVisible()).toBe(true));
      const layout = await p.evaluate(() => {
        const inView = (el: Element) => {
          const box = el.getBoundingClientRect();
          const clip = el.closest(".card-b")?.getBoundingClientRect() ?? { left: 0, right: window.innerWidth };
          return box.width === 0 || (box.left >= Math.max(0, clip.left) - 0.5 && box.right <= Math.min(window.innerWidth, clip.right) + 0.5);
        };
        const actions = Array.from(document.querySelectorAll("td.acts, .head .acts, .card-actions"));
        const main = document.querySelector("main.content");
        return {
          overflow: document.documentElement.scrollWidth - window.innerWidth,
          cards: Math.max(0, ...Array.from(main?.querySelectorAll(".card-b") ?? [], (el) => el.scrollWidth - el.clientWidth)),
          actions: actions.length,
          outside: actions.filter((el) => !inView(el)).map((el) => el.textContent?.trim().slice(0, 40)),
        };
      });
      expect(layout.overflow, `${path} at ${width} px scrolls sideways by ${layout.overflow} px`).toBeLessThanOrEqual(0);
      expect(layout.cards, `${path} at ${width} px: a card scrolls sideways by ${layout.cards} px`).toBeLessThanOrEqual(0);
      expect(layout.outside, `${path} at ${width} px: action cells outside the view`).toEqual([]);
      if (path === "/schedules") expect(layout.actions).toBeGreaterThan(0);
      const key = `${name}-${width}`;
      const size = await sizes.check(p, key);
      // Exactly the window's width (anything wider scrolled sideways).
      expect(size.width, `${path} screenshot at ${width} px`).toBe(width);
    }
    await p.close();
  }, 120_000);
});
