// The in-memory server of @resonatehq/sdk 0.11.5 (`new LocalNetwork().server`, eager timeouts)
// behind a minimal node:http listener, in a process of its own: `POST /` reads the body, parses
// the JSON envelope, calls the synchronous `server.apply(Date.now(), envelope)` and answers
// `{kind, head: {corrId, status, version}, data}` with HTTP status = head.status (what the SDK's
// LocalNetwork.send does, over HTTP). No validation, no auth, no background loop: the least an
// HTTP server of the protocol can do, so Belay's server is compared against the SDK server's
// state machine plus the same node:http parsing. Nothing drains its outgoing messages (as nothing
// polls Belay's outbox in the benchmark); their count is printed on exit.
//
//   node --import tsx src/promises-http/sdk-http-server.ts [--port 0]   → prints "listening http://127.0.0.1:<port>"
import http from "node:http";
import type { AddressInfo } from "node:net";
import { LocalNetwork } from "@resonatehq/sdk";

// The SDK asks for Node 22; on Node 20 it needs Promise.withResolvers.
const P = Promise as unknown as { withResolvers?: unknown };
P.withResolvers ??= () => {
  let resolve: unknown;
  let reject: unknown;
  const promise = new Promise((a, b) => {
    resolve = a;
    reject = b;
  });
  return { promise, resolve, reject };
};

interface SdkEnvelope {
  readonly kind: string;
  readonly head: { readonly corrId: string; readonly version: string };
  readonly data: unknown;
}

interface SdkServer {
  apply(now: number, request: SdkEnvelope): { response: { kind: string; head: { status: number }; data: unknown } };
  readonly promises: Map<string, unknown>;
  readonly tasks: Map<string, unknown>;
  readonly pTimeouts: readonly unknown[];
  readonly tTimeouts: readonly unknown[];
  readonly outgoing: readonly unknown[];
}

// `server` is private in the SDK's types but a plain field at run time.
const server = (new LocalNetwork() as unknown as { server: SdkServer }).server;

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const listener = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/") {
    reply(res, 404, { kind: "error", head: { corrId: "", status: 404, version: "2026-04-01" }, data: "not found" });
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    let envelope: SdkEnvelope;
    try {
      envelope = JSON.parse(Buffer.concat(chunks).toString("utf8")) as SdkEnvelope;
    } catch {
      reply(res, 400, { kind: "error", head: { corrId: "", status: 400, version: "2026-04-01" }, data: "invalid JSON" });
      return;
    }
    const head = { corrId: envelope.head?.corrId, version: envelope.head?.version };
    try {
      const { response } = server.apply(Date.now(), envelope);
      reply(res, response.head.status, { kind: response.kind, head: { ...head, status: response.head.status }, data: response.data });
    } catch (error) {
      // An unknown kind throws inside the SDK server.
      reply(res, 400, { kind: envelope.kind, head: { ...head, status: 400 }, data: String(error) });
    }
  });
});

const portAt = process.argv.indexOf("--port");
listener.listen(portAt >= 0 ? Number(process.argv[portAt + 1]) : 0, "127.0.0.1", () => {
  const { port } = listener.address() as AddressInfo;
  console.log(`listening http://127.0.0.1:${port}`);
});

const sizes = () => ({ promises: server.promises.size, tasks: server.tasks.size, promiseTimers: server.pTimeouts.length, taskTimers: server.tTimeouts.length, outgoing: server.outgoing.length });
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    console.log(`@@sizes ${JSON.stringify(sizes())}`);
    listener.closeAllConnections();
    listener.close(() => process.exit(0));
  });
}
