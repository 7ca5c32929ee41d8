/**
 * `@belay/conformance/postgres` — a PostgreSQL for tests and benchmarks, without vitest at run
 * time: {@link postgresGlobalSetup} gives each vitest project a server of its own (test files
 * read it with `postgresTarget` of `@belay/conformance`), and {@link throwawayPostgresCluster}
 * starts a private cluster from the local server binaries. {@link createNetworkNamespaces} puts
 * worker processes across a real (virtual) network from it: a namespace and a veth pair each,
 * with latency added each way.
 */
export { PostgresCluster, findPostgresBin, throwawayPostgresCluster } from "./postgres-cluster.js";
export type { PostgresClusterStartOptions, ThrowawayPostgresCluster, ThrowawayPostgresClusterOptions } from "./postgres-cluster.js";
export { postgresGlobalSetup } from "./postgres-global-setup.js";
export type {
  PostgresGlobalSetupOptions,
  PostgresSetupContainers,
  PostgresSetupDriver,
  PostgresSetupProject,
  ProvidedPostgres,
} from "./postgres-global-setup.js";
export { NetnsUnavailableError, createNetworkNamespaces, databaseUpstream, netnsUnavailableReason } from "./netns.js";
export type { NetworkNamespaceOptions, NetworkNamespaces, WorkerNamespace } from "./netns.js";
