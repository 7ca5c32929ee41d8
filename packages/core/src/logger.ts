/** Structured logging the worker and handlers use. Bring your own (pino, winston) by adapting it. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Record<string, unknown>): Logger;
}

/** Logs warnings and errors to stderr as one JSON line each; debug and info are dropped. */
export function consoleLogger(base: Record<string, unknown> = {}, level: "debug" | "info" | "warn" = "warn"): Logger {
  const rank = { debug: 0, info: 1, warn: 2, error: 3 } as const;
  const write = (lvl: keyof typeof rank) => (message: string, fields: Record<string, unknown> = {}) => {
    if (rank[lvl] < rank[level]) return;
    console.error(JSON.stringify({ level: lvl, message, ...base, ...fields }));
  };
  return {
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    child: (fields) => consoleLogger({ ...base, ...fields }, level),
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};
