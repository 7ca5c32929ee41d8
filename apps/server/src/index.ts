/**
 * `@belay/server` — the HTTP/JSON API and the web dashboard over any Belay store, optionally
 * with an embedded worker, and the durable-promise listener that speaks the Resonate envelope.
 * `belay-server` is the command; `createServer` and `createPromiseServer` the library entries.
 */
export { createServer } from "./create-server.js";
export type { BelayServer, ServerOptions } from "./create-server.js";
export { serve } from "./serve.js";
export { ThroughputRing } from "./monitor/throughput.js";
export type { ThroughputBucket } from "./monitor/throughput.js";
export type { Listener, Servable } from "./serve.js";
export { createPromiseServer } from "./daa/promise-server.js";
export type { PromiseServer, PromiseServerOptions } from "./daa/promise-server.js";
export type { AnonymousPromiseAccess } from "./daa/promise-access.js";
export { PERMISSIONS, parsePermissions } from "./auth/permissions.js";
export type { Permission } from "./auth/permissions.js";
export type { Authorize, AuthorizeDecision } from "./auth/access.js";
export { parseToken, parseTokenList } from "./auth/tokens.js";
export type { ServerToken } from "./auth/tokens.js";
export { parseServerArgs, ServerHelpRequested } from "./server-args.js";
export type { ServerArgs } from "./server-args.js";
export { startServer } from "./start-server.js";
export type { RunningServer, RunningPromises } from "./start-server.js";
export type { ErrorBody } from "./http/errors.js";
