import type { TransactionalJob, TransactionalReceipt } from "@belay/conformance";
import { type EnqueueReceipt, defineJob, request } from "@belay/core";

/** The one job type the suites enqueue; its handler is never run by them. */
export const testJob = defineJob({
  name: "test.job",
  handler: async (_payload: { readonly note?: string }) => undefined,
});

/** A suite's job as a typed request of {@link testJob}. */
export function toRequest(job: TransactionalJob) {
  return request(testJob, {}, { id: job.id, queue: job.queue, parents: job.parentIds ?? [] });
}

/** A core receipt as the suite reads it. */
export function toReceipt(receipt: EnqueueReceipt): TransactionalReceipt {
  return { id: receipt.id, status: receipt.status, state: receipt.state };
}
