import { postgresGlobalSetup } from "@belay/conformance/postgres";
import pg from "pg";

// This project's own PostgreSQL for all its files (see postgresGlobalSetup for where it comes from).
export default postgresGlobalSetup({ pg, containers: () => import("testcontainers") });
