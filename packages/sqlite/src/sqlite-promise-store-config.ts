import {
  type PromiseBounds, type PromiseFrontOptions, type PromiseSettings, InvalidInputError, resolvePromiseBounds,
  resolvePromiseSettings,
} from "@belay/contract";
import { type ResolvedSqliteFileConfig, type SqliteFileConfig, resolveSqliteFileConfig } from "./sqlite-store-config.js";

/**
 * Options of {@link SqlitePromiseStore}: the same file options as `SqliteStore` (`path`,
 * `tablePrefix`, `busyTimeoutMs`, `synchronous`, with the same defaults and meaning) and the
 * promise front's `bounds` and `settings`. A `SqliteStore` and a `SqlitePromiseStore` with the
 * same path and prefix share the file; their tables never overlap.
 */
export interface SqlitePromiseStoreConfig extends SqliteFileConfig, PromiseFrontOptions {}

/** A config with every default applied and every field checked. */
export interface ResolvedSqlitePromiseStoreConfig extends ResolvedSqliteFileConfig {
  readonly bounds: Readonly<PromiseBounds>;
  readonly settings: Readonly<PromiseSettings>;
}

/** Applies defaults and validates (before any file is opened); throws `InvalidInputError` naming the field. */
export function resolveSqlitePromiseStoreConfig(config: SqlitePromiseStoreConfig): ResolvedSqlitePromiseStoreConfig {
  const file = resolveSqliteFileConfig(config);
  for (const field of ["bounds", "settings"] as const) {
    const value = config[field];
    if (value !== undefined && (typeof value !== "object" || value === null)) throw new InvalidInputError(field, "must be an object");
  }
  return { ...file, bounds: resolvePromiseBounds(config.bounds), settings: resolvePromiseSettings(config.settings) };
}
