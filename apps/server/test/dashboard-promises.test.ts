import type { PromiseStore } from "@belay/contract";
import { MemoryPromiseStore } from "@belay/memory";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, type Harness, VIEWER, expectStandalonePage, harness } from "./helpers.js";
import { ORDERS, SHIPPING, type SeededPromises, seedPromises } from "./promise-fixtures.js";
import { describeOnTargets, promiseStoreTargets } from "./store-targets.js";

// The dashboard's durable-promise pages, rendered on the server: the list and its search, a
// promise with its task, callbacks, listeners, outbox and lineage, the promise schedules, the
// permissions on data, paging through long lists, and odd input that is never a 5xx. The pages
// that read the store run on every promise store (memory, SQLite, PostgreSQL), each seeded once;
// the tests that write come last in their group.

let h: Harness;

async function page(path: string, cookie?: string): Promise<{ status: number; text: string }> {
  const res = await h.request("GET", path, cookie === undefined ? {} : { headers: { cookie } });
  return { status: res.status, text: await res.text() };
}

async function signIn(secret: string): Promise<string> {
  const res = await h.request("GET", `/?token=${secret}`);
  expect(res.status).toBe(303);
  return res.headers.getSetCookie().filter((c) => c.startsWith("belay_session=")).at(-1)!.split(";")[0]!;
}

/** The promise ids a list page links to, in order. */
function listedIds(text: string): string[] {
  const table = /<table class="grid" data-test="promises">([\s\S]*?)<\/table>/.exec(text)?.[1] ?? "";
  return [...table.matchAll(/<td><a class="mono" href="\/promises\/([^"]+)"/g)].map((m) => decodeURIComponent(m[1]!));
}

/** The `Next »` link of a page, or `null` when it is the last. */
function nextLink(text: string): string | null {
  const href = /<a class="btn btn-sm" href="([^"]+)" aria-disabled="false" data-test="next-page">/.exec(text)?.[1];
  return href === undefined ? null : href.replaceAll("&amp;", "&");
}

describeOnTargets(await promiseStoreTargets("dashboard-promises.test.ts", { memory: true }), "promise pages", (storeOf) => {
  let promises: PromiseStore;
  let seeded: SeededPromises;
  beforeAll(async () => {
    promises = storeOf();
    seeded = await seedPromises(promises, Date.now(), { batch: 120, extraSchedules: 60 });
    h = await harness({ promises });
  });
  afterAll(async () => {
    await h?.close();
  });

  describe("the promises list", () => {
    it.each(["/promises", "/promises?prefix=order&state=pending&tag=tenant%3Dacme", "/promises/order-7", "/promises/order-7.2", "/promises/order-7.3", "/promise-schedules", "/promise-schedules?cursor=sched-010"])(
      "%s renders for an anonymous viewer, with its CSS inlined and a strict CSP",
      async (path) => {
        const text = await expectStandalonePage(h, path);
        expect(text).toContain(path.startsWith("/promise-schedules") ? 'href="/promise-schedules" class="on"' : 'href="/promises" class="on"');
      },
    );

    it("lists promises by id with state, deadline, target and task state and version", async () => {
      const { status, text } = await page("/promises?prefix=order-7");
      expect(status).toBe(200);
      expect(listedIds(text)).toEqual(["order-7", "order-7.1", "order-7.2", "order-7.3"]);
      const row = (id: string) => new RegExp(`href="/promises/${id.replace(".", "\\.")}"[\\s\\S]*?</tr>`).exec(text)![0];
      expect(row("order-7")).toContain('data-state="pending"');
      expect(row("order-7")).toContain(ORDERS);
      expect(row("order-7")).toMatch(/data-task-state="suspended">Suspended <small>v1<\/small>/);
      expect(row("order-7")).toMatch(/<time [^>]*>in (1 d|23 h \d+ min)<\/time>/);
      expect(row("order-7.1")).toContain('data-state="resolved"');
      expect(row("order-7.2")).toContain(SHIPPING);
      expect(row("order-7.2")).toMatch(/data-task-state="acquired">Acquired <small>v1<\/small>/);
      expect(row("order-7.3")).toContain(">timer<");
    });

    it("searches by id prefix, state and key=value tags", async () => {
      const acme = listedIds((await page("/promises?prefix=batch-&tag=tenant%3Dacme&limit=200")).text);
      expect(acme).toHaveLength(60);
      expect(acme.every((id) => Number(id.slice(6)) % 2 === 0)).toBe(true);
      const resolved = listedIds((await page("/promises?prefix=batch-&state=resolved&limit=200")).text);
      expect(resolved).toEqual(Array.from({ length: 120 }, (_, i) => i).filter((i) => i % 3 === 0 && i % 2 === 0).map((i) => `batch-${String(i).padStart(3, "0")}`));
      const both = await page("/promises?tag=tenant%3Dacme&tag=resonate%3Aorigin%3Dorder-7");
      expect(listedIds(both.text)).toEqual(["order-7"]);
      expect(both.text).toContain('<span class="chip">tenant=acme<a href="/promises?tag=resonate%3Aorigin%3Dorder-7"');
      const none = await page("/promises?prefix=nothing-");
      expect(none.text).toContain("No promises match this search");
    });

    it("pages through a long list by cursor, every promise once", async () => {
      const seen: string[] = [];
      let path: string | null = "/promises?limit=25";
      let pages = 0;
      while (path !== null) {
        const { status, text } = await page(path);
        expect(status).toBe(200);
        const ids = listedIds(text);
        expect(ids.length).toBeLessThanOrEqual(25);
        seen.push(...ids);
        path = nextLink(text);
        pages++;
        expect(pages).toBeLessThan(20);
      }
      expect(seen).toHaveLength(124);
      expect(new Set(seen).size).toBe(124);
      expect([...seen].sort()).toEqual(seen);
      expect(pages).toBe(5);
    });

    it("a bad search is explained on the page, not a server error", async () => {
      for (const query of ["tag=tenant", "tag=%3Dacme", "tag=tenant%3D", "tag=a%3D1&tag=a%3D2", "state=bogus", `prefix=${"x".repeat(5_000)}`, `tag=${"k".repeat(300)}%3Dv`]) {
        const { status, text } = await page(`/promises?${query}`);
        expect(status, query).toBe(200);
        expect(text, query).toContain("This search cannot be read");
      }
      for (const query of ["limit=0", "limit=-5", "limit=99999", "limit=abc", "cursor=%F0%9F%98%80", "cursor=zzzz", "prefix=%F0%9F%98%80"]) {
        expect((await page(`/promises?${query}`)).status, query).toBe(200);
      }
    });
  });

  describe("a promise's page", () => {
    it("shows the task waiting on its children, the callbacks both ways, the listener and the lineage", async () => {
      const { status, text } = await page(`/promises/${seeded.root}`);
      expect(status).toBe(200);
      expect(text).toMatch(/<dl class="kv" data-test="task">[\s\S]*Suspended[\s\S]*<span class="num">1<\/span>/);
      const callbacks = /data-test="callbacks">([\s\S]*?)<\/div><\/div>/.exec(text)![1]!;
      expect(callbacks).toContain('href="/promises/order-7.2"');
      expect(callbacks).toContain('href="/promises/order-7.3"');
      expect(callbacks).toContain("No task waits on it.");
      expect(text).toContain(seeded.listener);
      const lineage = /data-test="lineage">([\s\S]*?)<\/section>/.exec(text)![1]!;
      expect(lineage).toMatch(/In its branch<\/h3><ul class="edges"><li><a class="mono" href="\/promises\/order-7\.1"/);
      expect(lineage).toMatch(/Children in other branches<\/h3><ul class="edges">[\s\S]*order-7\.2[\s\S]*order-7\.3/);
      expect(text).toContain("No messages waiting");
    });

    it("shows a child's parent and its acquired task's process and lease; the awaiter links back", async () => {
      const { text } = await page(`/promises/${seeded.child}`);
      expect(text).toMatch(/<dt>Parent<\/dt><dd><a class="mono" href="\/promises\/order-7"/);
      expect(text).toMatch(/<dt>Branch<\/dt><dd><span class="muted">itself/);
      expect(text).toContain(`<span class="mono">${seeded.childPid}</span>`);
      expect(text).toMatch(/<dt>Lease<\/dt><dd>15 min/);
      expect(text).toMatch(/Tasks waiting on it<\/h3><ul class="edges"><li><a class="mono" href="\/promises\/order-7"/);
    });

    it("shows the messages still in the outbox: kind, address, version, takes and age", async () => {
      const { text } = await page(`/promises/${seeded.timer}`);
      const table = /<table class="grid" data-test="messages">([\s\S]*?)<\/table>/.exec(text)![1]!;
      expect(table).toContain(">execute<");
      expect(table).toContain(ORDERS);
      expect(table).toMatch(/<td class="r num">1<\/td>/);
      expect(text).toContain("<dt>Fires</dt>");
    });

    it("shows param and value data only with viewSensitive", async () => {
      const anonymous = (await page(`/promises/${seeded.root}`)).text;
      expect(anonymous).toContain("Param and value hidden: needs the viewSensitive permission");
      expect(anonymous).not.toContain("4242-4242-secret");
      expect(anonymous).not.toContain("resonate:format");
      const viewer = (await page(`/promises/${seeded.root}`, await signIn(VIEWER))).text;
      expect(viewer).toContain("4242-4242-secret");
      expect(viewer).toContain("Decoded from base64.");
      expect(viewer).toContain("resonate:format");
      const step = (await page(`/promises/${seeded.step}`, await signIn(ADMIN))).text;
      expect(step).toContain("rcpt-secret-77");
      expect((await page(`/promises/${seeded.step}`)).text).not.toContain("rcpt-secret-77");
    });

    it("an unknown promise is a 404 page, an id longer than any stored one too", async () => {
      const ghost = await page("/promises/ghost");
      expect(ghost.status).toBe(404);
      expect(ghost.text).toContain("No promise ghost");
      expect((await page(`/promises/${"x".repeat(10_000)}`)).status).toBe(404);
      expect((await page("/promises/a%2Fb")).status).toBe(404);
    });

    it("escapes what promises carry", async () => {
      await promises.handle({ kind: "promise.create", id: "x<script>", timeoutAt: Date.now() + 60_000, tags: { "<b>k": '"><i>evil</i>', note: "<img src=x onerror=alert(1)>", "resonate:target": 'https://example.com/"><i>evil</i>' } }, Date.now());
      for (const path of ["/promises?prefix=x", "/promises/x%3Cscript%3E"]) {
        const { status, text } = await page(path);
        expect(status, path).toBe(200);
        expect(text).not.toContain("<img src=x");
        expect(text).not.toContain("<i>evil");
        expect(text).not.toContain("x<script>");
        expect(text).toContain("&lt;img src=x onerror=alert(1)&gt;");
      }
    });
  });

  describe("promise schedules", () => {
    it("lists id, cron, promise id template, next and last run, and target", async () => {
      const { status, text } = await page("/promise-schedules");
      expect(status).toBe(200);
      const row = /href="\/promises\?tag=resonate%3Aschedule%3Dhourly-sync"[\s\S]*?<\/tr>/.exec(text)![0];
      expect(row).toContain("<code>0 * * * *</code>");
      expect(row).toContain("{{.id}}.{{.timestamp}}");
      expect(row).toMatch(/<time [^>]*>in (20|19) min/);
      expect(row).toContain("never");
      expect(row).toContain(SHIPPING);
    });

    it("shows the last run once a schedule has fired", async () => {
      const now = Date.now();
      const [due] = await promises.dueSchedules({ now: now + 6 * 3_600_000, max: 1 });
      expect(due).toBeDefined();
      await promises.fireSchedules({ firings: [{ id: due!.id, expectedNextRunAt: due!.nextRunAt, nextRunAt: due!.nextRunAt + 3_600_000 }], now: due!.nextRunAt });
      const row = new RegExp(`resonate%3Aschedule%3D${due!.id}"[\\s\\S]*?</tr>`).exec((await page("/promise-schedules")).text)![0];
      expect(row).not.toContain("never");
      expect((await page(`/promises?tag=resonate%3Aschedule%3D${due!.id}`)).text).toContain(`href="/promises/${due!.id}`);
    });

    it("pages through a long list by cursor, every schedule once", async () => {
      const seen: string[] = [];
      let path: string | null = "/promise-schedules";
      while (path !== null) {
        const { status, text } = await page(path);
        expect(status).toBe(200);
        seen.push(...[...text.matchAll(/resonate%3Aschedule%3D([^"]+)" title=/g)].map((m) => decodeURIComponent(m[1]!)));
        path = nextLink(text);
      }
      expect([...seen].sort()).toEqual([...seeded.schedules].sort());
      expect(new Set(seen).size).toBe(62);
    });
  });
});

async function migratedMemory(): Promise<MemoryPromiseStore> {
  const store = new MemoryPromiseStore();
  await store.migrate();
  await seedPromises(store, Date.now());
  return store;
}

describe("promise pages, whatever the store", () => {
  afterEach(() => h?.close());

  it("the navigation shows the promise pages only when the server has a promise store", async () => {
    h = await harness({ promises: await migratedMemory() });
    const withStore = await page("/");
    expect(withStore.text).toContain('href="/promises"');
    expect(withStore.text).toContain('href="/promise-schedules"');
    await h.close();
    h = await harness();
    const without = await page("/");
    expect(without.text).not.toContain('href="/promises"');
    expect(without.text).not.toContain('href="/promise-schedules"');
    for (const path of ["/promises", "/promises/order-7", "/promise-schedules"]) {
      const res = await page(path);
      expect(res.status, path).toBe(404);
      expect(res.text).toContain("This server has no promise store");
    }
  });

});

describe("odd text in a promise page's address", () => {
  beforeEach(async () => {
    h = await harness({ promises: await migratedMemory() });
  });
  afterEach(() => h?.close());

  it.each([
    ["NUL in an id", "/promises/a%00b"],
    ["a lone surrogate in an id", "/promises/a%ED%A0%80b"],
    ["bytes that are not UTF-8 in an id", "/promises/%E0%A4%A"],
    ["NUL in a prefix", "/promises?prefix=a%00"],
    ["a lone surrogate in a tag", "/promises?tag=tenant%3D%ED%B0%80"],
    ["NUL in a cursor", "/promise-schedules?cursor=%00"],
    ["a lone surrogate in a cursor", "/promise-schedules?cursor=%ED%A0%80"],
  ])("%s is a 400 page", async (_name, path) => {
    const { status, text } = await page(path);
    expect(status).toBe(400);
    expect(text).toContain("The address is malformed");
  });
});

describe("a host that restricts viewing", () => {
  afterEach(() => h?.close());
  it("sends anonymous browsers to sign in before any promise page", async () => {
    h = await harness({ promises: await migratedMemory(), tokens: [], authorize: (request) => ({ allowed: request.headers.get("authorization") === "Bearer alice-secret", actor: "alice" }) });
    for (const path of ["/promises", "/promises/order-7", "/promise-schedules"]) {
      const res = await h.request("GET", path);
      expect(res.status, path).toBe(303);
      expect(res.headers.get("location")).toBe(`/login?next=${encodeURIComponent(path)}`);
    }
  });
});
