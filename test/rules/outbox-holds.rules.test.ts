import { afterAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// The outbox's holds (src/outbox/holds.ts): items for a peer that is not configured are kept in
// `outbox:held:<dest>:{#p}` rather than attempted; /readyz says what is kept ("ok" when nothing); the
// log says it once per destination; a process that can deliver to the destination takes them back into
// `outbox:due:{#p}`, 200 at a time (held items of the global layout, `outbox:held:<dest>`, are moved
// into their partition by the outbox's adopt). And the abort race every attempt runs under (src/outbox/attempt.ts).
// Real LMDB store in a temp dir; the modules are loaded afresh per test.
const load = async () => {
  vi.resetModules();
  return { ...(await import('../../src/outbox/holds.js')), ...(await import('../../src/outbox/attempt.js')) };
};
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
const T0 = 1_700_000_000_000;

const deliverer = (held?: string) => Object.assign(async () => undefined, held === undefined ? {} : { held });
async function setup(deliver: Record<string, ReturnType<typeof deliverer>>, withLogger = true) {
  const { Holds, raceAbort } = await load();
  const store = await openLmdbStore({ path: tempDir('holds-rules') });
  stores.push(store);
  const logs: { level: string; obj: unknown; msg: string }[] = [];
  const logger = {
    warn: (obj: unknown, msg: string) => void logs.push({ level: 'warn', obj, msg }),
    error: (obj: unknown, msg: string) => void logs.push({ level: 'error', obj, msg }),
    debug: (obj: unknown, msg: string) => void logs.push({ level: 'debug', obj, msg }),
  };
  const clock = new ManualClock(T0);
  const adopted: [string, number][] = [];
  const adopt = async (id: string, dueAt: number) => (adopted.push([id, dueAt]), true);
  const holds = new Holds(store, clock, deliver as never, withLogger ? (logger as never) : undefined, adopt);
  const hold = (dest: string, n: number, from = 0, key = `outbox:held:${dest}:{#5}`) =>
    store.update([], () => ({
      writes: Array.from({ length: n }, (_, i) => ({ op: 'index' as const, key, member: `${dest}-${from + i}`, score: from + i })),
      result: undefined,
    }));
  return { holds, store, logs, clock, hold, deliver, raceAbort, adopted };
}
const WARN = 'outbox keeps the deliveries for a peer that is not configured; they go out once it is (said once)';

describe('held destinations', () => {
  it('are those whose deliverer says why it is held', async () => {
    const { holds } = await setup({ mail: deliverer(), peer: deliverer('PEER_URL is not set') });
    expect(holds.isHeld('peer')).toBe(true);
    expect(holds.isHeld('mail')).toBe(false);
    expect(holds.isHeld('unknown')).toBe(false);
  });

  it('move an item from the due index to the destination’s held index, scored by creation', async () => {
    const { holds } = await setup({});
    expect(holds.holdWrites('m1', 'peer', 123, 7)).toEqual([
      { op: 'unindex', key: 'outbox:due:{#7}', member: 'm1' },
      { op: 'index', key: 'outbox:held:peer:{#7}', member: 'm1', score: 123 },
    ]);
  });

  it('are counted per destination, read from the deliverers at each call', async () => {
    const deliver: Record<string, ReturnType<typeof deliverer>> = { mail: deliverer(), a: deliverer('no A') };
    const { holds, hold } = await setup(deliver);
    await hold('a', 2);
    await hold('a', 1, 10, 'outbox:held:a:{#63}');
    await hold('a', 1, 20, 'outbox:held:a');
    await hold('mail', 5);
    expect(await holds.holding()).toEqual([{ dest: 'a', reason: 'no A', items: 4 }]);
    deliver.b = deliverer('no B');
    expect(await holds.holding()).toEqual([
      { dest: 'a', reason: 'no A', items: 4 },
      { dest: 'b', reason: 'no B', items: 0 },
    ]);
  });
});

describe('readiness', () => {
  it('is ok when nothing is kept', async () => {
    const { holds } = await setup({ mail: deliverer(), a: deliverer('no A') });
    expect(await holds.readiness()).toBe('ok');
  });

  it('names what is kept and why, one delivery or many, leaving out destinations with none', async () => {
    const { holds, hold } = await setup({ a: deliverer('no A'), b: deliverer('no B'), c: deliverer('no C') });
    await hold('a', 1);
    expect(await holds.readiness()).toBe('holding 1 delivery: a 1 (no A)');
    await hold('c', 2);
    expect(await holds.readiness()).toBe('holding 3 deliveries: a 1 (no A); c 2 (no C)');
    await hold('a', 1, 10);
    expect(await holds.readiness()).toBe('holding 4 deliveries: a 2 (no A); c 2 (no C)');
  });
});

describe('the log', () => {
  it('says once per destination that items are kept, and nothing for a destination with none', async () => {
    const { holds, hold, logs } = await setup({ a: deliverer('no A'), b: deliverer('no B'), c: deliverer('no C') });
    await hold('a', 2);
    await hold('b', 1);
    await holds.tell();
    expect(logs).toEqual([
      { level: 'warn', obj: { dest: 'a', held: 2, reason: 'no A' }, msg: WARN },
      { level: 'warn', obj: { dest: 'b', held: 1, reason: 'no B' }, msg: WARN },
    ]);
    await hold('a', 1, 10);
    await holds.tell();
    await holds.tell('a');
    expect(logs).toHaveLength(2);
    await hold('c', 1);
    await holds.tell();
    expect(logs.at(-1)).toEqual({ level: 'warn', obj: { dest: 'c', held: 1, reason: 'no C' }, msg: WARN });
    expect(logs).toHaveLength(3);
  });

  it('says it for the one destination asked about only', async () => {
    const { holds, hold, logs } = await setup({ a: deliverer('no A'), b: deliverer('no B') });
    await hold('a', 1);
    await hold('b', 1);
    await holds.tell('b');
    expect(logs.map((l) => (l.obj as { dest: string }).dest)).toEqual(['b']);
    await holds.tell('b');
    expect(logs).toHaveLength(1);
    await holds.tell('a');
    expect(logs.map((l) => (l.obj as { dest: string }).dest)).toEqual(['b', 'a']);
  });

  it('does not even count again for a destination already told', async () => {
    const { holds, hold, store } = await setup({ a: deliverer('no A') });
    await hold('a', 1);
    await holds.tell('a');
    const counts = vi.spyOn(store, 'indexCount');
    await holds.tell('a');
    expect(counts).not.toHaveBeenCalled();
    await holds.tell();
    expect(counts).toHaveBeenCalledTimes(65); // the global layout and the 64 partitions
  });

  it('is optional', async () => {
    const { holds, hold } = await setup({ a: deliverer('no A'), mail: deliverer() }, false);
    await hold('a', 1);
    await hold('mail', 1);
    await expect(holds.tell()).resolves.toBeUndefined();
    await expect(holds.release()).resolves.toBeUndefined();
  });
});

describe('taking items back', () => {
  it('moves the items of every destination this process delivers to into the due index, due now', async () => {
    const { holds, hold, store, logs } = await setup({ mail: deliverer(), peer: deliverer(), held: deliverer('not here') });
    await hold('mail', 3);
    await hold('peer', 1);
    await hold('held', 2);
    await holds.release();
    expect(await store.indexRange('outbox:due:{#5}')).toEqual([
      { member: 'mail-0', score: T0 },
      { member: 'mail-1', score: T0 },
      { member: 'mail-2', score: T0 },
      { member: 'peer-0', score: T0 },
    ]);
    expect(await store.indexCount('outbox:held:mail:{#5}')).toBe(0);
    expect(await store.indexCount('outbox:held:peer:{#5}')).toBe(0);
    expect(await store.indexCount('outbox:held:held:{#5}')).toBe(2);
    expect(logs).toEqual([
      { level: 'debug', obj: { dest: 'mail', items: 3 }, msg: 'outbox took back held items' },
      { level: 'debug', obj: { dest: 'peer', items: 1 }, msg: 'outbox took back held items' },
    ]);
  });

  it('takes them 200 at a time until none is left', async () => {
    for (const [n, batches] of [
      [450, [200, 200, 50]],
      [400, [200, 200]],
      [199, [199]],
      [0, []],
    ] as [number, number[]][]) {
      const { holds, hold, store, logs } = await setup({ mail: deliverer() });
      await hold('mail', n);
      await holds.release();
      expect(await store.indexCount('outbox:due:{#5}'), String(n)).toBe(n);
      expect(await store.indexCount('outbox:held:mail:{#5}')).toBe(0);
      expect(logs.map((l) => (l.obj as { items: number }).items), String(n)).toEqual(batches);
    }
  });

  it('reads the store for the held index only after each batch it moved', async () => {
    const { holds, hold, store } = await setup({ mail: deliverer() });
    await hold('mail', 201);
    const ranges: unknown[] = [];
    const spy = vi.spyOn(store, 'indexRange');
    await holds.release();
    for (const c of spy.mock.calls) ranges.push(c);
    expect(ranges.filter((c) => (c as string[])[0] === 'outbox:held:mail:{#5}')).toEqual([
      ['outbox:held:mail:{#5}', { limit: 200 }],
      ['outbox:held:mail:{#5}', { limit: 200 }],
    ]);
    expect(ranges).toHaveLength(65 + 1); // one read of every other part, found empty
  });

  it('moves held items of the global layout into their partition, due now, and drops the global entries', async () => {
    const { holds, hold, store, adopted, clock } = await setup({ mail: deliverer(), held: deliverer('not here') });
    await hold('mail', 2, 0, 'outbox:held:mail');
    await hold('held', 1, 0, 'outbox:held:held');
    clock.set(T0 + 9);
    await holds.release();
    expect(adopted).toEqual([['mail-0', T0 + 9], ['mail-1', T0 + 9]]);
    expect(await store.indexCount('outbox:held:mail')).toBe(0);
    expect(await store.indexCount('outbox:held:held')).toBe(1);
  });
});

describe('the abort race of an attempt', () => {
  it('settles with the attempt while the signal stays quiet, and lets go of the signal', async () => {
    const { raceAbort } = await load();
    const events: string[] = [];
    const signal = {
      aborted: false,
      addEventListener: (t: string, _f: unknown, o: unknown) => events.push(`add ${t} ${JSON.stringify(o)}`),
      removeEventListener: (t: string) => events.push(`remove ${t}`),
    } as unknown as AbortSignal;
    expect(await raceAbort(Promise.resolve(7), signal)).toBe(7);
    expect(events).toEqual(['add abort {"once":true}', 'remove abort']);
    const err = new Error('refused');
    await expect(raceAbort(Promise.reject(err), signal)).rejects.toBe(err);
    expect(events).toEqual(['add abort {"once":true}', 'remove abort', 'add abort {"once":true}', 'remove abort']);
  });

  it('rejects with the signal’s reason as soon as it aborts, or at once when it already has', async () => {
    const { raceAbort } = await load();
    const c = new AbortController();
    let settle!: (v: number) => void;
    const slow = new Promise<number>((r) => (settle = r));
    const raced = raceAbort(slow, c.signal);
    const reason = new Error('deadline');
    c.abort(reason);
    await expect(raced).rejects.toBe(reason);
    settle(1);
    const done = new AbortController();
    done.abort('gone');
    await expect(raceAbort(new Promise(() => undefined), done.signal)).rejects.toBe('gone');
  });

  it('swallows the abandoned attempt’s later failure', async () => {
    const { raceAbort } = await load();
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const done = new AbortController();
      done.abort('gone');
      await expect(raceAbort(Promise.reject(new Error('late 1')), done.signal)).rejects.toBe('gone');
      const c = new AbortController();
      let fail!: (e: Error) => void;
      const later = raceAbort(new Promise((_, j) => (fail = j)), c.signal);
      c.abort('stop');
      await expect(later).rejects.toBe('stop');
      fail(new Error('late 2'));
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
