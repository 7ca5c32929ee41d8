import { type Tag, InvalidInputError } from "@belay/contract";
import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { JobContext } from "./job-context.js";
import { type RetryOptions, type RetryPolicy, retryPolicy } from "./retry.js";
import { type TagInput, parseTags } from "./tags.js";

/** A job handler: receives the validated payload and its context, may return a JSON output. */
export type JobHandler<TPayload, TOutput> = (payload: TPayload, ctx: JobContext) => TOutput | Promise<TOutput>;

/**
 * A job type: its stable name, default queue, retry policy, payload schema and handler. The
 * producer (`client.enqueue(job, payload)`) and the consumer (the handler) are linked by its
 * types, so enqueueing a wrong payload does not compile.
 */
export interface JobDefinition<TInput = unknown, TPayload = TInput, TOutput = unknown> {
  /** The stable wire name stored with every job of this type. Renaming it orphans queued jobs. */
  readonly name: string;
  readonly queue: string;
  /** This type's own policy; `undefined` uses the worker group's. */
  readonly retry: RetryPolicy | undefined;
  readonly schema: StandardSchemaV1<TInput, TPayload> | undefined;
  /** Tags every job of this type carries. */
  readonly tags: readonly Tag[];
  readonly handler: JobHandler<TPayload, TOutput>;
  /** Type-level only: what `enqueue` accepts and what the handler returns. Never set at runtime. */
  readonly "~types"?: { readonly input: TInput; readonly payload: TPayload; readonly output: TOutput };
}

/** Any job definition, whatever its payload and output types. */
// biome-ignore lint: the any is deliberate, for heterogeneous registries
export type AnyJobDefinition = JobDefinition<any, any, any>;

/** What `enqueue` accepts for a job type. */
export type PayloadOf<TJob> = TJob extends JobDefinition<infer TInput, any, any> ? TInput : never;
/** What a job type's handler returns. */
export type OutputOf<TJob> = TJob extends JobDefinition<any, any, infer TOutput> ? TOutput : never;

interface JobOptionsBase {
  /** Stable wire name: 1..128 characters, e.g. `email.send`. */
  readonly name: string;
  /** Default queue of this type (default `default`); an enqueue may override it. */
  readonly queue?: string;
  readonly retry?: RetryOptions;
  readonly tags?: readonly TagInput[];
}

/**
 * Defines a job type. With a Standard Schema validator (zod, valibot, arktype, …) the payload
 * type is inferred from it, checked at enqueue, and validated again before the handler runs (an
 * invalid payload quarantines the job). Without one, the handler's parameter type is the payload
 * type.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 *
 * export const sendWelcome = defineJob({
 *   name: "email.welcome",
 *   queue: "mail",
 *   retry: { maxAttempts: 5 },
 *   schema: z.object({ userId: z.string() }),
 *   handler: async ({ userId }, ctx) => {
 *     await mailer.send(userId, { signal: ctx.signal });
 *     return { sent: true };
 *   },
 * });
 * ```
 */
export function defineJob<TSchema extends StandardSchemaV1, TOutput = void>(
  options: JobOptionsBase & {
    readonly schema: TSchema;
    readonly handler: JobHandler<StandardSchemaV1.InferOutput<TSchema>, TOutput>;
  },
): JobDefinition<StandardSchemaV1.InferInput<TSchema>, StandardSchemaV1.InferOutput<TSchema>, Awaited<TOutput>>;
export function defineJob<TPayload = void, TOutput = void>(
  options: JobOptionsBase & { readonly schema?: undefined; readonly handler: JobHandler<TPayload, TOutput> },
): JobDefinition<TPayload, TPayload, Awaited<TOutput>>;
export function defineJob(
  options: JobOptionsBase & { readonly schema?: StandardSchemaV1 | undefined; readonly handler: JobHandler<any, any> },
): AnyJobDefinition {
  const { name, queue = "default", schema, handler } = options;
  if (typeof name !== "string" || name.length === 0 || name.length > 128) {
    throw new InvalidInputError("name", "must be a job name of 1 to 128 characters");
  }
  if (typeof queue !== "string" || queue.length === 0) throw new InvalidInputError("queue", "must be a queue name");
  if (typeof handler !== "function") throw new InvalidInputError("handler", "must be a function");
  if (schema !== undefined && typeof schema?.["~standard"]?.validate !== "function") {
    throw new InvalidInputError("schema", "must be a Standard Schema validator (zod, valibot, arktype, …)");
  }
  return Object.freeze({
    name,
    queue,
    retry: options.retry === undefined ? undefined : retryPolicy(options.retry),
    schema,
    tags: parseTags(options.tags ?? [], "tags"),
    handler,
  });
}
