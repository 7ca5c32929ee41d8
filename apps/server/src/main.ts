#!/usr/bin/env node
import { redactStoreUrl, runCommandLine, stopOnSignals } from "@belay/host";
import { parseServerArgs } from "./server-args.js";
import { startServer } from "./start-server.js";

runCommandLine("belay-server", parseServerArgs, async (args) => {
  const running = await startServer(args);
  stopOnSignals("belay-server", () => running.stop());
  // Said only once the signals are handled: whoever waits for these lines may stop the server at once.
  const auth = args.tokens.length === 0 ? "read-only (no --token given)" : `${args.tokens.length} token(s)`;
  console.log(`belay-server: ${redactStoreUrl(args.store)}${running.workerHost ? " with an embedded worker" : ""}; ${auth}`);
  console.log(`belay-server: dashboard ${running.url}/  API ${running.url}/api/v1  (OpenAPI: ${running.url}/api/v1/openapi.json)`);
  if (running.promises !== null) {
    const anonymous = running.promises.server.anonymous === "local" ? "anonymous callers on this machine allowed" : "a token with the promises permission required";
    console.log(`belay-server: durable promises ${running.promises.url}  (Resonate protocol 2026-04-01; ${anonymous}${args.debug ? "; DEBUG MODE" : ""})`);
  }
});
