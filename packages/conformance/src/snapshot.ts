import type { JobStore } from "@belay/contract";
import { allJobIds } from "./fixtures.js";

/**
 * Everything a store shows through its reads: jobs with payloads, histories, outputs and edges;
 * counts; queue settings; audit log; schedules; workflows; observers. Two stores that went
 * through the same committed operations have equal snapshots.
 */
export async function snapshot(store: JobStore): Promise<unknown> {
  const jobs = [];
  for (const id of await allJobIds(store)) {
    jobs.push({
      job: await store.getJob(id),
      history: await store.getJobHistory(id),
      output: await store.getJobOutput(id),
      edges: await store.getDependencies(id),
    });
  }
  const audit = [];
  let after: string | undefined;
  do {
    const page = await store.listAuditRecords(after === undefined ? {} : { after });
    audit.push(...page.records);
    after = page.nextCursor ?? undefined;
  } while (after !== undefined);
  const schedules = [];
  for (const schedule of await store.listSchedules()) schedules.push(await store.getSchedule(schedule.id));
  const workflows = [];
  let wfAfter: string | undefined;
  do {
    const page = await store.listWorkflows(wfAfter === undefined ? {} : { after: wfAfter });
    workflows.push(...page.workflows);
    wfAfter = page.nextCursor ?? undefined;
  } while (wfAfter !== undefined);
  const observers = [];
  for (const observer of await store.listObservers()) {
    observers.push({ observer, deadLetters: await store.listObserverDeadLetters(observer.subscription.observerId) });
  }
  return {
    jobs,
    counts: await store.countJobs(),
    queues: await store.listQueueSettings(),
    audit,
    schedules,
    workflows,
    observers,
    labels: await store.suggestTags({ prefix: "", max: 100 }),
  };
}
