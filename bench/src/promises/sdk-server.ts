// The in-memory server of @resonatehq/sdk 0.11.5 (`new LocalNetwork().server`, eager timeouts)
// as a benchmark target: Belay's flat requests become the protocol's envelopes (`{kind, head,
// data}`, nested actions enveloped too) and go through its synchronous `apply(now, request)`; its
// answers are read back as `{status, data}` (a fenced action's nested head becomes its status).
// Nothing drains its outgoing messages, as nothing drains Belay's outbox in the benchmark.
import type { PromiseRequest } from "@belay/contract";
import { LocalNetwork } from "@resonatehq/sdk";
import type { Answer, PromiseTarget } from "./shapes.js";

interface SdkEnvelope {
  readonly kind: string;
  readonly head: { readonly corrId: string; readonly version: string };
  readonly data: Record<string, unknown>;
}

interface SdkServer {
  apply(now: number, request: SdkEnvelope): { response: { kind: string; head: { status: number }; data: unknown } };
  readonly promises: Map<string, unknown>;
  readonly tTimeouts: readonly unknown[];
  readonly pTimeouts: readonly unknown[];
  readonly outgoing: readonly unknown[];
}

/** Sizes of the server's maps and linearly scanned arrays, for the record. */
export interface SdkServerSizes {
  readonly promises: number;
  readonly promiseTimers: number;
  readonly taskTimers: number;
  readonly outgoing: number;
}

export function sdkServerTarget(): PromiseTarget & { sizes(): SdkServerSizes } {
  // `server` is private in the SDK's types but a plain field at run time.
  const server = (new LocalNetwork() as unknown as { server: SdkServer }).server;
  let corr = 0;
  const envelope = (request: Record<string, unknown>): SdkEnvelope => {
    const { kind, ...data } = request;
    if (data["action"] !== undefined) data["action"] = envelope(data["action"] as Record<string, unknown>);
    if (Array.isArray(data["actions"])) data["actions"] = (data["actions"] as Record<string, unknown>[]).map(envelope);
    return { kind: kind as string, head: { corrId: String(++corr), version: "2026-04-01" }, data };
  };
  return {
    name: "sdk-server",
    async handle(request: PromiseRequest, now: number): Promise<Answer> {
      const { response } = server.apply(now, envelope(request as unknown as Record<string, unknown>));
      const status = response.head.status;
      if (status >= 400) return { status, error: response.data };
      const data = response.data as { action?: { kind: string; head: { status: number }; data: unknown } } | null;
      if (data !== null && typeof data === "object" && data.action?.head !== undefined) {
        return { status, data: { ...data, action: { kind: data.action.kind, status: data.action.head.status, data: data.action.data } } };
      }
      return { status, data: response.data };
    },
    async close() {},
    sizes: () => ({ promises: server.promises.size, promiseTimers: server.pTimeouts.length, taskTimers: server.tTimeouts.length, outgoing: server.outgoing.length }),
  };
}
