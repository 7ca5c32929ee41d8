import { isBelayError } from "@belay/contract";
import { HelpRequested } from "./host-config.js";

/**
 * Runs a command `name` (`belay-worker`, `belay-server`): argv read by `parse`, then `main`.
 * A `HelpRequested` prints its usage and exits 0; any other refusal of `parse` prints its message
 * with a pointer to `--help` and exits 2; a failure of `main` prints the error (its code first)
 * and exits 1. Once `main` has resolved, the process runs on what it started.
 */
export function runCommandLine<A>(name: string, parse: (argv: readonly string[]) => A, main: (args: A) => Promise<void>): void {
  let args: A;
  try {
    args = parse(process.argv.slice(2));
  } catch (error) {
    if (error instanceof HelpRequested) {
      console.log(error.message);
      process.exit(0);
    }
    console.error(`${name}: ${(error as Error).message}\nrun ${name} --help for the options`);
    process.exit(2);
  }
  main(args).catch((error: unknown) => {
    console.error(`${name}: ${isBelayError(error) ? `${error.code}: ` : ""}${(error as Error)?.stack ?? String(error)}`);
    process.exit(1);
  });
}

/**
 * On the first SIGTERM or SIGINT (later ones are ignored), says `${name}: ${signal}: stopping`
 * (and `detail`), awaits `stop`, says `stopped` and exits 0; a failed stop is printed, exit 1.
 */
export function stopOnSignals(name: string, stop: () => Promise<void>, detail = ""): void {
  let stopping = false;
  const onSignal = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${name}: ${signal}: stopping${detail}`);
    stop().then(
      () => {
        console.log(`${name}: stopped`);
        process.exit(0);
      },
      (error: unknown) => {
        console.error(`${name}: stop failed: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
}
