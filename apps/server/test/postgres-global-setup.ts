import { createRequire } from "node:module";
import { type PostgresSetupDriver, postgresGlobalSetup } from "@belay/conformance/postgres";

// This project's own PostgreSQL for all its files (see postgresGlobalSetup for where it comes
// from); `pg` typed by the setup's own driver interface (the server has no @types/pg).
const pg = createRequire(import.meta.url)("pg") as PostgresSetupDriver;
export default postgresGlobalSetup({ pg });
