/** Time is injected: services ask a Clock, never Date.now() directly. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * A clock that starts at a chosen instant and then advances with real time.
 * Used when CLOCK_START is configured (demos, tests across processes).
 */
export function offsetClock(startMs: number): Clock {
  const offset = startMs - Date.now();
  return { now: () => Date.now() + offset };
}

/** A clock that only moves when told to (tests). */
export class ManualClock implements Clock {
  constructor(private t: number) {}
  now(): number {
    return this.t;
  }
  set(ms: number): void {
    this.t = ms;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
