import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Outbox, type OutboxOptions } from '../../src/outbox/outbox.js';
import { legacyPartition, outboxCreatedKey, outboxDueKey, outboxHeldKey as heldKeyOf, outboxKey as keyOf, outboxWrites, parseRecord, STAT_DELIVERED, STAT_FAILED, type Deliver, type OutboxItem } from '../../src/outbox/records.js';
import { partitionOf } from '../../src/store/partition.js';

// the items live in the partition of the business key they are written beside
const NEAR = 'test:thing:1';
const P = partitionOf(NEAR);
const OUTBOX_DUE = outboxDueKey(P);
const OUTBOX_CREATED = outboxCreatedKey(P);
const outboxKey = (id: string) => keyOf(id, P);
const outboxHeldKey = (dest: string) => heldKeyOf(dest, P);
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { until } from '../support/wait.js';

// The outbox's delivery loop (src/outbox/outbox.ts, docs/outbox in records.ts): a claim moves an
// item's due time to the end of a lease and stamps a token; success deletes it and counts it; a
// failure reschedules it with backoff and says why; the options' defaults and bounds (lease 30 s,
// attempt time-out 80 % of the lease, concurrency 8, retry bounds); stale, unreadable and
// not-yet-due records; held destinations; stats and the pending list. Real LMDB store, the
// instants from a manual clock, the loop on short real timers; every wait is on a condition.

const T0 = 1_700_000_000_000;
const stores: Store[] = [];
const outboxes: Outbox[] = [];
afterEach(async () => {
  while (outboxes.length) await outboxes.pop()!.stop();
});
afterAll(() => Promise.all(stores.map((s) => s.close())));

/** A deliverer that waits for `open()`, or for the attempt's abort. */
function gated() {
  const calls: OutboxItem[] = [];
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const deliver: Deliver = (item, signal) => {
    calls.push(item);
    return new Promise<void>((resolve, reject) => {
      void gate.then(resolve);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  };
  return { calls, deliver, open: () => open() };
}

async function setup(deliver: Record<string, Deliver>, extra: Partial<OutboxOptions> = {}) {
  const inner = await openLmdbStore({ path: tempDir('outbox-rules') });
  stores.push(inner);
  const store = inner;
  const clock = new ManualClock(T0);
  const logs: { level: string; msg: string; obj: unknown }[] = [];
  const logger = {
    warn: (obj: unknown, msg: string) => void logs.push({ level: 'warn', obj, msg }),
    error: (obj: unknown, msg: string) => void logs.push({ level: 'error', obj, msg }),
    debug: (obj: unknown, msg: string) => void logs.push({ level: 'debug', obj, msg }),
  };
  const outbox = new Outbox({ store, clock, deliver, retryMinMs: 100, retryMaxMs: 1000, pollMs: 5, random: () => 0.5, logger: logger as never, ...extra });
  outboxes.push(outbox);
  // counts the loop's scans (its private pass, one per tick)
  let scans = 0;
  const o = outbox as unknown as { pass: () => Promise<number> };
  const pass = o.pass.bind(outbox);
  o.pass = () => {
    scans += 1;
    return pass();
  };
  const enqueue = (...items: OutboxItem[]) => inner.update([], () => ({ writes: items.flatMap((i) => outboxWrites(i, NEAR)), result: undefined }));
  const rec = async (id: string) => parseRecord(await inner.get(outboxKey(id)));
  const score = async (key: string, id: string) => (await inner.indexRange(key, {})).find((e) => e.member === id)?.score;
  /** Waits until the loop has scanned `n` more times. */
  const moreScans = async (n = 3) => {
    const target = scans + n;
    await until('more scans', () => scans >= target, 10_000, 2);
  };
  return { store: inner, clock, outbox, logs, enqueue, rec, score, moreScans, scans: () => scans };
}

const HELD_WARN = 'outbox keeps the deliveries for a peer that is not configured; they go out once it is (said once)';
const item = (id: string, dest = 'mail', createdAt = T0): OutboxItem => ({ id, dest, payload: { id }, createdAt });
/** An item enqueued straight into the held index of its destination (as another process keeps it). */
const heldWrites = (id: string) => [
  ...outboxWrites(item(id), NEAR).filter((w) => !(w.op === 'index' && w.key === OUTBOX_DUE)),
  { op: 'index' as const, key: outboxHeldKey('mail'), member: id, score: T0 },
];

describe('a claim', () => {
  it('counts an attempt, stamps its time and a token, and moves the item to the end of the lease', async () => {
    const g = gated();
    const { outbox, enqueue, rec, score, clock } = await setup({ mail: g.deliver }, { leaseMs: 5000 });
    await enqueue(item('a'));
    outbox.start();
    await until('called', () => g.calls.length === 1);
    expect(g.calls[0]).toEqual({ id: 'a', dest: 'mail', payload: { id: 'a' }, createdAt: T0 });
    const r = await rec('a');
    expect(r).toMatchObject({ attempts: 1, lastAttemptAt: T0, due: T0 + 5000 });
    expect(r?.claim).toMatch(/^[0-9a-f-]{36}$/);
    expect(await score(OUTBOX_DUE, 'a')).toBe(T0 + 5000);
    expect(outbox.inFlight).toBe(1);
    // in flight while the lease runs, no longer once it has run out
    expect(await outbox.pending()).toEqual([{ id: 'a', dest: 'mail', payload: { id: 'a' }, createdAt: T0, attempts: 1, due: T0 + 5000, lastAttemptAt: T0, partition: P, inFlight: true }]);
    clock.advance(4999);
    expect((await outbox.pending())[0]?.inFlight).toBe(true);
    clock.advance(1);
    expect((await outbox.pending())[0]?.inFlight).toBe(false);
  });

  it('holds for 30 s by default and at least 10 ms', async () => {
    const g = gated();
    const { outbox, enqueue, rec } = await setup({ mail: g.deliver });
    await enqueue(item('a'));
    outbox.start();
    await until('called', () => g.calls.length === 1);
    expect((await rec('a'))?.due).toBe(T0 + 30_000);

    // a lease of 3 ms is 10: its attempt times out after 80 % of 10
    const h = gated();
    const short = await setup({ mail: h.deliver }, { leaseMs: 3 });
    await short.enqueue(item('b'));
    short.outbox.start();
    await until('timed out', async () => (await short.rec('b'))?.lastError);
    expect((await short.rec('b'))?.lastError).toBe('delivery took longer than 8 ms');
  });

  it('is not taken of an item whose due time is still ahead, even when the index says due', async () => {
    const g = gated();
    const { outbox, store, rec, moreScans, logs } = await setup({ mail: g.deliver });
    await store.update([], () => ({
      writes: [
        { op: 'set', key: outboxKey('later'), value: { id: 'later', dest: 'mail', payload: null, createdAt: T0, attempts: 0, due: T0 + 1 } },
        { op: 'index', key: OUTBOX_DUE, member: 'later', score: T0 },
        { op: 'index', key: OUTBOX_CREATED, member: 'later', score: T0 },
      ],
      result: undefined,
    }));
    outbox.start();
    await moreScans();
    expect(g.calls).toHaveLength(0);
    expect((await rec('later'))?.attempts).toBe(0);
    // passing it over is no failure of the scan
    expect(logs.filter((l) => l.level !== 'debug')).toEqual([]);
  });
});

describe('settling an attempt', () => {
  it('a delivery deletes the record and its index entries and counts it', async () => {
    const { outbox, enqueue, store, logs } = await setup({ mail: async () => undefined }, { concurrency: 1 });
    await enqueue(item('a', 'mail', T0 - 1), item('b'));
    await store.update([], () => ({ writes: [{ op: 'index', key: outboxHeldKey('mail'), member: 'a', score: T0 }], result: undefined }));
    outbox.start();
    await until('delivered and said', async () => (await store.get(STAT_DELIVERED)) === 2 && logs.filter((l) => l.msg === 'outbox delivered').length === 2);
    expect(await store.get(outboxKey('a'))).toBeUndefined();
    expect(await store.indexRange(OUTBOX_DUE, {})).toEqual([]);
    expect(await store.indexRange(OUTBOX_CREATED, {})).toEqual([]);
    expect(await store.indexRange(outboxHeldKey('mail'), {})).toEqual([]);
    expect(await outbox.stats()).toEqual({ pending: 0, held: 0, delivered: 2, failedAttempts: 0 });
    expect(logs.filter((l) => l.msg === 'outbox delivered').map((l) => l.obj)).toEqual([
      { id: 'a', dest: 'mail', attempts: 1, deleted: true },
      { id: 'b', dest: 'mail', attempts: 1, deleted: true },
    ]);
  });

  it('a failure reschedules with backoff, says why, and counts the attempt', async () => {
    let n = 0;
    const { outbox, enqueue, rec, score, clock, store, logs } = await setup({
      mail: async () => {
        n += 1;
        throw new TypeError(`boom ${n}`);
      },
    });
    await enqueue(item('a'));
    outbox.start();
    await until('failed once', () => logs.some((l) => l.msg === 'outbox delivery failed'));
    // attempt 1: base 100, jitter 0.5 -> 75, at least retryMinMs = 100
    expect(await rec('a')).toEqual({ id: 'a', dest: 'mail', payload: { id: 'a' }, createdAt: T0, attempts: 1, due: T0 + 100, lastAttemptAt: T0, lastError: 'TypeError: boom 1', lastDelayMs: 100 });
    expect(await score(OUTBOX_DUE, 'a')).toBe(T0 + 100);
    expect(await store.get(STAT_FAILED)).toBe(1);
    expect(logs.find((l) => l.msg === 'outbox delivery failed')?.obj).toEqual({ id: 'a', dest: 'mail', attempts: 1, retryInMs: 100, error: 'TypeError: boom 1' });
    clock.advance(100);
    await until('failed twice', async () => (await store.get(STAT_FAILED)) === 2);
    // attempt 2: base 200 -> 100 + 0.5 x 100
    expect(await rec('a')).toMatchObject({ attempts: 2, due: T0 + 100 + 150, lastAttemptAt: T0 + 100, lastError: 'TypeError: boom 2', lastDelayMs: 150 });
    expect(await outbox.stats()).toEqual({ pending: 1, held: 0, delivered: 0, failedAttempts: 2, oldestPendingAt: T0 });
  });

  it('the retry bounds: retryMinMs at least 1, retryMaxMs at least retryMinMs', async () => {
    const fail = async () => {
      throw new Error('no');
    };
    const tiny = await setup({ mail: fail }, { retryMinMs: 0, retryMaxMs: 0 });
    await tiny.enqueue(item('a'));
    tiny.outbox.start();
    await until('failed', async () => (await tiny.rec('a'))?.lastError === 'no');
    expect((await tiny.rec('a'))?.lastDelayMs).toBe(1);

    // an unreadable record is parked at the longest backoff: here retryMinMs, as retryMaxMs is below it
    const low = await setup({ mail: fail }, { retryMinMs: 300, retryMaxMs: 10 });
    await low.store.update([], () => ({ writes: [{ op: 'set', key: outboxKey('bad'), value: 'garbage' }, { op: 'index', key: OUTBOX_DUE, member: 'bad', score: T0 }], result: undefined }));
    low.outbox.start();
    await until('parked', async () => (await low.score(OUTBOX_DUE, 'bad')) !== T0);
    expect(await low.score(OUTBOX_DUE, 'bad')).toBe(T0 + 300);
  });

  it('an unreadable record is parked at retryMaxMs, never attempted', async () => {
    const g = gated();
    const { outbox, store, score, moreScans } = await setup({ mail: g.deliver });
    await store.update([], () => ({ writes: [{ op: 'set', key: outboxKey('bad'), value: [1, 2] }, { op: 'index', key: OUTBOX_DUE, member: 'bad', score: T0 }], result: undefined }));
    outbox.start();
    await until('parked', async () => (await score(OUTBOX_DUE, 'bad')) !== T0);
    expect(await score(OUTBOX_DUE, 'bad')).toBe(T0 + 1000);
    await moreScans();
    expect(g.calls).toHaveLength(0);
    expect(await store.get(outboxKey('bad'))).toEqual([1, 2]);
  });

  it('an index entry without a record is removed from both indexes', async () => {
    const { outbox, store } = await setup({ mail: async () => undefined });
    await store.update([], () => ({
      writes: [
        { op: 'index', key: OUTBOX_DUE, member: 'ghost', score: T0 },
        { op: 'index', key: OUTBOX_CREATED, member: 'ghost', score: T0 },
      ],
      result: undefined,
    }));
    outbox.start();
    await until('cleaned', async () => (await store.indexRange(OUTBOX_DUE, {})).length === 0);
    expect(await store.indexRange(OUTBOX_CREATED, {})).toEqual([]);
  });

  it('a destination without a deliverer fails the attempt, saying so', async () => {
    const { outbox, enqueue, rec } = await setup({ mail: async () => undefined });
    await enqueue(item('x', 'nowhere'));
    outbox.start();
    await until('failed', async () => (await rec('x'))?.lastError !== undefined);
    expect(await rec('x')).toMatchObject({ attempts: 1, lastError: 'no deliverer for dest "nowhere"' });
  });
});

describe('the attempt time-out', () => {
  const timedOut = async (extra: Partial<OutboxOptions>) => {
    const g = gated();
    const { outbox, enqueue, rec } = await setup({ mail: g.deliver }, extra);
    await enqueue(item('a'));
    outbox.start();
    await until('timed out', async () => (await rec('a'))?.lastError, 10_000);
    return (await rec('a'))!.lastError;
  };

  it('is 80 % of the lease by default', async () => {
    expect(await timedOut({ leaseMs: 50 })).toBe('delivery took longer than 40 ms');
  });

  it('is the one given, at most the lease and at least 1 ms', async () => {
    expect(await timedOut({ leaseMs: 60, attemptTimeoutMs: 20 })).toBe('delivery took longer than 20 ms');
    expect(await timedOut({ leaseMs: 60, attemptTimeoutMs: 5000 })).toBe('delivery took longer than 60 ms');
    expect(await timedOut({ leaseMs: 60, attemptTimeoutMs: 0 })).toBe('delivery took longer than 1 ms');
  });
});

describe('concurrency', () => {
  const inFlightOf = async (extra: Partial<OutboxOptions>, expected: number) => {
    const g = gated();
    const { outbox, enqueue, moreScans } = await setup({ mail: g.deliver }, extra);
    await enqueue(...Array.from({ length: 12 }, (_, i) => item(`i${String(i).padStart(2, '0')}`, 'mail', T0 - 20 + i)));
    outbox.start();
    await until('in flight', () => g.calls.length >= expected);
    await moreScans(5);
    expect(g.calls).toHaveLength(expected);
    expect(outbox.inFlight).toBe(expected);
    // the oldest first
    expect(g.calls.map((c) => c.id)).toEqual(Array.from({ length: expected }, (_, i) => `i${String(i).padStart(2, '0')}`));
    g.open();
    await until('all delivered', async () => (await outbox.stats()).delivered === 12);
    expect(g.calls).toHaveLength(12);
  };

  it('is 8 deliveries at once by default', () => inFlightOf({}, 8));
  it('is the one given, at least 1', async () => {
    await inFlightOf({ concurrency: 3 }, 3);
    await inFlightOf({ concurrency: 0 }, 1);
  });
});

describe('stopping', () => {
  it('aborts an attempt still in flight after the grace and reschedules it', async () => {
    const g = gated();
    const { outbox, enqueue, rec, clock } = await setup({ mail: g.deliver }, { stopGraceMs: 0 });
    await enqueue(item('a'));
    outbox.start();
    await until('called', () => g.calls.length === 1);
    clock.advance(7);
    await outbox.stop();
    expect(outbox.inFlight).toBe(0);
    expect(await rec('a')).toEqual({ id: 'a', dest: 'mail', payload: { id: 'a' }, createdAt: T0, attempts: 1, due: T0 + 7 + 100, lastAttemptAt: T0, lastError: 'outbox stopping', lastDelayMs: 100 });
  });

  it('lets an attempt finish within the grace (1 s by default)', async () => {
    const g = gated();
    const { outbox, enqueue, store } = await setup({ mail: g.deliver });
    await enqueue(item('a'));
    outbox.start();
    await until('called', () => g.calls.length === 1);
    const stopped = outbox.stop();
    await until('still in flight', () => outbox.inFlight === 1);
    g.open();
    await stopped;
    expect(await store.get(outboxKey('a'))).toBeUndefined();
    expect(await store.get(STAT_DELIVERED)).toBe(1);
  });

  it('a stopped outbox takes nothing more; a kick does not start it', async () => {
    const g = gated();
    const { outbox, enqueue } = await setup({ mail: g.deliver });
    outbox.kick();
    await enqueue(item('a'));
    outbox.start();
    await until('called', () => g.calls.length === 1);
    g.open();
    await outbox.stop();
    await enqueue(item('b'));
    outbox.kick();
    expect(await outbox.stats()).toMatchObject({ pending: 1, delivered: 1 });
    outbox.start();
    await until('b delivered', async () => (await outbox.stats()).delivered === 2);
  });
});

describe('a restart', () => {
  it('takes back held items at once', async () => {
    const { outbox, store, moreScans } = await setup({ mail: async () => undefined });
    outbox.start();
    await moreScans(1);
    await outbox.stop();
    await store.update([], () => ({ writes: heldWrites('h'), result: undefined }));
    outbox.start();
    await until('delivered', async () => (await store.get(STAT_DELIVERED)) === 1);
  });
});

describe('kick', () => {
  it('does nothing before start', async () => {
    const { outbox, enqueue, scans } = await setup({ mail: async () => undefined });
    await enqueue(item('a'));
    outbox.kick();
    // a scan the kick scheduled (at 0 ms) would have begun before this later timer fires
    await new Promise((r) => setTimeout(r, 20));
    expect(scans()).toBe(0);
  });

  it('scans at once instead of waiting for the poll', async () => {
    const { outbox, enqueue, moreScans, store } = await setup({ mail: async () => undefined }, { pollMs: 3_600_000 });
    outbox.start();
    await moreScans(1);
    // the first scan is over: the loop now sleeps for the poll
    await until('idle', () => (outbox as unknown as { running?: Promise<void> }).running === undefined);
    await enqueue(item('a'));
    outbox.kick();
    await until('delivered', async () => (await store.get(STAT_DELIVERED)) === 1);
  });
});

describe('held items', () => {
  it('of a destination not configured are moved to its held index without an attempt', async () => {
    const { outbox, enqueue, store, moreScans, logs } = await setup({ mail: async () => undefined, peer: Object.assign(async () => undefined, { held: 'PEER_URL is not set' }) });
    await enqueue(item('p1', 'peer', T0 - 5), item('m1', 'mail'));
    outbox.start();
    await until('held and delivered', async () => (await store.indexRange(outboxHeldKey('peer'), {})).length === 1 && (await store.get(STAT_DELIVERED)) === 1);
    await moreScans();
    expect(await store.indexRange(outboxHeldKey('peer'), {})).toEqual([{ member: 'p1', score: T0 - 5 }]);
    expect(parseRecord(await store.get(outboxKey('p1')))?.attempts).toBe(0);
    expect(await outbox.stats()).toEqual({ pending: 1, held: 1, delivered: 1, failedAttempts: 0, oldestPendingAt: T0 - 5 });
    expect(await outbox.holding()).toEqual([{ dest: 'peer', reason: 'PEER_URL is not set', items: 1 }]);
    expect(await outbox.readiness()).toMatch(/peer/);
    // said once, when the item was kept
    expect(logs.filter((l) => l.msg === HELD_WARN)).toHaveLength(1);
  });

  it('are taken back at start, then every releaseEveryMs of the clock', async () => {
    const { outbox, enqueue, store, clock, moreScans } = await setup({ mail: async () => undefined }, { releaseEveryMs: 1000 });
    const hold = (id: string) => store.update([], () => ({ writes: heldWrites(id), result: undefined }));
    await hold('h1');
    outbox.start();
    await until('h1 delivered', async () => (await store.get(STAT_DELIVERED)) === 1);
    await hold('h2');
    clock.advance(999);
    await moreScans();
    expect(await store.get(STAT_DELIVERED)).toBe(1);
    clock.advance(1);
    await until('h2 delivered', async () => (await store.get(STAT_DELIVERED)) === 2);
  });

  it('are taken back every 30 s of the clock by default', async () => {
    const { outbox, enqueue, store, clock, moreScans } = await setup({ mail: async () => undefined });
    outbox.start();
    await moreScans(1);
    await store.update([], () => ({ writes: heldWrites('h'), result: undefined }));
    clock.advance(29_999);
    await moreScans();
    expect(await store.get(STAT_DELIVERED)).toBeUndefined();
    clock.advance(1);
    await until('delivered', async () => (await store.get(STAT_DELIVERED)) === 1);
  });
});

describe('deliverers added later', () => {
  it('deliver their destination; one destination has one deliverer; none once started', async () => {
    const got: string[] = [];
    const { outbox, enqueue, store } = await setup({ mail: async () => undefined });
    outbox.addDeliverers({ late: async (it) => void got.push(it.id) });
    expect(() => outbox.addDeliverers({ mail: async () => undefined })).toThrow('destination "mail" already has a deliverer');
    await enqueue(item('l1', 'late'));
    outbox.start();
    await until('delivered', async () => (await store.get(STAT_DELIVERED)) === 1);
    expect(got).toEqual(['l1']);
    expect(() => outbox.addDeliverers({ other: async () => undefined })).toThrow('deliverers are added before the outbox starts');
  });
});

describe('stats and the pending list', () => {
  it('count nothing in an empty store', async () => {
    const { outbox } = await setup({});
    expect(await outbox.stats()).toEqual({ pending: 0, held: 0, delivered: 0, failedAttempts: 0 });
    expect(await outbox.pending()).toEqual([]);
  });

  it('list the oldest first, of one destination when asked, at most `limit`, over several pages', async () => {
    const { outbox, enqueue } = await setup({});
    await enqueue(...Array.from({ length: 130 }, (_, i) => item(`a${i}`, 'a', T0 + i)));
    await enqueue(item('b0', 'b', T0 + 500), item('b1', 'b', T0 + 501), item('b2', 'b', T0 + 502));
    const ids = async (dest?: string, limit?: number) => (await outbox.pending(dest, limit)).map((p) => p.id);
    expect(await ids(undefined, 3)).toEqual(['a0', 'a1', 'a2']);
    expect(await ids()).toHaveLength(100);
    expect(await ids(undefined, 200)).toHaveLength(133);
    expect(await ids('b')).toEqual(['b0', 'b1', 'b2']);
    expect(await ids('b', 2)).toEqual(['b0', 'b1']);
    expect(await ids('a', 120)).toEqual(Array.from({ length: 120 }, (_, i) => `a${i}`));
    expect(await ids('c')).toEqual([]);
    expect((await outbox.pending('b', 1))[0]).toEqual({ id: 'b0', dest: 'b', payload: { id: 'b0' }, createdAt: T0 + 500, attempts: 0, due: T0 + 500, partition: P, inFlight: false });
    expect(await outbox.stats()).toEqual({ pending: 133, held: 0, delivered: 0, failedAttempts: 0, oldestPendingAt: T0 });
  });

  it('skip an unreadable record', async () => {
    const { outbox, enqueue, store } = await setup({});
    await enqueue(item('a', 'mail', T0), item('c', 'mail', T0 + 2));
    await store.update([], () => ({ writes: [{ op: 'set', key: outboxKey('b'), value: 'garbage' }, { op: 'index', key: OUTBOX_CREATED, member: 'b', score: T0 + 1 }], result: undefined }));
    expect((await outbox.pending()).map((p) => p.id)).toEqual(['a', 'c']);
  });
});

describe('the loop', () => {
  it('says at start what it keeps from before, with nothing due', async () => {
    const peer = Object.assign(async () => undefined, { held: 'PEER_URL is not set' });
    const { outbox, store, logs } = await setup({ peer });
    await store.update([], () => ({ writes: [{ op: 'index', key: outboxHeldKey('peer'), member: 'p1', score: T0 }], result: undefined }));
    outbox.start();
    await until('said', () => logs.some((l) => l.msg === HELD_WARN));
  });

  it('a second start changes nothing: held items still wait for the release interval', async () => {
    const { outbox, store, moreScans } = await setup({ mail: async () => undefined });
    outbox.start();
    await moreScans(1);
    await store.update([], () => ({ writes: heldWrites('h'), result: undefined }));
    outbox.start();
    await moreScans();
    expect(await store.get(STAT_DELIVERED)).toBeUndefined();
    expect(await store.indexRange(outboxHeldKey('mail'), {})).toEqual([{ member: 'h', score: T0 }]);
  });

  it('a settled delivery looks for the next item at once, without waiting for the poll', async () => {
    const g = gated();
    const { outbox, enqueue, store } = await setup({ mail: g.deliver }, { concurrency: 1, pollMs: 3_600_000 });
    await enqueue(item('a', 'mail', T0 - 1), item('b'));
    outbox.start();
    await until('a called', () => g.calls.length === 1);
    await until('idle', () => (outbox as unknown as { running?: Promise<void> }).running === undefined);
    g.open();
    await until('both delivered', async () => (await store.get(STAT_DELIVERED)) === 2);
    expect(g.calls.map((c) => c.id)).toEqual(['a', 'b']);
  });

  it('takes a due item beside deliveries in flight whose lease ran out', async () => {
    const g = gated();
    const { outbox, enqueue, clock } = await setup({ mail: g.deliver }, { concurrency: 3, leaseMs: 60_000 });
    await enqueue(item('a'), item('b'));
    outbox.start();
    await until('a and b called', () => g.calls.length === 2);
    // a and b are due again (their lease ran out) and come first in the due index; c is due after them
    clock.advance(60_000);
    await enqueue(item('c', 'mail', T0 + 60_000));
    await until('c called', () => g.calls.length === 3);
    expect(g.calls.map((c) => c.id)).toEqual(['a', 'b', 'c']);
  });

  it('starts no more than the free slots when more items are due than that', async () => {
    const g = gated();
    const { outbox, enqueue, moreScans } = await setup({ mail: g.deliver }, { concurrency: 3 });
    await enqueue(item('a'), item('b'));
    outbox.start();
    await until('a and b called', () => g.calls.length === 2);
    // one slot free; the scan reads up to 1 + 2 due entries
    await enqueue(item('c', 'mail', T0 - 3), item('d', 'mail', T0 - 2), item('e', 'mail', T0 - 1));
    await until('c called', () => g.calls.length >= 3);
    await moreScans();
    expect(g.calls.map((c) => c.id)).toEqual(['a', 'b', 'c']);
    expect(outbox.inFlight).toBe(3);
  });

  it('an item enqueued again while in flight: the delivery of the old copy is not counted, the new copy is delivered', async () => {
    const g = gated();
    const { outbox, enqueue, store, logs } = await setup({ mail: g.deliver });
    await enqueue(item('a'));
    outbox.start();
    await until('called', () => g.calls.length === 1);
    await enqueue(item('a'));
    g.open();
    await until('delivered again', async () => g.calls.length === 2 && (await store.get(outboxKey('a'))) === undefined && outbox.inFlight === 0);
    await until('counted', async () => (await store.get(STAT_DELIVERED)) === 1);
    await outbox.stop();
    expect(await store.get(STAT_DELIVERED)).toBe(1);
    // the old copy's settlement found the claim gone and wrote nothing: neither a failure nor a bookkeeping error
    expect(logs.filter((l) => l.level !== 'debug')).toEqual([]);
    expect(logs.filter((l) => l.msg === 'outbox delivered').map((l) => (l.obj as { deleted: boolean }).deleted)).toEqual([false, true]);
  });

  it('an item enqueued again while its attempt fails: the failure is neither counted nor written on the new copy', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const calls: string[] = [];
    const { outbox, enqueue, store, rec, logs } = await setup({
      mail: async (it) => {
        calls.push(it.id);
        if (calls.length === 1) {
          await gate;
          throw new Error('late failure');
        }
        await new Promise<void>(() => undefined); // the new copy's attempt stays in flight
      },
    });
    await enqueue(item('a'));
    outbox.start();
    await until('called', () => calls.length === 1);
    await enqueue(item('a'));
    release();
    // the new copy is taken once the first attempt has settled
    await until('new copy in flight', () => calls.length === 2);
    expect(await store.get(STAT_FAILED)).toBeUndefined();
    expect(await rec('a')).toMatchObject({ attempts: 1 });
    expect((await rec('a'))?.lastError).toBeUndefined();
    expect(logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});

describe('the partitions and the global layout', () => {
  // an LMDB store written with the global layout (outboxWrites without `near`, as before the
  // partitions), then opened again with the partition check on, as an upgraded hub would
  async function legacy(items: OutboxItem[], garbage: string[] = []) {
    const path = tempDir('outbox-legacy');
    const old = await openLmdbStore({ path, partitionCheck: false });
    await old.update([], () => ({
      writes: [
        ...items.flatMap((i) => outboxWrites(i)),
        ...garbage.flatMap((id) => [
          { op: 'set' as const, key: keyOf(id), value: 'garbage' },
          { op: 'index' as const, key: 'outbox:due', member: id, score: T0 },
          { op: 'index' as const, key: 'outbox:created', member: id, score: T0 },
        ]),
      ],
      result: undefined,
    }));
    await old.close();
    const store = await openLmdbStore({ path, partitionCheck: true });
    stores.push(store);
    return store;
  }
  const outboxOn = (store: Store, deliver: Record<string, Deliver>) => {
    const outbox = new Outbox({ store, clock: new ManualClock(T0), deliver, retryMinMs: 100, retryMaxMs: 1000, pollMs: 5, random: () => 0.5 });
    outboxes.push(outbox);
    return outbox;
  };

  it('an item lives in the partition of the key it is written beside; the check refuses it beside another aggregate', async () => {
    const store = await openLmdbStore({ path: tempDir('outbox-near'), partitionCheck: true });
    stores.push(store);
    await store.update([NEAR], () => ({ writes: [{ op: 'set', key: NEAR, value: 1 }, ...outboxWrites(item('a'), NEAR)], result: undefined }));
    expect(parseRecord(await store.get(keyOf('a', P)))).toMatchObject({ id: 'a', dest: 'mail' });
    expect(await store.indexRange(`outbox:due:{#${P}}`)).toEqual([{ member: 'a', score: T0 }]);
    expect(await store.indexRange(`outbox:created:{#${P}}`)).toEqual([{ member: 'a', score: T0 }]);
    const other = ['test:thing:2', 'test:thing:3', 'test:thing:4'].find((k) => partitionOf(k) !== P)!;
    await expect(store.update([NEAR], () => ({ writes: [{ op: 'set', key: NEAR, value: 2 }, ...outboxWrites(item('b'), other)], result: undefined }))).rejects.toThrow(/spans/);
    await expect(store.update([], () => ({ writes: outboxWrites(item('b')), result: undefined }))).rejects.toThrow(/spans aggregates/);
  });

  it('delivers items of several partitions, walked as one', async () => {
    const store = await openLmdbStore({ path: tempDir('outbox-parts'), partitionCheck: true });
    stores.push(store);
    const nears = Array.from({ length: 20 }, (_, i) => `test:thing:${i}`);
    expect(new Set(nears.map(partitionOf)).size).toBeGreaterThan(5);
    for (const [i, near] of nears.entries()) await store.update([], () => ({ writes: outboxWrites(item(`m${i}`, 'mail', T0 - 20 + i), near), result: undefined }));
    const got: string[] = [];
    const outbox = outboxOn(store, { mail: async (it) => void got.push(it.id) });
    expect((await outbox.pending()).map((p) => p.id)).toEqual(nears.map((_, i) => `m${i}`));
    expect((await outbox.stats()).pending).toBe(20);
    outbox.start();
    // the counter is raised right after each delete: wait for it too
    await until('delivered', async () => (await outbox.stats()).pending === 0 && got.length === 20 && (await store.get(STAT_DELIVERED)) === 20);
    expect(got.sort()).toEqual(nears.map((_, i) => `m${i}`).sort());
  });

  it('items of the global layout are listed, moved into their partition and delivered once, with the check on', async () => {
    const store = await legacy([item('old-1', 'mail', T0 - 2), item('old-2', 'mail', T0 - 1)]);
    await store.update([NEAR], () => ({ writes: [{ op: 'set', key: NEAR, value: 1 }, ...outboxWrites(item('new', 'mail', T0), NEAR)], result: undefined }));
    const got: string[] = [];
    const outbox = outboxOn(store, { mail: async (it) => void got.push(it.id) });
    const listed = await outbox.pending();
    expect(listed.map((p) => [p.id, p.partition])).toEqual([['old-1', undefined], ['old-2', undefined], ['new', P]]);
    expect((await outbox.stats()).pending).toBe(3);
    outbox.start();
    await until('delivered', async () => got.length === 3 && (await outbox.stats()).pending === 0);
    expect(got.sort()).toEqual(['new', 'old-1', 'old-2']);
    for (const key of ['outbox:due', 'outbox:created']) expect(await store.indexCount(key)).toBe(0);
    expect(await store.get(keyOf('old-1'))).toBeUndefined();
    expect(await store.get(keyOf('old-1', legacyPartition('old-1')))).toBeUndefined();
  });

  it('an unreadable record of the global layout is moved and parked; a retry finds an item of either layout', async () => {
    const store = await legacy([item('old', 'peer', T0)], ['bad']);
    const peer = Object.assign(async () => undefined, { held: 'PEER_URL is not set' });
    const outbox = outboxOn(store, { peer });
    outbox.start();
    await until('moved', async () => (await store.indexCount('outbox:due')) === 0);
    const q = legacyPartition('bad');
    expect(await store.get(keyOf('bad', q))).toBe('garbage');
    expect((await store.indexRange(`outbox:due:{#${q}}`)).find((e) => e.member === 'bad')?.score).toBe(T0 + 1000);
    await until('held', async () => (await outbox.held('peer')).length === 1);
    const r = await outbox.retryNow('old');
    expect(r).toMatchObject({ id: 'old', partition: legacyPartition('old'), due: T0, inFlight: false });
    await expect(outbox.retryNow('nothing')).rejects.toMatchObject({ code: 'unknown_delivery' });
  });

  it('a retry of an item still in the global layout moves it first', async () => {
    const store = await legacy([item('old', 'mail', T0 - 5)]);
    const outbox = outboxOn(store, { mail: async () => undefined });
    const r = await outbox.retryNow('old');
    expect(r).toMatchObject({ id: 'old', partition: legacyPartition('old'), due: T0 });
    expect(await store.get(keyOf('old'))).toBeUndefined();
    expect(await store.indexCount('outbox:created')).toBe(0);
    expect(await store.indexRange(`outbox:due:{#${legacyPartition('old')}}`)).toEqual([{ member: 'old', score: T0 }]);
  });
});
