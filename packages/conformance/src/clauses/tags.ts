import type { JobStore, NewJob, SuggestTagsRequest, Tag, TagSuggestion } from "@belay/contract";
import { expect } from "vitest";
import { clause } from "../clause.js";
import { everyPage } from "../cursor.js";
import { claimJobs, enqueueJobs, expectBelayError, label, leaseJob, newJob, report, reportRow, SECOND, sortedTags, T0, tag } from "../fixtures.js";
import type { SuiteContext } from "../suite-context.js";

/** One job per tag list, ids `t0`, `t1`, … unless given. */
function tagged(tagLists: readonly (readonly Tag[])[], fields: Partial<NewJob> = {}, prefix = "t"): NewJob[] {
  return tagLists.map((tags, i) => newJob(`${prefix}${i}`, { ...fields, tags }));
}

async function idsWith(store: JobStore, request: Parameters<JobStore["listJobs"]>[0]): Promise<string[]> {
  return (await store.listJobs(request)).jobs.map((j) => j.id);
}

/** A suggestion as one comparable string: `label:x`, `key:k`, `value:k=v`. */
function show(s: TagSuggestion): string {
  switch (s.kind) {
    case "label":
      return `label:${s.value}`;
    case "key":
      return `key:${s.key}`;
    case "value":
      return `value:${s.key}=${s.value}`;
  }
}

async function suggest(store: JobStore, request: SuggestTagsRequest): Promise<string[]> {
  return (await store.suggestTags(request)).suggestions.map(show);
}

/** Every page of a suggestion walk with `max`, following the cursor (bounded, so a loop fails). */
async function walkSuggestions(store: JobStore, request: SuggestTagsRequest, max: number): Promise<string[][]> {
  const pages = await everyPage(
    (after) => store.suggestTags({ ...request, max, ...(after === undefined ? {} : { after }) }),
    (page) => page.nextCursor,
    50,
  );
  for (const page of pages) expect(page.suggestions.length, "a page holds at most max suggestions").toBeLessThanOrEqual(max);
  return pages.filter((page) => page.suggestions.length > 0).map((page) => page.suggestions.map(show));
}

export function tagClauses(ctx: SuiteContext): void {
  // ---- storage and round-trip ------------------------------------------------------------------

  clause("tags: labels, keyed tags and several values of one key round-trip through getJob and listJobs", async () => {
    const store = await ctx.store();
    const tags = [label("urgent"), label("beta"), tag("tenant", "acme"), tag("region", "eu"), tag("region", "us")];
    await enqueueJobs(store, [newJob("j1", { tags })]);
    expect(sortedTags((await store.getJob("j1"))!.tags)).toEqual(sortedTags(tags));
    const [summary] = (await store.listJobs({})).jobs;
    expect(sortedTags(summary!.tags)).toEqual(sortedTags(tags));
  });

  clause("tags: a claimed job carries the tags it was enqueued with", async () => {
    const store = await ctx.store();
    const tags = [label("urgent"), tag("tenant", "acme"), tag("tenant", "globex")];
    const claimed = await leaseJob(store, "j1", { tags });
    expect(sortedTags(claimed.tags)).toEqual(sortedTags(tags));
  });

  clause("tags: the same tag collapses on one job but may be carried by many jobs", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("j1", { tags: [label("x"), label("x"), tag("k", "v"), tag("k", "v")] }),
      newJob("j2", { tags: [label("x"), tag("k", "v")] }),
    ]);
    expect(sortedTags((await store.getJob("j1"))!.tags)).toEqual(sortedTags([label("x"), tag("k", "v")]));
    expect(sortedTags((await store.getJob("j2"))!.tags)).toEqual(sortedTags([label("x"), tag("k", "v")]));
    expect(await idsWith(store, { tags: [{ label: "x" }] })).toEqual(["j1", "j2"]);
    expect(await store.facetTags({ key: "" })).toEqual([{ value: "x", count: 2 }]);
    expect(await store.facetTags({ key: "k" })).toEqual([{ value: "v", count: 2 }]);
  });

  clause("tags: the empty key tells a label from a keyed tag with the same text", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("lbl", { tags: [label("urgent")] }),
      newJob("val", { tags: [tag("priority", "urgent")] }),
      newJob("key", { tags: [tag("urgent", "urgent")] }),
    ]);
    expect(await idsWith(store, { tags: [{ label: "urgent" }] })).toEqual(["lbl"]);
    expect(await idsWith(store, { tags: [{ key: "priority", value: "urgent" }] })).toEqual(["val"]);
    expect(await idsWith(store, { tags: [{ key: "urgent" }] })).toEqual(["key"]);
    expect(await idsWith(store, { tags: [{ key: "urgent", value: "urgent" }] })).toEqual(["key"]);
    expect(await store.facetTags({ key: "" })).toEqual([{ value: "urgent", count: 1 }]);
    expect(await store.facetTags({ key: "urgent" })).toEqual([{ value: "urgent", count: 1 }]);
  });

  // ---- tags added by outcomes --------------------------------------------------------------------

  clause("tags: tags added by an outcome are unioned with the job's tags and persist", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1", { tags: [label("initial")] });
    const [applied] = await store.reportOutcomes({
      reports: [reportRow(job, { type: "succeeded" }, { addTags: [label("done"), tag("result", "ok"), label("initial")] })],
      now: T0 + SECOND,
    });
    expect(applied).toMatchObject({ status: "applied", state: "succeeded" });
    expect(sortedTags((await store.getJob("j1"))!.tags)).toEqual(sortedTags([label("initial"), label("done"), tag("result", "ok")]));
    expect(await idsWith(store, { tags: [{ label: "done" }] })).toEqual(["j1"]);
    expect(await store.facetTags({ key: "result" })).toEqual([{ value: "ok", count: 1 }]);
  });

  clause("tags: tags added by a failed attempt that retries are carried by the next claim", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1", { tags: [label("initial")] });
    const [applied] = await store.reportOutcomes({
      reports: [reportRow(job, { type: "failed", retryAt: T0 + 10 * SECOND }, { addTags: [tag("stage", "fetched")] })],
      now: T0 + SECOND,
    });
    expect(applied).toMatchObject({ status: "applied", state: "scheduled" });
    const [again] = await claimJobs(store, { now: T0 + 10 * SECOND });
    expect(again!.id).toBe("j1");
    expect(sortedTags(again!.tags)).toEqual(sortedTags([label("initial"), tag("stage", "fetched")]));
  });

  clause("tags: a stale outcome report adds no tags", async () => {
    const store = await ctx.store();
    const job = await leaseJob(store, "j1", { tags: [label("initial")] });
    const reportWith = (workerId: string, attempt: number, now: number) =>
      store.reportOutcomes({
        reports: [{ jobId: "j1", workerId, attempt, outcome: { type: "succeeded" }, addTags: [label("sneaky")] }],
        now,
      });
    expect((await reportWith("w2", job.attempt, T0 + 1))[0]).toMatchObject({ status: "stale" });
    expect((await reportWith("w1", job.attempt + 1, T0 + 1))[0]).toMatchObject({ status: "stale" });
    expect(await report(store, job, { type: "succeeded" }, T0 + 2)).toMatchObject({ status: "applied" });
    // A repeat of the report that already applied is stale too.
    expect((await reportWith("w1", job.attempt, T0 + 3))[0]).toMatchObject({ status: "stale" });
    expect((await store.getJob("j1"))!.tags).toEqual([label("initial")]);
    expect(await idsWith(store, { tags: [{ label: "sneaky" }] })).toEqual([]);
    expect(await suggest(store, { prefix: "sneak" })).toEqual([]);
  });

  clause("tags: added tags beyond tagsPerJob reject that row only; repeats of existing tags do not count", async () => {
    const store = await ctx.store({ bounds: { tagsPerJob: 3 } });
    await enqueueJobs(store, [newJob("x", { tags: [label("a"), label("b")] }), newJob("y", { tags: [label("a")] })]);
    const [x, y] = await claimJobs(store);
    const results = await store.reportOutcomes({
      reports: [
        { jobId: "x", workerId: "w1", attempt: x!.attempt, outcome: { type: "succeeded" }, addTags: [label("c"), label("d")] },
        { jobId: "y", workerId: "w1", attempt: y!.attempt, outcome: { type: "succeeded" }, addTags: [label("a"), label("c"), label("d")] },
      ],
      now: T0 + 1,
    });
    expect(results[0]).toMatchObject({
      jobId: "x",
      status: "rejected",
      rejection: { code: "BELAY_TOO_MANY_TAGS", bound: "tagsPerJob", limit: 3, actual: 4 },
    });
    expect(results[1]).toMatchObject({ jobId: "y", status: "applied", state: "succeeded" });
    const xAfter = await store.getJob("x");
    expect(xAfter).toMatchObject({ state: "leased", attempt: x!.attempt });
    expect(sortedTags(xAfter!.tags)).toEqual(sortedTags([label("a"), label("b")]));
    expect(sortedTags((await store.getJob("y"))!.tags)).toEqual(sortedTags([label("a"), label("c"), label("d")]));
    // The rejected row changed nothing, so its fence still holds for a report within the bound.
    const [retry] = await store.reportOutcomes({
      reports: [{ jobId: "x", workerId: "w1", attempt: x!.attempt, outcome: { type: "succeeded" }, addTags: [label("b"), label("c")] }],
      now: T0 + 2,
    });
    expect(retry).toMatchObject({ status: "applied", state: "succeeded" });
    expect(sortedTags((await store.getJob("x"))!.tags)).toEqual(sortedTags([label("a"), label("b"), label("c")]));
  });

  // ---- listJobs tag predicates -------------------------------------------------------------------

  clause("tags: listJobs tag predicates ({label}, {key,value}, {key}) are AND-ed and compose with a state filter", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("a", { tags: [label("urgent"), tag("tenant", "acme")] }),
      newJob("b", { tags: [label("urgent"), tag("tenant", "globex")] }),
      newJob("c", { tags: [tag("tenant", "acme")] }),
      newJob("d", { queue: "other", tags: [label("urgent"), tag("tenant", "acme"), tag("region", "eu")] }),
      newJob("e", { tags: [label("acme")] }),
    ]);
    await claimJobs(store, { queues: ["other"] });
    expect(await idsWith(store, { tags: [{ label: "urgent" }] })).toEqual(["a", "b", "d"]);
    expect(await idsWith(store, { tags: [{ key: "tenant", value: "acme" }] })).toEqual(["a", "c", "d"]);
    expect(await idsWith(store, { tags: [{ key: "tenant" }] })).toEqual(["a", "b", "c", "d"]);
    expect(await idsWith(store, { tags: [{ label: "urgent" }, { key: "tenant", value: "acme" }] })).toEqual(["a", "d"]);
    expect(await idsWith(store, { tags: [{ label: "urgent" }, { key: "tenant", value: "acme" }, { key: "region" }] })).toEqual(["d"]);
    expect(await idsWith(store, { tags: [{ label: "urgent" }, { key: "tenant", value: "acme" }], states: ["scheduled"] })).toEqual(["a"]);
    expect(await idsWith(store, { tags: [{ key: "tenant" }], states: ["leased"] })).toEqual(["d"]);
    expect(await idsWith(store, { tags: [{ label: "acme" }] })).toEqual(["e"]);
    expect(await idsWith(store, { tags: [{ label: "urgent" }, { label: "acme" }] })).toEqual([]);
  });

  // ---- facets ----------------------------------------------------------------------------------

  clause("tags: facetTags counts a key's values, count descending", async () => {
    const store = await ctx.store();
    await enqueueJobs(
      store,
      tagged([
        [tag("tenant", "globex")],
        [tag("tenant", "acme")],
        [tag("tenant", "initech")],
        [tag("tenant", "acme"), label("acme")],
        [tag("tenant", "initech")],
        [tag("tenant", "acme")],
        [tag("region", "acme")],
      ]),
    );
    expect(await store.facetTags({ key: "tenant" })).toEqual([
      { value: "acme", count: 3 },
      { value: "initech", count: 2 },
      { value: "globex", count: 1 },
    ]);
    expect(await store.facetTags({ key: "absent" })).toEqual([]);
  });

  clause("tags: facetTags with key \"\" counts labels and nothing else", async () => {
    const store = await ctx.store();
    await enqueueJobs(
      store,
      tagged([[label("urgent")], [label("slow"), label("urgent")], [tag("speed", "slow")], [tag("", "urgent")], [tag("urgent", "yes")]]),
    );
    expect(await store.facetTags({ key: "" })).toEqual([
      { value: "urgent", count: 3 },
      { value: "slow", count: 1 },
    ]);
  });

  clause("tags: facetTags restricts the population by its scope first; an empty scope is unscoped", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("a", { queue: "q1", tags: [label("vip"), tag("tenant", "acme"), tag("region", "eu")] }),
      newJob("b", { queue: "q1", tags: [label("vip"), tag("tenant", "globex"), tag("region", "us")] }),
      newJob("c", { queue: "q1", tags: [tag("tenant", "globex")] }),
      newJob("d", { queue: "q2", tags: [label("vip"), tag("tenant", "globex"), tag("region", "eu")] }),
      newJob("e", { queue: "q2", tags: [tag("tenant", "globex")] }),
      newJob("f", { queue: "q1", jobName: "other.job", tags: [label("vip"), tag("tenant", "acme"), tag("region", "eu")] }),
    ]);
    const unscoped = await store.facetTags({ key: "tenant" });
    expect(unscoped).toEqual([
      { value: "globex", count: 4 },
      { value: "acme", count: 2 },
    ]);
    expect(await store.facetTags({ key: "tenant", scope: {} })).toEqual(unscoped);
    expect(await store.facetTags({ key: "tenant", scope: { queues: ["q2"] } })).toEqual([{ value: "globex", count: 2 }]);
    expect(await store.facetTags({ key: "tenant", scope: { queues: ["q1"], tags: [{ label: "vip" }] } })).toEqual([
      { value: "acme", count: 2 },
      { value: "globex", count: 1 },
    ]);
    expect(
      await store.facetTags({ key: "tenant", scope: { queues: ["q1"], tags: [{ label: "vip" }, { key: "region", value: "eu" }] } }),
    ).toEqual([{ value: "acme", count: 2 }]);
    expect(
      await store.facetTags({
        key: "tenant",
        scope: { queues: ["q1"], jobNames: ["test.job"], tags: [{ label: "vip" }, { key: "region", value: "eu" }] },
      }),
    ).toEqual([{ value: "acme", count: 1 }]);
    expect(await store.facetTags({ key: "", scope: { tags: [{ key: "tenant", value: "globex" }] } })).toEqual([{ value: "vip", count: 2 }]);
  });

  clause("tags: facetTags counts distinct jobs; a job with two values of a key counts under each", async () => {
    const store = await ctx.store();
    await enqueueJobs(
      store,
      tagged([
        [tag("tenant", "a"), tag("tenant", "b")],
        [tag("tenant", "a")],
        [tag("tenant", "a"), tag("tenant", "a")],
      ]),
    );
    const [job] = await claimJobs(store, { max: 1 });
    const [applied] = await store.reportOutcomes({
      reports: [{ jobId: job!.id, workerId: "w1", attempt: job!.attempt, outcome: { type: "succeeded" }, addTags: [tag("tenant", "a")] }],
      now: T0 + 1,
    });
    expect(applied).toMatchObject({ status: "applied" });
    expect(await store.facetTags({ key: "tenant" })).toEqual([
      { value: "a", count: 3 },
      { value: "b", count: 1 },
    ]);
  });

  clause("tags: facetTags max keeps the top values by count, counted over the whole scope", async () => {
    const store = await ctx.store();
    await enqueueJobs(
      store,
      tagged([[tag("c", "a")], [tag("c", "b")], [tag("c", "z")], [tag("c", "z")], [tag("c", "y")], [tag("c", "z")], [tag("c", "y")]]),
    );
    expect(await store.facetTags({ key: "c", max: 2 })).toEqual([
      { value: "z", count: 3 },
      { value: "y", count: 2 },
    ]);
    expect(await store.facetTags({ key: "c", max: 3 })).toEqual([
      { value: "z", count: 3 },
      { value: "y", count: 2 },
      { value: "a", count: 1 },
    ]);
    expect(await store.facetTags({ key: "c", max: 10 })).toHaveLength(4);
  });

  clause("tags: facetTags breaks count ties by value ascending in code-point order", async () => {
    const store = await ctx.store();
    const values = ["😀", "b", "\uFF5E", "é", "a", "B", "c", "c"];
    await enqueueJobs(store, tagged(values.map((v) => [tag("k", v)])));
    expect(await store.facetTags({ key: "k" })).toEqual([
      { value: "c", count: 2 },
      { value: "B", count: 1 },
      { value: "a", count: 1 },
      { value: "b", count: 1 },
      { value: "é", count: 1 },
      { value: "\uFF5E", count: 1 },
      { value: "😀", count: 1 },
    ]);
  });

  // ---- suggestions -----------------------------------------------------------------------------

  clause("tags: suggestTags without a key offers matching labels, then matching keys (never values)", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("j1", { tags: [label("team"), tag("tenant", "acme"), tag("env", "test")] }),
      newJob("j2", { tags: [label("tea"), tag("team", "core"), label("other")] }),
    ]);
    const page = await store.suggestTags({ prefix: "te" });
    expect(page.suggestions).toEqual([
      { kind: "label", value: "tea" },
      { kind: "label", value: "team" },
      { kind: "key", key: "team" },
      { kind: "key", key: "tenant" },
    ]);
  });

  clause("tags: suggestTags with a key offers that key's values only", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("j1", { tags: [tag("env", "test"), tag("env", "prod"), label("testing"), tag("stage", "test2")] }),
      newJob("j2", { tags: [tag("env", "test"), tag("env", "temp")] }),
    ]);
    const page = await store.suggestTags({ prefix: "te", key: "env" });
    expect(page.suggestions).toEqual([
      { kind: "value", key: "env", value: "temp" },
      { kind: "value", key: "env", value: "test" },
    ]);
    expect(await suggest(store, { prefix: "", key: "env" })).toEqual(["value:env=prod", "value:env=temp", "value:env=test"]);
    expect(await suggest(store, { prefix: "", key: "nope" })).toEqual([]);
  });

  clause("tags: suggestTags with the empty key offers labels only, as values of the key \"\": never keys nor keyed values", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("j1", { tags: [label("alpha"), label("Alps"), tag("alpha", "x"), tag("k", "alpine")] }),
      newJob("j2", { tags: [label("beta"), label("al_x"), tag("al", "1"), label("alpha")] }),
    ]);
    const page = await store.suggestTags({ prefix: "AL", key: "" });
    expect(page.suggestions).toEqual([
      { kind: "value", key: "", value: "al_x" },
      { kind: "value", key: "", value: "alpha" },
      { kind: "value", key: "", value: "Alps" },
    ]);
    expect(page.nextCursor).toBeNull();
    expect(await suggest(store, { prefix: "", key: "" })).toEqual(["value:=al_x", "value:=alpha", "value:=Alps", "value:=beta"]);
    expect(await walkSuggestions(store, { prefix: "al", key: "" }, 1)).toEqual([["value:=al_x"], ["value:=alpha"], ["value:=Alps"]]);
    // Without a key the same labels come as labels, followed by the keys.
    expect(await suggest(store, { prefix: "al" })).toEqual(["label:al_x", "label:alpha", "label:Alps", "key:al", "key:alpha"]);
  });

  clause("tags: the suggestion prefix is ASCII case-insensitive and leaves other letters exact", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("j1", { tags: [label("urgent"), label("URGENT-2"), label("écrire"), label("Émile"), tag("Region", "EU-west")] }),
    ]);
    expect(await suggest(store, { prefix: "URG" })).toEqual(["label:urgent", "label:URGENT-2"]);
    expect(await suggest(store, { prefix: "uRgEnT-" })).toEqual(["label:URGENT-2"]);
    expect(await suggest(store, { prefix: "é" })).toEqual(["label:écrire"]);
    expect(await suggest(store, { prefix: "É" })).toEqual(["label:Émile"]);
    expect(await suggest(store, { prefix: "reg" })).toEqual(["key:Region"]);
    expect(await suggest(store, { prefix: "eu-W", key: "Region" })).toEqual(["value:Region=EU-west"]);
  });

  clause("tags: the suggestion prefix is literal: %, _ and \\ are ordinary characters", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("j1", { tags: [label("ab"), label("a_"), label("a_b"), label("50%"), label("50% off"), label("500"), label("a\\b"), label("axb")] }),
    ]);
    expect(await suggest(store, { prefix: "a_" })).toEqual(["label:a_", "label:a_b"]);
    expect(await suggest(store, { prefix: "50%" })).toEqual(["label:50%", "label:50% off"]);
    expect(await suggest(store, { prefix: "a\\" })).toEqual(["label:a\\b"]);
    expect(await suggest(store, { prefix: "%" })).toEqual([]);
    expect(await suggest(store, { prefix: "_" })).toEqual([]);
    expect(await suggest(store, { prefix: "a%" })).toEqual([]);
  });

  clause("tags: suggestions are ordered by ASCII-folded text, then exact text, whatever the load order", async () => {
    const store = await ctx.store();
    // Loaded in reverse of the expected order, one tag per job.
    const labels = ["banana", "Banana", "apple", "Apple", "AB", "a_"];
    const keys = ["zeta", "Zeta", "alpha"];
    await enqueueJobs(store, [
      ...labels.map((v, i) => newJob(`l${i}`, { tags: [label(v)] })),
      ...keys.map((k, i) => newJob(`k${i}`, { tags: [tag(k, "v")] })),
    ]);
    expect(await suggest(store, { prefix: "" })).toEqual([
      "label:a_",
      "label:AB",
      "label:Apple",
      "label:apple",
      "label:Banana",
      "label:banana",
      "key:alpha",
      "key:Zeta",
      "key:zeta",
    ]);
  });

  clause("tags: a suggestion cursor walk pages through everything, across the labels-to-keys boundary", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("j1", { tags: [label("x"), tag("y", "1")] }),
      newJob("j2", { tags: [label("m"), tag("x", "1"), tag("b", "2")] }),
      newJob("j3", { tags: [label("a")] }),
    ]);
    const pages = await walkSuggestions(store, { prefix: "" }, 2);
    expect(pages.flat()).toEqual(["label:a", "label:m", "label:x", "key:b", "key:x", "key:y"]);
    expect(pages.slice(0, 3).map((p) => p.length)).toEqual([2, 2, 2]);
  });

  clause("tags: suggestion max is clamped to suggestWindow", async () => {
    const store = await ctx.store({ bounds: { suggestWindow: 3 } });
    await enqueueJobs(store, [newJob("j1", { tags: ["e", "d", "c", "b", "a"].map(label) })]);
    const big = await store.suggestTags({ prefix: "", max: 100 });
    expect(big.suggestions.map(show)).toEqual(["label:a", "label:b", "label:c"]);
    expect(big.nextCursor).not.toBeNull();
    const rest = await store.suggestTags({ prefix: "", max: 100, after: big.nextCursor! });
    expect(rest.suggestions.map(show)).toEqual(["label:d", "label:e"]);
  });

  clause("tags: fold-equal suggestions are ordered by exact text and a cursor can split them", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("j1", { tags: [tag("k", "abc"), tag("k", "ab"), label("ab"), label("Ab")] }),
      newJob("j2", { tags: [tag("k", "Ab"), tag("k", "AB"), tag("k", "Aa"), label("AB")] }),
    ]);
    expect(await walkSuggestions(store, { prefix: "", key: "k" }, 2)).toEqual([
      ["value:k=Aa", "value:k=AB"],
      ["value:k=Ab", "value:k=ab"],
      ["value:k=abc"],
    ]);
    expect((await walkSuggestions(store, { prefix: "a" }, 1)).flat()).toEqual(["label:AB", "label:Ab", "label:ab"]);
  });

  clause("tags: a suggestion cursor the store did not issue throws InvalidInputError naming after", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [newJob("j1", { tags: [label("a"), tag("k", "v")] })]);
    await expectBelayError(() => store.suggestTags({ prefix: "", after: "not a cursor!" }), "BELAY_INVALID_INPUT", { field: "after" });
    await expectBelayError(() => store.suggestTags({ prefix: "", key: "k", after: "%zz" }), "BELAY_INVALID_INPUT", { field: "after" });
  });

  clause("tags: tags of purged jobs leave suggestions and facets", async () => {
    const store = await ctx.store();
    await enqueueJobs(store, [
      newJob("old", { queue: "done", tags: [label("gone"), label("shared"), tag("tenant", "ghost"), tag("env", "prod")] }),
      newJob("live", { tags: [label("shared"), tag("env", "prod")] }),
    ]);
    const [old] = await claimJobs(store, { queues: ["done"] });
    expect(await report(store, old!, { type: "succeeded" }, T0 + 1)).toMatchObject({ status: "applied" });
    expect(await suggest(store, { prefix: "go" })).toEqual(["label:gone"]);
    const { purged } = await store.purgeTerminal({ retentionClass: "succeededOrCancelled", before: T0 + 2, max: 10 });
    expect(purged).toBe(1);
    expect(await suggest(store, { prefix: "go" })).toEqual([]);
    expect(await suggest(store, { prefix: "ten" })).toEqual([]);
    expect(await suggest(store, { prefix: "", key: "tenant" })).toEqual([]);
    expect(await suggest(store, { prefix: "" })).toEqual(["label:shared", "key:env"]);
    expect(await store.facetTags({ key: "" })).toEqual([{ value: "shared", count: 1 }]);
    expect(await store.facetTags({ key: "tenant" })).toEqual([]);
    expect(await store.facetTags({ key: "env" })).toEqual([{ value: "prod", count: 1 }]);
  });
}
