import { BelayError, type StepPoint } from "@belay/contract";

/** The codes of the errors this package throws. */
export type ConformanceErrorCode = "BELAY_INJECTED_FAULT";

/**
 * Thrown by the suite's step hook to simulate a crash between two internal writes of an
 * operation: the store must roll the whole operation back.
 */
export class InjectedFault extends BelayError {
  readonly point: StepPoint;

  constructor(point: StepPoint) {
    super("BELAY_INJECTED_FAULT" satisfies ConformanceErrorCode, `injected fault at ${point.operation}/${point.step}`);
    this.point = point;
  }
}
