import type { DrawOptions, Store, UpdateFn, Write } from '../../src/store/port.js';

/**
 * The store as a service under test sees it: every write of its atomic updates is recorded in
 * `writes`, and `race.next`, when set, runs once before the next update (what another process does
 * between a service's read and its update).
 */
export function recordingStore(store: Store): { store: Store; writes: Write[]; race: { next?: () => Promise<void> } } {
  const writes: Write[] = [];
  const race: { next?: () => Promise<void> } = {};
  const recording = new Proxy(store, {
    get(target, prop) {
      if (prop === 'update') {
        return async (keys: string[], fn: UpdateFn<unknown>, opts?: DrawOptions) => {
          const other = race.next;
          race.next = undefined;
          if (other) await other();
          const recorded: UpdateFn<unknown> = (cur) => {
            const plan = fn(cur);
            writes.push(...plan.writes);
            return plan;
          };
          return opts ? target.update(keys, recorded, opts) : target.update(keys, recorded);
        };
      }
      const v = (target as unknown as Record<string | symbol, unknown>)[prop];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: recording, writes, race };
}
