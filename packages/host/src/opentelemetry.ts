import { InvalidInputError } from "@belay/contract";
import { type BelayTelemetry, type OtelApi, belayTelemetry } from "@belay/core";

// A specifier in a variable: the package is an optional peer, so neither TypeScript nor the
// bundler may require it to be present.
const API = "@opentelemetry/api";

/**
 * The host's telemetry when its config switches OpenTelemetry on: `@opentelemetry/api` imported
 * now (an optional peer of `@belay/host`) and the globally registered providers, so spans and
 * metrics go wherever the process's SDK sends them (register the SDK before the host starts, e.g.
 * `node --import ./otel.mjs`). A missing package fails with `BELAY_INVALID_INPUT` (field
 * `opentelemetry`) saying what to install.
 */
export async function loadTelemetry(load: () => Promise<unknown> = () => import(API)): Promise<BelayTelemetry> {
  let api: OtelApi;
  try {
    const loaded = (await load()) as OtelApi & { default?: OtelApi };
    api = loaded.trace === undefined && loaded.default !== undefined ? loaded.default : loaded;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if ((code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && String((error as Error).message).includes(API)) {
      const refused = new InvalidInputError("opentelemetry", `OpenTelemetry needs ${API}, which is not installed: npm install ${API} (and an OpenTelemetry SDK)`);
      refused.cause = error;
      throw refused;
    }
    throw error;
  }
  return belayTelemetry({ api });
}
