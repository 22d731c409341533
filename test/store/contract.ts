import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { drawn, type Json, type Store, type UpdatePlan, type Write } from '../../src/store/port.js';
import { PARTITIONS, PartitionError, partitionKey, partitionKeyFor, partitionOf } from '../../src/store/partition.js';
import { sleep, waitFor } from '../support/wait.js';

/**
 * The one contract every Store adapter passes. `open` must return a fresh, empty store that no
 * other call of `open` shares; `cleanup` runs once after the suite.
 */

export { sleep, waitFor } from '../support/wait.js';

/** Keys that stress the adapters' key encoding. */
const ODD_KEYS = ['', 'a:b:c', 'ünïcödé ✓', 'with space', '*?[x]\\', 'nul\u0000byte', 'x'.repeat(300)];

const inc = (key: string) => (cur: (Json | undefined)[]): UpdatePlan<number> => {
  const next = ((cur[0] as number | undefined) ?? 0) + 1;
  return { writes: [{ op: 'set', key, value: next }], result: next };
};

export function storeContract(
  name: string,
  open: () => Promise<Store>,
  cleanup?: () => Promise<void>,
): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;

    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });
    if (cleanup) afterAll(cleanup);

    describe('values', () => {
      it('reports its kind', () => {
        expect(typeof store.kind).toBe('string');
        expect(store.kind.length).toBeGreaterThan(0);
      });

      it('get of a missing key is undefined', async () => {
        expect(await store.get('missing')).toBeUndefined();
      });

      it('round-trips every JSON shape, null included', async () => {
        const values: Json[] = [
          null,
          true,
          false,
          0,
          -12.5,
          1e21,
          '',
          'text ✓',
          [],
          [1, 'two', null, { three: [3] }],
          {},
          { a: 1, nested: { b: [true, null], s: 'x' } },
        ];
        for (const [i, v] of values.entries()) {
          expect(await store.set(`k${i}`, v)).toBe(true);
        }
        for (const [i, v] of values.entries()) {
          expect(await store.get(`k${i}`)).toEqual(v);
        }
        expect(await store.get('k0')).toBeNull();
      });

      it('overwrites', async () => {
        await store.set('k', { v: 1 });
        await store.set('k', 'second');
        expect(await store.get('k')).toBe('second');
      });

      it('getMany keeps order and reports missing keys', async () => {
        await store.set('a', 1);
        await store.set('c', 3);
        expect(await store.getMany(['c', 'missing', 'a', 'c'])).toEqual([3, undefined, 1, 3]);
        expect(await store.getMany([])).toEqual([]);
      });

      it('del reports whether the key existed', async () => {
        await store.set('k', 1);
        expect(await store.del('k')).toBe(true);
        expect(await store.get('k')).toBeUndefined();
        expect(await store.del('k')).toBe(false);
      });

      it('keeps odd keys apart', async () => {
        for (const [i, k] of ODD_KEYS.entries()) await store.set(k, i);
        expect(await store.getMany(ODD_KEYS)).toEqual(ODD_KEYS.map((_, i) => i));
        expect(await store.get('nul')).toBeUndefined();
        expect(await store.get('x'.repeat(299))).toBeUndefined();
      });

      it('ifAbsent writes only when the key is absent', async () => {
        expect(await store.set('k', 1, { ifAbsent: true })).toBe(true);
        expect(await store.set('k', 2, { ifAbsent: true })).toBe(false);
        expect(await store.get('k')).toBe(1);
        expect(await store.set('k', 3)).toBe(true);
        expect(await store.get('k')).toBe(3);
      });

      it('ifAbsent has exactly one winner under concurrency', async () => {
        const wins = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.set('lock', i, { ifAbsent: true })),
        );
        expect(wins.filter(Boolean)).toHaveLength(1);
        expect(await store.get('lock')).toBe(wins.indexOf(true));
      });

      it('rejects values that are not JSON', async () => {
        await expect(store.set('k', undefined as unknown as Json)).rejects.toThrow();
        await expect(store.set('k', 10n as unknown as Json)).rejects.toThrow();
        expect(await store.get('k')).toBeUndefined();
      });
    });

    describe('TTL', () => {
      it('a value reads as absent after its TTL', async () => {
        await store.set('t', 'v', { ttlMs: 400 });
        await store.set('keep', 'v');
        expect(await store.get('t')).toBe('v');
        await waitFor(async () => (await store.get('t')) === undefined, 5000, 'the TTL of t to pass');
        expect(await store.get('t')).toBeUndefined();
        expect(await store.getMany(['t', 'keep'])).toEqual([undefined, 'v']);
        expect(await store.del('t')).toBe(false);
      });

      it('ifAbsent treats an expired key as absent', async () => {
        await store.set('t', 1, { ttlMs: 400 });
        expect(await store.set('t', 2, { ifAbsent: true })).toBe(false);
        await waitFor(async () => (await store.get('t')) === undefined, 5000, 'the TTL of t to pass');
        expect(await store.set('t', 3, { ifAbsent: true, ttlMs: 5000 })).toBe(true);
        expect(await store.get('t')).toBe(3);
      });

      it('a later set without TTL makes the value permanent; with TTL renews it', async () => {
        await store.set('p', 1, { ttlMs: 80 });
        await store.set('p', 2);
        await store.set('r', 1, { ttlMs: 80 });
        await store.set('r', 2, { ttlMs: 5000 });
        await sleep(250);
        expect(await store.get('p')).toBe(2);
        expect(await store.get('r')).toBe(2);
      });

      it('rejects a non-positive TTL', async () => {
        await expect(store.set('k', 1, { ttlMs: 0 })).rejects.toThrow();
        await expect(store.set('k', 1, { ttlMs: -5 })).rejects.toThrow();
        expect(await store.get('k')).toBeUndefined();
      });
    });

    describe('update', () => {
      it('passes current values in key order and returns the result', async () => {
        await store.set('a', 1);
        await store.set('c', { x: 3 });
        const seen: (Json | undefined)[][] = [];
        const result = await store.update(['c', 'b', 'a'], (cur) => {
          seen.push(cur);
          return { writes: [], result: 'done' };
        });
        expect(result).toBe('done');
        expect(seen.at(-1)).toEqual([{ x: 3 }, undefined, 1]);
      });

      it('50 concurrent increments of one key give exactly 50', async () => {
        const results = await Promise.all(Array.from({ length: 50 }, () => store.update(['n'], inc('n'))));
        expect(await store.get('n')).toBe(50);
        expect([...results].sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      });

      it('concurrent transfers keep the sum and match their own log', async () => {
        await store.set('acct:a', 100);
        await store.set('acct:b', 100);
        const transfer = (from: string, to: string, amount: number) =>
          store.update(['acct:a', 'acct:b'], ([a, b]): UpdatePlan<boolean> => {
            const bal: Record<string, number> = { 'acct:a': a as number, 'acct:b': b as number };
            if (bal[from]! < amount) return { writes: [], result: false };
            return {
              writes: [
                { op: 'set', key: from, value: bal[from]! - amount },
                { op: 'set', key: to, value: bal[to]! + amount },
                { op: 'push', key: 'log', value: { from, to, amount }, cap: 1000 },
              ],
              result: true,
            };
          });
        const jobs = Array.from({ length: 80 }, (_, i) =>
          i % 2 === 0 ? transfer('acct:a', 'acct:b', 1 + (i % 37)) : transfer('acct:b', 'acct:a', 1 + (i % 23)),
        );
        const done = await Promise.all(jobs);
        const [a, b] = (await store.getMany<number>(['acct:a', 'acct:b'])) as [number, number];
        expect(a + b).toBe(200);
        expect(a).toBeGreaterThanOrEqual(0);
        expect(b).toBeGreaterThanOrEqual(0);
        const log = await store.range<{ from: string; to: string; amount: number }>('log');
        expect(log).toHaveLength(done.filter(Boolean).length);
        const replay: Record<string, number> = { 'acct:a': 100, 'acct:b': 100 };
        for (const t of log) {
          replay[t.from]! -= t.amount;
          replay[t.to]! += t.amount;
          expect(replay[t.from]).toBeGreaterThanOrEqual(0);
        }
        expect(replay).toEqual({ 'acct:a': a, 'acct:b': b });
      });

      it('a throwing fn writes nothing and rethrows the same error', async () => {
        await store.set('x', 1);
        const err = new Error('refused');
        await expect(
          store.update(['x'], () => {
            throw err;
          }),
        ).rejects.toBe(err);
        expect(await store.get('x')).toBe(1);
      });

      it('an invalid write anywhere in the plan writes nothing', async () => {
        await store.set('x', 1);
        const plans: UpdatePlan<null>[] = [
          {
            writes: [
              { op: 'set', key: 'x', value: 2 },
              { op: 'push', key: 'l', value: 1, cap: 10 },
              { op: 'push', key: 'l', value: 2, cap: 0 },
            ],
            result: null,
          },
          {
            writes: [
              { op: 'index', key: 'z', member: 'm', score: 1 },
              { op: 'set', key: 'x', value: 10n as unknown as Json },
            ],
            result: null,
          },
          {
            writes: [
              { op: 'del', key: 'x' },
              { op: 'index', key: 'z', member: 'm', score: Number.NaN },
            ],
            result: null,
          },
          {
            writes: [
              { op: 'set', key: 'y', value: 1 },
              { op: 'bogus', key: 'y' } as unknown as UpdatePlan<null>['writes'][number],
            ],
            result: null,
          },
        ];
        for (const plan of plans) {
          await expect(store.update(['x'], () => plan)).rejects.toThrow();
        }
        expect(await store.get('x')).toBe(1);
        expect(await store.get('y')).toBeUndefined();
        expect(await store.length('l')).toBe(0);
        expect(await store.indexCount('z')).toBe(0);
      });

      it('writes keys outside its read set, with every kind of write', async () => {
        await store.set('gone', 'x');
        await store.index('idx', 'old', 1);
        const result = await store.update(['counter'], ([c]) => ({
          writes: [
            { op: 'set', key: 'counter', value: ((c as number) ?? 0) + 1 },
            { op: 'set', key: 'other', value: { note: 'outside' } },
            { op: 'set', key: 'temp', value: 't', ttlMs: 400 },
            { op: 'del', key: 'gone' },
            { op: 'push', key: 'feed', value: 'e1', cap: 3 },
            { op: 'push', key: 'feed', value: 'e2', cap: 3 },
            { op: 'index', key: 'idx', member: 'new', score: 2 },
            { op: 'unindex', key: 'idx', member: 'old' },
          ],
          result: { ok: true },
        }));
        expect(result).toEqual({ ok: true });
        expect(await store.getMany(['counter', 'other', 'temp', 'gone'])).toEqual([
          1,
          { note: 'outside' },
          't',
          undefined,
        ]);
        expect(await store.range('feed')).toEqual(['e1', 'e2']);
        expect(await store.indexRange('idx')).toEqual([{ member: 'new', score: 2 }]);
        await waitFor(async () => (await store.get('temp')) === undefined, 5000, 'the TTL of temp to pass');
      });

      it('applies writes in order', async () => {
        await store.update([], () => ({
          writes: [
            { op: 'set', key: 'k', value: 1 },
            { op: 'set', key: 'k', value: 2 },
            { op: 'set', key: 'd', value: 1 },
            { op: 'del', key: 'd' },
            { op: 'push', key: 'l', value: 'a', cap: 5 },
            { op: 'push', key: 'l', value: 'b', cap: 1 },
            { op: 'index', key: 'z', member: 'm', score: 1 },
            { op: 'index', key: 'z', member: 'm', score: 7 },
            { op: 'index', key: 'z', member: 'n', score: 1 },
            { op: 'unindex', key: 'z', member: 'n' },
          ],
          result: null,
        }));
        expect(await store.get('k')).toBe(2);
        expect(await store.get('d')).toBeUndefined();
        expect(await store.range('l')).toEqual(['b']);
        expect(await store.indexRange('z')).toEqual([{ member: 'm', score: 7 }]);
        expect(await store.indexCount('z')).toBe(1);
      });

      it('counts an index that one update adds to many times, deletes and adds to again', async () => {
        await store.update([], () => ({ writes: [{ op: 'index', key: 'c', member: 'old', score: 0 }], result: null }));
        await store.update([], () => ({
          writes: [
            ...Array.from({ length: 40 }, (_, i) => ({ op: 'index' as const, key: 'c', member: `m${i}`, score: i })),
            { op: 'index', key: 'c', member: 'm3', score: 99 },
            { op: 'unindex', key: 'c', member: 'm4' },
            { op: 'unindex', key: 'c', member: 'absent' },
          ],
          result: null,
        }));
        expect(await store.indexCount('c')).toBe(40);
        await store.update([], () => ({ writes: [{ op: 'del', key: 'c' }, { op: 'index', key: 'c', member: 'x', score: 1 }, { op: 'index', key: 'c', member: 'y', score: 2 }], result: null }));
        expect(await store.indexCount('c')).toBe(2);
        await store.update([], () => ({ writes: [{ op: 'index', key: 'c', member: 'z', score: 3 }, { op: 'del', key: 'c' }], result: null }));
        expect(await store.indexCount('c')).toBe(0);
        expect(await store.indexRange('c')).toEqual([]);
        // a failing update leaves the count as it was
        await store.update([], () => ({ writes: [{ op: 'index', key: 'c', member: 'a', score: 1 }], result: null }));
        await expect(store.update([], () => ({ writes: [{ op: 'index', key: 'c', member: 'b', score: 1 }, { op: 'incr', key: 'c-text', by: 1 }, { op: 'set', key: 'c-text', value: 'x' }, { op: 'incr', key: 'c-text', by: 1 }], result: null }))).rejects.toThrow();
        expect(await store.indexCount('c')).toBe(1);
      });

      it('sees an expired key as absent', async () => {
        await store.set('t', 5, { ttlMs: 60 });
        await waitFor(async () => (await store.get('t')) === undefined, 5000, 'the TTL of t to pass');
        const seen = await store.update(['t'], (cur) => ({ writes: [], result: cur }));
        expect(seen).toEqual([undefined]);
      });

      it('stays atomic against incr on the same key', async () => {
        await store.set('n', 0);
        const ops: Promise<unknown>[] = [];
        for (let i = 0; i < 30; i++) {
          ops.push(store.update(['n'], inc('n')));
          if (i % 10 === 5) ops.push(store.incr('n', 100));
        }
        await Promise.all(ops);
        expect(await store.get('n')).toBe(330);
      });

      it('counts with incr writes: absent is 0, concurrent updates add up, a TTL is kept', async () => {
        const credit = (amount: number) =>
          store.update([], () => ({
            writes: [
              { op: 'incr', key: 'sum', by: amount },
              { op: 'incr', key: 'count', by: 1 },
              { op: 'push', key: 'credits', value: amount, cap: 1000 },
            ],
            result: amount,
          }));
        await Promise.all(Array.from({ length: 60 }, (_, i) => credit(i)));
        expect(await store.getMany(['sum', 'count'])).toEqual([(59 * 60) / 2, 60]);
        expect(await store.length('credits')).toBe(60);
        // a counter read by another update reads as the number it holds, and counts on with incr
        expect(await store.update(['count'], ([c]) => ({ writes: [{ op: 'incr', key: 'count', by: -(c as number) }], result: c }))).toBe(60);
        expect(await store.get('count')).toBe(0);
        expect(await store.incr('count', 2)).toBe(2);
        await store.set('rate', 1, { ttlMs: 400 });
        await store.update([], () => ({ writes: [{ op: 'incr', key: 'rate', by: 4 }], result: null }));
        expect(await store.get('rate')).toBe(5);
        await waitFor(async () => (await store.get('rate')) === undefined, 5000, 'the TTL of rate to pass');
      });

      it('an incr write on a value that is not an integer fails the update and writes nothing', async () => {
        await store.set('word', 'abc');
        await store.set('half', 0.5);
        for (const key of ['word', 'half']) {
          await expect(
            store.update([], () => ({
              writes: [
                { op: 'set', key: 'before', value: key },
                { op: 'incr', key: 'n', by: 1 },
                { op: 'incr', key, by: 1 },
              ],
              result: null,
            })),
          ).rejects.toThrow(/not an integer/);
        }
        expect(await store.getMany(['before', 'n', 'word', 'half'])).toEqual([undefined, undefined, 'abc', 0.5]);
        await expect(store.update([], () => ({ writes: [{ op: 'incr', key: 'n', by: 0.5 }], result: null }))).rejects.toThrow();
      });

      it('del removes the list and index stored under a key', async () => {
        await store.push('k', 1, 5);
        await store.index('k', 'm', 1);
        await store.set('k', 'v');
        await store.update([], () => ({ writes: [{ op: 'del', key: 'k' }], result: null }));
        expect(await store.get('k')).toBeUndefined();
        expect(await store.length('k')).toBe(0);
        expect(await store.indexCount('k')).toBe(0);
      });
    });

    describe('numbers drawn in the commit', () => {
      it('draws from counters (absent is 0) and fills the numbers into keys, members, scores and values', async () => {
        await store.set('eco', 41);
        const got = await store.update(
          [],
          () => ({
            writes: [
              {
                op: 'set',
                key: `entry:${drawn(0)}`,
                value: { seq: drawn(0), eco: drawn(1), label: `n°${drawn(1, 4)} of "${drawn(0)}"\\`, [`k${drawn(0)}`]: [drawn(0, 3)] },
              },
              { op: 'index', key: 'idx', member: drawn(0, 6), score: drawn(1) },
              { op: 'push', key: `list:${drawn(1)}`, value: drawn(1), cap: 10 },
              { op: 'incr', key: `count:${drawn(0)}`, by: 5 },
            ],
            result: 'done',
          }),
          { draw: ['seq', 'eco'] },
        );
        expect(got).toEqual({ result: 'done', drawn: [1, 42] });
        expect(await store.get('entry:1')).toEqual({ seq: 1, eco: 42, label: 'n°0042 of "1"\\', k1: ['001'] });
        expect(await store.indexRange('idx')).toEqual([{ member: '000001', score: 42 }]);
        expect(await store.range('list:42')).toEqual([42]);
        expect(await store.getMany(['seq', 'eco', 'count:1'])).toEqual([1, 42, 5]);
        // text that only looks like a placeholder once JSON-escaped stays as it is; an object key
        // that is exactly a placeholder stays a string, as does one after an escaped quote
        const lookalike = '\\u0000#0\\u0000';
        await store.update(
          [],
          () => ({ writes: [{ op: 'set', key: 'look', value: [lookalike, drawn(0), { [drawn(0)]: `"${drawn(0)}` }, `\\${lookalike}`] }], result: null }),
          { draw: ['seq'] },
        );
        expect(await store.get('look')).toEqual([lookalike, 2, { '2': '"2' }, `\\${lookalike}`]);
      });

      it('concurrent updates draw 1..n in commit order without gaps or repeats; a failing one draws nothing', async () => {
        await store.set('word', 'abc');
        const add = (i: number) =>
          store.update(
            [`own:${i % 5}`],
            ([own]) => {
              if (i % 9 === 4) throw new Error('refused');
              return {
                writes: [
                  { op: 'set', key: `own:${i % 5}`, value: ((own as number | undefined) ?? 0) + 1 },
                  { op: 'set', key: `item:${drawn(0)}`, value: { i, n: drawn(0) } },
                  // fails in the commit, after the draw: it must take the draw back
                  ...(i % 9 === 7 ? [{ op: 'incr' as const, key: 'word', by: 1 }] : []),
                ],
                result: i,
              };
            },
            { draw: ['n'] },
          );
        const settled = await Promise.allSettled(Array.from({ length: 54 }, (_, i) => add(i)));
        const done = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        expect(settled.filter((r) => r.status === 'rejected')).toHaveLength(12);
        const numbers = done.map((d) => d.drawn[0]!);
        expect([...numbers].sort((a, b) => a - b)).toEqual(Array.from({ length: 42 }, (_, i) => i + 1));
        expect(await store.get('n')).toBe(42);
        const items = await store.getMany<{ i: number; n: number }>(numbers.map((n) => `item:${n}`));
        expect(items).toEqual(done.map((d) => ({ i: d.result, n: d.drawn[0] })));
        expect(await store.get('item:43')).toBeUndefined();
      });

      it('a counter listed twice draws two numbers; draws come before the writes; a TTL is kept', async () => {
        await store.set('c', 7, { ttlMs: 400 });
        const got = await store.update(
          [],
          () => ({
            writes: [
              { op: 'incr', key: 'c', by: 10 },
              { op: 'set', key: 'pair', value: [drawn(0), drawn(1), drawn(2)] },
            ],
            result: null,
          }),
          { draw: ['c', 'd', 'c'] },
        );
        expect(got.drawn).toEqual([8, 1, 9]);
        expect(await store.getMany(['c', 'pair'])).toEqual([19, [8, 1, 9]]);
        // an update without writes still draws
        expect(await store.update([], () => ({ writes: [], result: null }), { draw: ['d'] })).toEqual({ result: null, drawn: [2] });
        expect(await store.update([], () => ({ writes: [], result: null }), { draw: [] })).toEqual({ result: null, drawn: [] });
        await waitFor(async () => (await store.get('c')) === undefined, 5000, 'the TTL of c to pass');
      });

      it('a counter that is not an integer, or a placeholder naming no draw, fails the update and writes nothing', async () => {
        await store.set('word', 'abc');
        await store.set('half', 0.5);
        for (const counter of ['word', 'half']) {
          await expect(
            store.update([], () => ({ writes: [{ op: 'set', key: 'before', value: drawn(0) }], result: null }), { draw: ['n', counter] }),
          ).rejects.toThrow(/not an integer/);
        }
        await expect(
          store.update([], () => ({ writes: [{ op: 'set', key: `x:${drawn(1)}`, value: 1 }], result: null }), { draw: ['n'] }),
        ).rejects.toThrow(/drawn\(1\)/);
        await expect(
          store.update([], () => ({ writes: [{ op: 'index', key: 'z', member: 'm', score: `1${drawn(0)}` as never }], result: null }), { draw: ['n'] }),
        ).rejects.toThrow(/score/);
        expect(await store.getMany(['before', 'n', 'word', 'half'])).toEqual([undefined, undefined, 'abc', 0.5]);
        // without draw, a placeholder is plain text
        await store.update([], () => ({ writes: [{ op: 'set', key: `p${drawn(0)}`, value: drawn(0) }], result: null }));
        expect(await store.get(`p${drawn(0)}`)).toBe(drawn(0));
      });
    });

    describe('counters', () => {
      it('incr starts at 0, defaults to 1, accepts negative steps', async () => {
        expect(await store.incr('c')).toBe(1);
        expect(await store.incr('c', 5)).toBe(6);
        expect(await store.incr('c', -10)).toBe(-4);
        expect(await store.get('c')).toBe(-4);
      });

      it('100 concurrent increments give exactly 100', async () => {
        const results = await Promise.all(Array.from({ length: 100 }, () => store.incr('hits')));
        expect(await store.get('hits')).toBe(100);
        expect(new Set(results).size).toBe(100);
      });

      it('counts on from a value written by set or update', async () => {
        await store.set('c', 41);
        expect(await store.incr('c')).toBe(42);
        await store.update(['c'], inc('c'));
        expect(await store.incr('c')).toBe(44);
      });

      it('refuses a value that is not an integer', async () => {
        await store.set('f', 1.5);
        await store.set('s', 'abc');
        await expect(store.incr('f')).rejects.toThrow();
        await expect(store.incr('s')).rejects.toThrow();
        await expect(store.incr('c', 0.5)).rejects.toThrow();
        expect(await store.get('f')).toBe(1.5);
      });

      it('keeps the TTL of the counter', async () => {
        await store.set('rate', 1, { ttlMs: 400 });
        expect(await store.incr('rate')).toBe(2);
        await waitFor(async () => (await store.get('rate')) === undefined, 5000, 'the TTL of rate to pass');
        expect(await store.incr('rate')).toBe(1);
      });
    });

    describe('capped lists', () => {
      it('push returns the length and keeps insertion order', async () => {
        expect(await store.push('l', 'a', 10)).toBe(1);
        expect(await store.push('l', { b: 2 }, 10)).toBe(2);
        expect(await store.push('l', null, 10)).toBe(3);
        expect(await store.range('l')).toEqual(['a', { b: 2 }, null]);
        expect(await store.length('l')).toBe(3);
      });

      it('drops the oldest entries beyond the cap', async () => {
        for (let i = 0; i < 12; i++) expect(await store.push('l', i, 5)).toBe(Math.min(i + 1, 5));
        expect(await store.range('l')).toEqual([7, 8, 9, 10, 11]);
        expect(await store.push('l', 12, 2)).toBe(2);
        expect(await store.range('l')).toEqual([11, 12]);
        expect(await store.length('l')).toBe(2);
      });

      it('range takes inclusive and negative bounds like LRANGE', async () => {
        for (let i = 0; i < 6; i++) await store.push('l', i, 100);
        expect(await store.range('l', 0, -1)).toEqual([0, 1, 2, 3, 4, 5]);
        expect(await store.range('l', 1, 3)).toEqual([1, 2, 3]);
        expect(await store.range('l', -2)).toEqual([4, 5]);
        expect(await store.range('l', -2, -1)).toEqual([4, 5]);
        expect(await store.range('l', -100, 1)).toEqual([0, 1]);
        expect(await store.range('l', 4, 100)).toEqual([4, 5]);
        expect(await store.range('l', 3, 2)).toEqual([]);
        expect(await store.range('l', 6)).toEqual([]);
        expect(await store.range('l', -1, -2)).toEqual([]);
        expect(await store.range('l', 0, 0)).toEqual([0]);
      });

      it('a missing list is empty', async () => {
        expect(await store.range('none')).toEqual([]);
        expect(await store.length('none')).toBe(0);
      });

      it('concurrent pushes keep every entry up to the cap', async () => {
        await Promise.all(Array.from({ length: 40 }, (_, i) => store.push('l', i, 25)));
        expect(await store.length('l')).toBe(25);
        const items = await store.range<number>('l');
        expect(new Set(items).size).toBe(25);
      });

      it('keeps lists, values and odd keys apart', async () => {
        for (const k of ODD_KEYS) await store.push(k, k, 3);
        await store.set('l', 'value');
        await store.push('l', 'entry', 3);
        for (const k of ODD_KEYS) expect(await store.range(k)).toEqual([k]);
        expect(await store.get('l')).toBe('value');
        expect(await store.range('l')).toEqual(['entry']);
        expect(await store.del('l')).toBe(true);
        expect(await store.length('l')).toBe(0);
        expect(await store.del(ODD_KEYS[0]!)).toBe(true);
        expect(await store.range(ODD_KEYS[0]!)).toEqual([]);
      });

      it('rejects a cap below 1', async () => {
        await expect(store.push('l', 1, 0)).rejects.toThrow();
        expect(await store.length('l')).toBe(0);
      });
    });

    describe('ordered indexes', () => {
      it('orders by score, ties by member byte order', async () => {
        const entries: [string, number][] = [
          ['b', 1],
          ['é', 1],
          ['a', 1],
          ['B', 1],
          ['aa', 1],
          ['low', -1.5],
          ['zero', 0],
          ['big', 1e9],
          ['mid', 2.25],
        ];
        for (const [m, s] of entries) await store.index('z', m, s);
        const order = ['low', 'zero', 'B', 'a', 'aa', 'b', 'é', 'mid', 'big'];
        expect((await store.indexRange('z')).map((e) => e.member)).toEqual(order);
        expect((await store.indexRange('z', { reverse: true })).map((e) => e.member)).toEqual([...order].reverse());
        expect((await store.indexRange('z')).map((e) => e.score)).toEqual([-1.5, 0, 1, 1, 1, 1, 1, 2.25, 1e9]);
        expect(await store.indexCount('z')).toBe(9);
      });

      it('min and max are inclusive; offset and limit page the result', async () => {
        for (let i = 0; i < 10; i++) await store.index('z', `m${i}`, i);
        const members = async (o: Parameters<Store['indexRange']>[1]) =>
          (await store.indexRange('z', o)).map((e) => e.member);
        expect(await members({ min: 3, max: 5 })).toEqual(['m3', 'm4', 'm5']);
        expect(await members({ min: 7 })).toEqual(['m7', 'm8', 'm9']);
        expect(await members({ max: 1 })).toEqual(['m0', 'm1']);
        expect(await members({ min: 2.5, max: 3.5 })).toEqual(['m3']);
        expect(await members({ min: 5, max: 3 })).toEqual([]);
        expect(await members({ offset: 2, limit: 3 })).toEqual(['m2', 'm3', 'm4']);
        expect(await members({ limit: 2 })).toEqual(['m0', 'm1']);
        expect(await members({ offset: 8 })).toEqual(['m8', 'm9']);
        expect(await members({ offset: 20 })).toEqual([]);
        expect(await members({ limit: 0 })).toEqual([]);
        expect(await members({ reverse: true, limit: 3 })).toEqual(['m9', 'm8', 'm7']);
        expect(await members({ reverse: true, offset: 1, limit: 2 })).toEqual(['m8', 'm7']);
        expect(await members({ reverse: true, min: 2, max: 4 })).toEqual(['m4', 'm3', 'm2']);
        expect(await members({ reverse: true, min: 2, max: 6, offset: 1, limit: 2 })).toEqual(['m5', 'm4']);
        expect(await members({ min: 3, max: 3 })).toEqual(['m3']);
        expect(await members({ reverse: true, min: 3, max: 3 })).toEqual(['m3']);
      });

      it('bounds keep the ties of the bound scores, forward and reverse', async () => {
        for (const m of ['c', 'a', 'b']) await store.index('z', m, 5);
        await store.index('z', 'below', 4);
        await store.index('z', 'above', 6);
        await store.index('z', '', 5);
        expect((await store.indexRange('z', { min: 5, max: 5 })).map((e) => e.member)).toEqual(['', 'a', 'b', 'c']);
        expect((await store.indexRange('z', { min: 5, max: 5, reverse: true })).map((e) => e.member)).toEqual([
          'c',
          'b',
          'a',
          '',
        ]);
      });

      it('re-indexing moves a member; unindex removes it', async () => {
        await store.index('z', 'x', 5);
        await store.index('z', 'y', 3);
        await store.index('z', 'x', 1);
        await store.index('z', 'x', 1);
        expect(await store.indexRange('z')).toEqual([
          { member: 'x', score: 1 },
          { member: 'y', score: 3 },
        ]);
        expect(await store.indexCount('z')).toBe(2);
        expect(await store.indexScore('z', 'x')).toBe(1);
        expect(await store.unindex('z', 'x')).toBe(true);
        expect(await store.unindex('z', 'x')).toBe(false);
        expect(await store.indexScore('z', 'x')).toBeUndefined();
        expect(await store.indexCount('z')).toBe(1);
        expect(await store.unindex('z', 'y')).toBe(true);
        expect(await store.indexCount('z')).toBe(0);
        expect(await store.indexRange('z')).toEqual([]);
      });

      it('a missing index is empty', async () => {
        expect(await store.indexRange('none')).toEqual([]);
        expect(await store.indexCount('none')).toBe(0);
        expect(await store.indexScore('none', 'm')).toBeUndefined();
        expect(await store.unindex('none', 'm')).toBe(false);
      });

      it('scores keep full double precision', async () => {
        const scores = [0.1 + 0.2, -1e-300, 2 ** 53 - 1, -(2 ** 53) + 1, 1.7976931348623157e308, 5e-324];
        for (const [i, s] of scores.entries()) await store.index('z', `m${i}`, s);
        for (const [i, s] of scores.entries()) expect(await store.indexScore('z', `m${i}`)).toBe(s);
        const sorted = [...scores].sort((a, b) => a - b);
        expect((await store.indexRange('z')).map((e) => e.score)).toEqual(sorted);
      });

      it('keeps indexes of neighbouring and odd keys apart, members with odd bytes too', async () => {
        await store.index('id', 'a', 1);
        await store.index('idx', 'b', 1);
        await store.index('idx2', 'c', 1);
        for (const k of ODD_KEYS) await store.index(k, `m\u0000${k}`, 2);
        expect(await store.indexRange('idx')).toEqual([{ member: 'b', score: 1 }]);
        expect(await store.indexRange('id')).toEqual([{ member: 'a', score: 1 }]);
        for (const k of ODD_KEYS) {
          expect(await store.indexRange(k)).toEqual([{ member: `m\u0000${k}`, score: 2 }]);
          expect(await store.indexScore(k, `m\u0000${k}`)).toBe(2);
        }
      });

      it('rejects a score that is not finite', async () => {
        await expect(store.index('z', 'm', Number.NaN)).rejects.toThrow();
        await expect(store.index('z', 'm', Number.POSITIVE_INFINITY)).rejects.toThrow();
        expect(await store.indexCount('z')).toBe(0);
      });
    });

    describe('pub/sub', () => {
      it('delivers messages published after subscribing', async () => {
        const got: string[] = [];
        await store.publish('ch', 'before');
        const unsub = await store.subscribe('ch', (m) => got.push(m));
        await store.publish('ch', 'hello ✓');
        await store.publish('other', 'not for us');
        await store.publish('ch', 'second');
        await waitFor(() => got.length >= 2, 3000, 'two messages');
        expect(got).toEqual(['hello ✓', 'second']);
        await unsub();
      });

      it('delivers to every handler; unsubscribe stops only that one', async () => {
        const a: string[] = [];
        const b: string[] = [];
        const unsubA = await store.subscribe('ch', (m) => a.push(m));
        const unsubB = await store.subscribe('ch', (m) => b.push(m));
        await store.publish('ch', 'one');
        await waitFor(() => a.length === 1 && b.length === 1, 3000, 'both handlers');
        await unsubA();
        await unsubA();
        await store.publish('ch', 'two');
        await waitFor(() => b.length === 2, 3000, 'second message');
        expect(a).toEqual(['one']);
        expect(b).toEqual(['one', 'two']);
        await unsubB();
      });

      it('stops delivery after the last unsubscribe and resumes on a new subscribe', async () => {
        const first: string[] = [];
        const unsub = await store.subscribe('ch', (m) => first.push(m));
        await unsub();
        await store.publish('ch', 'lost');
        const second: string[] = [];
        const unsub2 = await store.subscribe('ch', (m) => second.push(m));
        await store.publish('ch', 'found');
        await waitFor(() => second.length === 1, 3000, 'resubscribed message');
        expect(second).toEqual(['found']);
        expect(first).toEqual([]);
        await unsub2();
      });

      it('a throwing handler does not stop the others', async () => {
        const got: string[] = [];
        await store.subscribe('ch', () => {
          throw new Error('bad handler');
        });
        await store.subscribe('ch', (m) => got.push(m));
        await store.publish('ch', 'm1');
        await store.publish('ch', 'm2');
        await waitFor(() => got.length === 2, 3000, 'messages past a faulty handler');
        expect(got).toEqual(['m1', 'm2']);
      });
    });

    describe('lifecycle', () => {
      it('ping resolves', async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it('close waits for pending writes, then refuses work', async () => {
        const pending = [store.set('k', 1), store.incr('c'), store.push('l', 1, 5), store.index('z', 'm', 1)];
        await store.close();
        await expect(Promise.all(pending)).resolves.toEqual([true, 1, 1, undefined]);
        await expect(store.get('k')).rejects.toThrow();
        await expect(store.set('k', 2)).rejects.toThrow();
        await store.close();
      });
    });
  });
}

/**
 * The partition rule, the same on every adapter (src/store/partition.ts): `open` returns a fresh
 * store with the partition check on (STORE_PARTITION_CHECK=1).
 */
export function partitionContract(name: string, open: () => Promise<Store>, cleanup?: () => Promise<void>): void {
  describe(`Store partitions: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });
    if (cleanup) afterAll(cleanup);

    it('an update inside one aggregate commits: its keys, its partition-local keys, its channel', async () => {
      const acct = 'auth:account:ann';
      const index = partitionKeyFor('auth:accounts', acct);
      const channel = partitionKeyFor('bus', acct);
      const got: string[] = [];
      const off = await store.subscribe(channel, (m) => got.push(m));
      const r = await store.update([acct, `${acct}:tokens`], ([a]) => ({
        writes: [
          { op: 'set', key: acct, value: { n: 1 } },
          { op: 'index', key: `${acct}:tokens`, member: 't1', score: 5 },
          { op: 'index', key: index, member: 'ann', score: 1 },
          { op: 'publish', key: channel, message: 'created' },
        ],
        result: a,
      }));
      expect(r).toBeUndefined();
      expect(await store.get(acct)).toEqual({ n: 1 });
      expect(await store.indexRange(index)).toEqual([{ member: 'ann', score: 1 }]);
      await waitFor(() => got.length === 1, 3000, 'the message published by the update');
      expect(got).toEqual(['created']);
      await off();
    });

    it('refuses an update spanning aggregates, whatever the keys are read, drawn from or written, and writes nothing', async () => {
      const cases: [string[], Write[], string[] | undefined][] = [
        [['auth:account:ann', 'auth:account:bob'], [], undefined],
        [['auth:account:ann'], [{ op: 'index', key: 'auth:accounts', member: 'ann', score: 1 }], undefined],
        [['auth:account:ann'], [{ op: 'set', key: 'auth:account:ann', value: 1 }], ['pay:receipt:head']],
        [[], [{ op: 'set', key: 'a:b:c', value: 1 }, { op: 'incr', key: 'a:b:d', by: 1 }], undefined],
      ];
      for (const [keys, writes, draw] of cases) {
        const run = () => (draw ? store.update(keys, () => ({ writes, result: null }), { draw }) : store.update(keys, () => ({ writes, result: null })));
        await expect(run()).rejects.toThrow(PartitionError);
        await expect(run()).rejects.toThrow(/spans (aggregates|partitions)/);
      }
      expect(await store.get('auth:account:ann')).toBeUndefined();
      expect(await store.get('a:b:c')).toBeUndefined();
      expect(await store.get('pay:receipt:head')).toBeUndefined();
    });

    it('refuses a partition-local key of another partition and a channel of another partition', async () => {
      const acct = 'auth:account:ann';
      const other = (PARTITIONS + partitionOf(acct) + 1) % PARTITIONS;
      await expect(
        store.update([acct], () => ({ writes: [{ op: 'index', key: partitionKey('auth:accounts', other), member: 'ann', score: 1 }], result: null })),
      ).rejects.toThrow(/spans partitions/);
      await expect(store.update([acct], () => ({ writes: [{ op: 'publish', key: partitionKey('bus', other), message: 'x' }], result: null }))).rejects.toThrow(
        /spans partitions/,
      );
      expect(await store.indexCount(partitionKey('auth:accounts', other))).toBe(0);
    });

    it('a drawn number may follow the aggregate in a key, not name it', async () => {
      const got = await store.update([], () => ({ writes: [{ op: 'set', key: `reward:work:w1:${drawn(0)}`, value: drawn(0) }], result: null }), {
        draw: ['reward:work:w1:seq'],
      });
      expect(got.drawn).toEqual([1]);
      expect(await store.get('reward:work:w1:1')).toBe(1);
      await expect(
        store.update([], () => ({ writes: [{ op: 'set', key: `reward:work:${drawn(0)}`, value: 1 }], result: null }), { draw: ['reward:work:seq'] }),
      ).rejects.toThrow(/drawn number falls in its aggregate/);
    });

    it('an explicit {tag} joins keys to one aggregate', async () => {
      await store.update(['pay:{ledger}:acct:a', 'pay:{ledger}:acct:b'], () => ({
        writes: [
          { op: 'set', key: 'pay:{ledger}:acct:a', value: 1 },
          { op: 'set', key: 'pay:{ledger}:acct:b', value: 2 },
        ],
        result: null,
      }));
      expect(await store.getMany(['pay:{ledger}:acct:a', 'pay:{ledger}:acct:b'])).toEqual([1, 2]);
    });
  });
}
