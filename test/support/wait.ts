/** The one set of waiting helpers of the tests: poll a condition, or sleep. */

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `f` until it gives a truthy value (returned), or fails naming `what` after the time-out. */
export async function until<T>(
  what: string,
  f: () => T | undefined | false | null | Promise<T | undefined | false | null>,
  timeoutMs = 15_000,
  everyMs = 25,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** `until` with the condition first (the shape the store and collaboration tests use). */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 3000, what = 'condition'): Promise<void> {
  await until(what, cond, timeoutMs, 10);
}
