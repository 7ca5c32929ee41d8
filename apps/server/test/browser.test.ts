import { silentLogger } from "@belay/core";
import type { BrowserContext, Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { createServer } from "../src/index.js";
import { seedShowcase } from "./fixtures.js";
import { SCREENSHOTS, browserRig, chromiumAvailable, eventually, text } from "./browser-helpers.js";
import { ADMIN, TOKENS, VIEWER } from "./helpers.js";

// The dashboard in headless Chromium (Debian's, never a downloaded build): an operator's day,
// each action checked in the store and in the audit log, and a screenshot of every page.

const available = chromiumAvailable("dashboard browser tests");

describe.runIf(available)("dashboard in a browser", () => {
  let seeded: Awaited<ReturnType<typeof seedShowcase>>;
  const rig = browserRig(async (store) => {
    const server = createServer({ store, tokens: TOKENS, logger: silentLogger, livePollMs: 250 });
    seeded = await seedShowcase(store, server);
    return server;
  });
  let admin: BrowserContext;
  let page: Page;

  const shot = async (p: Page, name: string) => {
    await p.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
  };
  const audit = async () => (await rig.store.listAuditRecords({ order: "newestFirst" })).records;

  beforeAll(async () => {
    admin = await rig.browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await admin.newPage();
    page.on("dialog", (dialog) => void dialog.accept());
    await page.goto(`${rig.listener.url}/?token=${ADMIN}`);
  }, 60_000);

  it("opens the overview signed in, with the token gone from the address", async () => {
    expect(new URL(page.url()).search).toBe("");
    await eventually(async () => expect(await text(page.locator(".who"))).toContain("Signed in as admin"));
    await eventually(async () => expect(await page.locator(".stats .stat").count()).toBe(7));
    await eventually(async () => expect(await page.locator("[data-live-indicator]").getAttribute("class")).toMatch(/on/));
    await shot(page, "overview");
  });

  it("updates the overview live when counts change", async () => {
    const tile = page.locator(".stat.s-scheduled .v");
    const before = Number((await tile.innerText()).replace(/,/g, ""));
    await rig.store.enqueue({ jobs: [{ id: "live-1", jobName: "email.send", queue: "mail", payload: "{}", dueAt: Date.now() + 60_000 }], now: Date.now() });
    await eventually(async () => expect((await text(tile)).trim()).toBe(String(before + 1)));
  });

  it("filters jobs by tag", async () => {
    await page.goto(`${rig.listener.url}/jobs`);
    await page.fill("input[name=tag][data-tag-suggest]", "tenant=acme");
    await page.click("button:has-text('Apply')");
    await page.waitForURL(/tag=tenant%3Dacme/);
    const rows = page.locator("table.grid tbody tr");
    await eventually(async () => expect(await rows.count()).toBe(seeded.acmeJobs));
    for (const text of await rows.allInnerTexts()) expect(text).toContain("tenant=acme");
    await eventually(async () => expect(await text(page.locator(".chip"))).toContain("tenant=acme"));
    await shot(page, "jobs-filtered-by-tag");
    await page.goto(`${rig.listener.url}/jobs`);
    await shot(page, "jobs");
  });

  it("opens a job from the list", async () => {
    await page.goto(`${rig.listener.url}/jobs?tag=finance`);
    await page.locator("table.grid tbody tr a.mono").first().click();
    await page.waitForURL(/\/jobs\/dl-/);
    await eventually(async () => expect((await text(page.locator(".head .id"))).trim()).toMatch(/^dl-/));
    await eventually(async () => expect(await page.locator(".timeline li").count()).toBe(3));
    await eventually(async () => expect(await text(page.locator("pre.json").first())).toContain("acct_"));
    await shot(page, "job-detail");
    await page.goto(`${rig.listener.url}/jobs/ord-1-charge`);
    await eventually(async () => expect(await page.locator("text=Dependencies").isVisible()).toBe(true));
    await shot(page, "job-detail-workflow");
  });

  it("cancels a scheduled job", async () => {
    await page.goto(`${rig.listener.url}/jobs/${seeded.reminder}`);
    await page.click("[data-test=cancel]");
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toContain(`Job ${seeded.reminder} cancelled`));
    expect((await rig.store.getJob(seeded.reminder))?.state).toBe("cancelled");
    expect((await audit())[0]).toMatchObject({ actor: "admin", action: "cancel", target: seeded.reminder });
  });

  it("requeues a dead-lettered job", async () => {
    await page.goto(`${rig.listener.url}/failures`);
    await shot(page, "failures");
    await page.locator("tr", { hasText: seeded.deadLettered }).locator("[data-test=requeue]").click();
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toContain(`Job ${seeded.deadLettered} requeued`));
    expect(await rig.store.getJob(seeded.deadLettered)).toMatchObject({ state: "scheduled", attempt: 0 });
    expect((await audit())[0]).toMatchObject({ actor: "admin", action: "requeue", target: seeded.deadLettered });
    await page.goto(`${rig.listener.url}/failures?tab=quarantined`);
    await shot(page, "failures-quarantined");
  });

  it("pauses and resumes a queue", async () => {
    await page.goto(`${rig.listener.url}/queues`);
    await page.click("[data-test=pause-mail]");
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toContain("Queue mail paused"));
    expect((await rig.store.listQueueSettings()).find((q) => q.queue === "mail")?.paused).toBe(true);
    await eventually(async () => expect((await text(page.locator("tr", { hasText: "mail" }).first().locator(".pill"))).trim()).toMatch("Paused"));
    await shot(page, "queues");
    await page.click("[data-test=resume-mail]");
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toContain("Queue mail resumed"));
    expect((await rig.store.listQueueSettings()).find((q) => q.queue === "mail")?.paused).toBe(false);
    const [resumed, paused] = await audit();
    expect(paused).toMatchObject({ actor: "admin", action: "pauseQueue", target: "mail" });
    expect(resumed).toMatchObject({ actor: "admin", action: "resumeQueue", target: "mail" });
  });

  it("triggers a schedule", async () => {
    const before = (await rig.store.listJobs({ scheduleId: "heartbeat" })).jobs.length;
    await page.goto(`${rig.listener.url}/schedules`);
    await shot(page, "schedules");
    await page.click("[data-test=trigger-heartbeat]");
    await eventually(async () => expect(await text(page.locator(".flash.success"))).toContain("Schedule heartbeat triggered"));
    expect((await rig.store.listJobs({ scheduleId: "heartbeat" })).jobs).toHaveLength(before + 1);
    expect((await audit())[0]).toMatchObject({ actor: "admin", action: "triggerSchedule", target: "heartbeat" });
  });

  it("hides actions without the permission and refuses them when forced", async () => {
    const viewer = await rig.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await viewer.newPage();
    await p.goto(`${rig.listener.url}/queues?token=${VIEWER}`);
    await eventually(async () => expect(await text(p.locator(".who"))).toContain("Signed in as viewer"));
    await eventually(async () => expect(await p.locator("[data-test^=pause-]").count()).toBe(0));
    await p.goto(`${rig.listener.url}/jobs/job-00`);
    await eventually(async () => expect(await p.locator("[data-test=cancel]").count()).toBe(0));
    const auditBefore = (await audit()).length;
    const status = await p.evaluate(async () => {
      const csrf = (document.querySelector("input[name=_csrf]") as HTMLInputElement).value;
      const res = await fetch("/actions/queues/mail/pause", { method: "POST", body: new URLSearchParams({ _csrf: csrf, _confirmed: "1" }), redirect: "manual" });
      return res.status;
    });
    expect(status).toBe(403);
    expect((await rig.store.listQueueSettings()).find((q) => q.queue === "mail")?.paused).toBe(false);
    expect(await audit()).toHaveLength(auditBefore);
    await viewer.close();
  });

  it("shows every other page", async () => {
    for (const [path, name] of [
      ["/workflows", "workflows"],
      ["/observers", "observers"],
      ["/audit", "audit"],
    ] as const) {
      await page.goto(rig.listener.url + path);
      await eventually(async () => expect(await page.locator("main .card").first().isVisible()).toBe(true));
      await shot(page, name);
    }
    const anonymous = await rig.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const login = await anonymous.newPage();
    await login.goto(`${rig.listener.url}/login`);
    await shot(login, "login");
    await login.goto(`${rig.listener.url}/`);
    await eventually(async () => expect(await text(login.locator(".who"))).toContain("Read-only"));
    await shot(login, "overview-read-only");
    await anonymous.close();
  });

  it("fits an 800 px window", async () => {
    const narrow = await admin.newPage();
    await narrow.setViewportSize({ width: 800, height: 900 });
    for (const [path, name] of [
      ["/", "overview-800"],
      ["/jobs", "jobs-800"],
      ["/jobs/ord-1-charge", "job-detail-800"],
      ["/queues", "queues-800"],
    ] as const) {
      await narrow.goto(rig.listener.url + path);
      const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      await shot(narrow, name);
      expect(overflow, `${path} scrolls sideways by ${overflow}px`).toBeLessThanOrEqual(0);
    }
    await narrow.close();
  });
});
