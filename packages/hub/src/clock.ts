/** The one source of time for the hub: milliseconds since the epoch. Tests inject a manual one. */
export interface Clock {
  now(): number
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() }

/** A clock that moves only when told to; for tests. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.UTC(2026, 10, 30, 12)) {}
  now(): number {
    return this.ms
  }
  advance(ms: number): void {
    this.ms += ms
  }
  set(ms: number): void {
    this.ms = ms
  }
}
