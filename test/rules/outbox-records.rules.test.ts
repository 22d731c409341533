import { describe, expect, it, vi } from 'vitest';

// The durable outbox's records (src/outbox/records.ts): the store keys; an item is checked (an id
// of 1 to 512 characters, a destination, a finite creation time) and enqueued by three writes, due
// at once; its stored form keeps only the fields that are set and is read back strictly; the
// backoff before retry n is min·2^(n-1) capped at max, with "equal jitter" in [base/2, base],
// clamped to [min, max]; an error becomes at most 500 characters, with its name unless a plain
// Error; a peer that is not configured has a deliverer that says why. Loaded afresh per test.
const load = async () => {
  vi.resetModules();
  return import('../../src/outbox/records.js');
};
const item = { id: 'i1', dest: 'mail', payload: { a: 1 }, createdAt: 1_000 };

describe('keys', () => {
  it('name the record, the due, created and held indexes and the counters', async () => {
    const m = await load();
    expect([m.outboxKey('x'), m.OUTBOX_DUE, m.OUTBOX_CREATED, m.outboxHeldKey('peer'), m.STAT_DELIVERED, m.STAT_FAILED]).toEqual([
      'outbox:msg:x', 'outbox:due', 'outbox:created', 'outbox:held:peer', 'outbox:stat:delivered', 'outbox:stat:failed',
    ]);
  });
});

describe('enqueuing', () => {
  it('writes the record with no attempt, due at creation, and its two index entries', async () => {
    const { outboxWrites } = await load();
    expect(outboxWrites(item)).toStrictEqual([
      { op: 'set', key: 'outbox:msg:i1', value: { id: 'i1', dest: 'mail', payload: { a: 1 }, createdAt: 1_000, attempts: 0, due: 1_000 } },
      { op: 'index', key: 'outbox:due', member: 'i1', score: 1_000 },
      { op: 'index', key: 'outbox:created', member: 'i1', score: 1_000 },
    ]);
  });

  it('checks the id, the destination and the creation time', async () => {
    const { outboxWrites } = await load();
    const idError = new TypeError('outbox item id must be a non-empty string (at most 512 characters)');
    expect(() => outboxWrites({ ...item, id: '' })).toThrow(idError);
    expect(() => outboxWrites({ ...item, id: 'x'.repeat(513) })).toThrow(idError);
    expect(() => outboxWrites({ ...item, id: 7 as unknown as string })).toThrow(idError);
    expect(outboxWrites({ ...item, id: 'x'.repeat(512) })).toHaveLength(3);
    expect(outboxWrites({ ...item, id: 'x' })).toHaveLength(3);
    expect(() => outboxWrites({ ...item, dest: '' })).toThrow(new TypeError('outbox item needs a dest'));
    expect(() => outboxWrites({ ...item, dest: undefined as unknown as string })).toThrow(new TypeError('outbox item needs a dest'));
    for (const createdAt of [Number.NaN, Infinity, '1' as unknown as number]) {
      expect(() => outboxWrites({ ...item, createdAt })).toThrow(new TypeError('outbox item createdAt must be a number'));
    }
    expect(outboxWrites({ ...item, createdAt: 0 })[1]).toEqual({ op: 'index', key: 'outbox:due', member: 'i1', score: 0 });
  });

  it('only when nothing is stored under the id, when asked to keep the first copy', async () => {
    const { outboxWrites, outboxWritesIfAbsent } = await load();
    expect(outboxWritesIfAbsent(item, undefined)).toEqual(outboxWrites(item));
    expect(outboxWritesIfAbsent(item, null)).toEqual([]);
    expect(outboxWritesIfAbsent(item, { id: 'i1' })).toEqual([]);
    expect(() => outboxWritesIfAbsent({ ...item, id: '' }, undefined)).toThrow(TypeError);
  });
});

describe('the stored form', () => {
  const full = { ...item, attempts: 2, due: 5_000, lastAttemptAt: 4_000, lastError: 'timeout', lastDelayMs: 800, claim: 'c-1' };

  it('keeps the optional fields that are set, zeros and empty texts too, and no others', async () => {
    const { recordJson } = await load();
    expect(recordJson(full)).toStrictEqual(full);
    expect(recordJson({ ...full, lastAttemptAt: 0, lastError: '', lastDelayMs: 0, claim: '' })).toStrictEqual({ ...full, lastAttemptAt: 0, lastError: '', lastDelayMs: 0, claim: '' });
    const bare = recordJson({ ...item, attempts: 0, due: 1 });
    expect(Object.keys(bare as object)).toEqual(['id', 'dest', 'payload', 'createdAt', 'attempts', 'due']);
  });

  it('is read back as it was written', async () => {
    const { recordJson, parseRecord } = await load();
    expect(parseRecord(recordJson(full))).toStrictEqual(full);
    expect(parseRecord(recordJson({ ...item, attempts: 0, due: 1 }))).toStrictEqual({ ...item, attempts: 0, due: 1 });
  });

  it('is no record unless an object with a string id and dest and numeric times and attempts', async () => {
    const { parseRecord } = await load();
    const ok = { id: 'a', dest: 'd', createdAt: 1, attempts: 0, due: 2 };
    for (const v of [undefined, null, 'x', 3, true, [ok]]) expect(parseRecord(v as never), JSON.stringify(v)).toBeUndefined();
    for (const k of ['id', 'dest', 'createdAt', 'attempts', 'due'] as const) {
      expect(parseRecord({ ...ok, [k]: undefined } as never), `no ${k}`).toBeUndefined();
      expect(parseRecord({ ...ok, [k]: k === 'id' || k === 'dest' ? 1 : '1' }), `mistyped ${k}`).toBeUndefined();
    }
    expect(parseRecord(ok)).toStrictEqual({ ...ok, payload: null });
  });

  it('drops optional fields of the wrong type', async () => {
    const { parseRecord } = await load();
    const ok = { id: 'a', dest: 'd', payload: 1, createdAt: 1, attempts: 0, due: 2 };
    expect(parseRecord({ ...ok, lastAttemptAt: '1', lastError: 5, lastDelayMs: '2', claim: 9 })).toStrictEqual(ok);
    expect(parseRecord({ ...ok, payload: null })).toStrictEqual({ ...ok, payload: null });
  });
});

describe('the backoff', () => {
  it('doubles from the minimum per failure, with equal jitter in [base/2, base]', async () => {
    const { backoffDelay } = await load();
    const at = (attempt: number, r: number) => backoffDelay(attempt, 100, 100_000, () => r);
    expect([at(1, 0), at(1, 0.5), at(1, 1)]).toEqual([100, 100, 100]);
    expect([at(2, 0), at(2, 0.5), at(2, 1)]).toEqual([100, 150, 200]);
    expect([at(3, 0), at(3, 0.5), at(3, 1)]).toEqual([200, 300, 400]);
    expect([at(5, 0), at(5, 1)]).toEqual([800, 1_600]);
  });

  it('is capped at the maximum, and never below the minimum', async () => {
    const { backoffDelay } = await load();
    expect(backoffDelay(20, 100, 1_000, () => 1)).toBe(1_000);
    expect(backoffDelay(20, 100, 1_000, () => 0)).toBe(500);
    expect(backoffDelay(4, 100, 1_000, () => 1)).toBe(800);
    expect(backoffDelay(5, 100, 1_000, () => 1)).toBe(1_000);
    // a maximum below the minimum: the minimum
    expect(backoffDelay(3, 500, 100, () => 1)).toBe(500);
    expect(backoffDelay(3, 500, 100, () => 0)).toBe(500);
    // attempt 0 or less counts as the first
    expect(backoffDelay(0, 100, 1_000, () => 1)).toBe(100);
    expect(backoffDelay(-3, 100, 1_000, () => 1)).toBe(100);
  });

  it('is rounded to whole milliseconds', async () => {
    const { backoffDelay } = await load();
    expect(backoffDelay(2, 10, 1_000, () => 0.05)).toBe(11); // 10.5
    expect(backoffDelay(2, 10, 1_000, () => 0.03)).toBe(10); // 10.3
    expect(backoffDelay(3, 10, 1_000, () => 0.37)).toBe(27); // 27.4
  });

  it('uses Math.random by default, within the range', async () => {
    const { backoffDelay } = await load();
    const spy = vi.spyOn(Math, 'random').mockReturnValue(0.25);
    try {
      expect(backoffDelay(3, 100, 10_000)).toBe(250);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('errors as recorded', () => {
  it('are the message of a plain Error, the name and message of another, the text of anything else', async () => {
    const { errorText } = await load();
    expect(errorText(new Error('refused'))).toBe('refused');
    expect(errorText(new TypeError('bad'))).toBe('TypeError: bad');
    class PeerError extends Error {
      override name = 'PeerError';
    }
    expect(errorText(new PeerError('503'))).toBe('PeerError: 503');
    expect(errorText('plain')).toBe('plain');
    expect(errorText(42)).toBe('42');
    expect(errorText(undefined)).toBe('undefined');
  });

  it('are at most 500 characters', async () => {
    const { errorText } = await load();
    expect(errorText(new Error('x'.repeat(600)))).toBe('x'.repeat(500));
    expect(errorText('y'.repeat(500))).toBe('y'.repeat(500));
    expect(errorText(new RangeError('z'.repeat(600)))).toBe(`RangeError: ${'z'.repeat(488)}`);
  });
});

describe('a peer that is not configured', () => {
  it('has a deliverer that says why, and rejects when called', async () => {
    const { notConfigured } = await load();
    const d = notConfigured('PEER_URL is not set');
    expect(d.held).toBe('PEER_URL is not set');
    await expect(d(item, new AbortController().signal)).rejects.toThrow(new Error('PEER_URL is not set'));
    const own = new RangeError('own');
    await expect(notConfigured('r', () => own)(item, new AbortController().signal)).rejects.toBe(own);
  });
});
