#!/usr/bin/env node
import { isBelayError } from "@belay/contract";
import { redactStoreUrl } from "@belay/host";
import { ServerHelpRequested, parseServerArgs } from "./server-args.js";
import { startServer } from "./start-server.js";

async function main(): Promise<number> {
  let args;
  try {
    args = parseServerArgs(process.argv.slice(2));
  } catch (error) {
    if (error instanceof ServerHelpRequested) {
      console.log(error.message);
      return 0;
    }
    console.error(`belay-server: ${(error as Error).message}\nrun belay-server --help for the options`);
    return 2;
  }
  const running = await startServer(args);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`belay-server: ${signal}: stopping`);
    running.stop().then(
      () => {
        console.log("belay-server: stopped");
        process.exit(0);
      },
      (error: unknown) => {
        console.error(`belay-server: stop failed: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // Said only once the signals are handled: whoever waits for these lines may stop the server at once.
  const auth = args.tokens.length === 0 ? "read-only (no --token given)" : `${args.tokens.length} token(s)`;
  console.log(`belay-server: ${redactStoreUrl(args.store)}${running.workerHost ? " with an embedded worker" : ""}; ${auth}`);
  console.log(`belay-server: dashboard ${running.url}/  API ${running.url}/api/v1  (OpenAPI: ${running.url}/api/v1/openapi.json)`);
  if (running.promises !== null) {
    const anonymous = running.promises.server.anonymous === "local" ? "anonymous callers on this machine allowed" : "a token with the promises permission required";
    console.log(`belay-server: durable promises ${running.promises.url}  (Resonate protocol 2026-04-01; ${anonymous}${args.debug ? "; DEBUG MODE" : ""})`);
  }
  return -1;
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    console.error(`belay-server: ${isBelayError(error) ? `${error.code}: ` : ""}${(error as Error)?.stack ?? String(error)}`);
    process.exit(1);
  },
);
