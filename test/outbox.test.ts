import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../src/clock.js';
import { backoffDelay, Outbox, outboxKey, outboxWrites, outboxWritesIfAbsent, type Deliver, type OutboxItem, type OutboxOptions } from '../src/outbox.js';
import { startTaskLedgerStandin } from '../src/peers/task-ledger-standin.js';
import { startValueStandin, type Standin, type ValueStandinState } from '../src/peers/value-standin.js';
import { rewardPeerDeliverers, ValueServiceClient } from '../src/reward/peers.js';
import { openLmdbStore } from '../src/store/lmdb.js';
import { partitionOf, type Json, type Store } from '../src/store/port.js';
import { openRedisStore } from '../src/store/redis.js';
import { startMaru } from '../src/app.js';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { AUTH_TEST_ENV, bearer, login, TEST_ADMIN_PASSWORD } from './support/auth.js';
import { call, until } from './support/http.js';
import { tempDir } from './support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from './support/redis.js';
import { sleep } from './support/wait.js';

const redis = await redisOrSkip();

// ------------------------------------------------------------------------------------------------
// Fixtures: two store kinds, real stand-in peers, real clients.

interface StoreKind {
  name: string;
  /** Opens a store; calling it again within one test gives another handle on the same data. */
  open: () => Promise<Store>;
  /** Starts a fresh namespace (a new LMDB directory or a new Redis prefix). */
  fresh: () => void;
  skip: boolean;
}

const tempDirs: string[] = [];
afterAll(() => {
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
});

const lmdbKind = (): StoreKind => {
  let dir = '';
  let shared: Store | undefined;
  return {
    name: 'lmdb',
    skip: false,
    fresh() {
      dir = mkdtempSync(join(tmpdir(), 'maru-outbox-'));
      tempDirs.push(dir);
      shared = undefined;
    },
    // One LMDB environment per process: further handles share it (two Outbox instances on one store).
    async open() {
      shared ??= await openLmdbStore({ path: join(dir, 'store') });
      return shared;
    },
  };
};

const redisPrefixes: string[] = [];
afterAll(async () => {
  for (const p of redisPrefixes) await deletePrefix(redis.url, p);
});

const redisKind = (): StoreKind => {
  let prefix = '';
  return {
    name: 'redis',
    skip: !redis.available,
    fresh() {
      prefix = uniquePrefix('outbox');
      redisPrefixes.push(prefix);
    },
    // Each call is another connection on the same prefix: what a second hub process would hold.
    open: () => openRedisStore({ url: redis.url, prefix }),
  };
};

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()!();
    } catch {
      // best effort
    }
  }
});



let seq = 0;
function item(dest: string, amount: number, extra: Record<string, Json> = {}): OutboxItem {
  seq += 1;
  return { id: `it-${process.pid}-${seq}`, dest, payload: { amount, ...extra }, createdAt: Date.now() };
}

/** The partition of the state key the items are enqueued beside. */
const STATE_P = partitionOf('test:state');

/** Enqueues items in one atomic update together with a state change, as a service does. */
async function enqueue(store: Store, items: OutboxItem[], stateKey = 'test:state'): Promise<void> {
  await store.update([stateKey], ([cur]) => {
    const n = typeof cur === 'number' ? cur : 0;
    return { writes: [{ op: 'set', key: stateKey, value: n + items.length }, ...items.flatMap((i) => outboxWrites(i, stateKey))], result: undefined };
  });
}

function makeOutbox(store: Store, deliver: Record<string, Deliver>, extra: Partial<OutboxOptions> = {}): Outbox {
  const outbox = new Outbox({ store, clock: systemClock, deliver, retryMinMs: 40, retryMaxMs: 400, pollMs: 50, ...extra });
  cleanups.push(() => outbox.stop());
  return outbox;
}

async function valueStandin(opts: { port?: number; delayMs?: number; state?: ValueStandinState } = {}): Promise<Standin<ValueStandinState>> {
  const s = await startValueStandin({ port: 0, ...opts });
  cleanups.push(() => s.close());
  return s;
}

/** A real pino logger whose lines (parsed) land in `lines`. */
function capture(level: string): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

// ------------------------------------------------------------------------------------------------

describe('outboxWrites and backoff (pure)', () => {
  it('writes the record and both index entries; refuses malformed items', () => {
    const it1: OutboxItem = { id: 'a', dest: 'value', payload: { amount: 1 }, createdAt: 1000 };
    expect(outboxWrites(it1)).toEqual([
      { op: 'set', key: outboxKey('a'), value: { id: 'a', dest: 'value', payload: { amount: 1 }, createdAt: 1000, attempts: 0, due: 1000 } },
      { op: 'index', key: 'outbox:due', member: 'a', score: 1000 },
      { op: 'index', key: 'outbox:created', member: 'a', score: 1000 },
    ]);
    expect(outboxWritesIfAbsent(it1, { some: 'record' })).toEqual([]);
    expect(outboxWritesIfAbsent(it1, undefined)).toHaveLength(3);
    expect(() => outboxWrites({ ...it1, id: '' })).toThrow();
    expect(() => outboxWrites({ ...it1, dest: '' })).toThrow();
  });

  it('backoff grows from retryMin, never shrinks, and stays within [min, max]', () => {
    for (const r of [0, 0.5, 0.999]) {
      let prev = 0;
      for (let attempt = 1; attempt <= 40; attempt++) {
        const d = backoffDelay(attempt, 100, 10_000, () => r);
        expect(d).toBeGreaterThanOrEqual(Math.max(prev, 100));
        expect(d).toBeLessThanOrEqual(10_000);
        prev = d;
      }
      expect(backoffDelay(1, 100, 10_000, () => r)).toBe(100);
      expect(backoffDelay(40, 100, 10_000, () => r)).toBeGreaterThanOrEqual(5000);
    }
    // Jitter spreads retries of the same attempt.
    const spread = new Set(Array.from({ length: 50 }, () => backoffDelay(5, 100, 10_000)));
    expect(spread.size).toBeGreaterThan(10);
  });
});

describe('deliverers added by a service built after the outbox', () => {
  it('delivers to an added destination, refuses a second deliverer for one, and refuses any once started', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'maru-outbox-add-'));
    const store = await openLmdbStore({ path: join(dir, 'store') });
    cleanups.push(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const given: Record<string, Deliver> = {};
    const outbox = makeOutbox(store, given);
    const got: string[] = [];
    outbox.addDeliverers({ later: async (it) => void got.push(it.id) });
    // the map the outbox was built with is its own: adding does not change the caller's object
    expect(Object.keys(given)).toEqual([]);
    expect(() => outbox.addDeliverers({ later: async () => undefined })).toThrow('destination "later" already has a deliverer');
    const one = item('later', 1);
    await enqueue(store, [one], 'test:added');
    outbox.start();
    await until('delivery to the added destination', async () => got.length === 1);
    expect(got).toEqual([one.id]);
    expect(() => outbox.addDeliverers({ other: async () => undefined })).toThrow('deliverers are added before the outbox starts');
  });
});

for (const kind of [lmdbKind(), redisKind()]) {
  describe.skipIf(kind.skip)(`Outbox on ${kind.name}`, () => {
    it('delivers items enqueued inside store.update to real stand-ins, once each', async () => {
      kind.fresh();
      const store = await kind.open();
      cleanups.push(() => store.close());
      const value = await valueStandin();
      const ledger = await startTaskLedgerStandin({ port: 0 });
      cleanups.push(() => ledger.close());
      const deliver = rewardPeerDeliverers({
        VALUE_SERVICE_URL: value.url,
        TASK_LEDGER_URL: `tcp://127.0.0.1:${ledger.port}`,
        PEER_TIMEOUT_MS: 2000,
      });
      const items = [item('value', 800), item('value', 400), item('task-ledger', 0, { task: 'work_unit', member: 'm_1' })];
      await enqueue(store, items);
      // A failing update enqueues nothing: the item lands with the state change or not at all.
      await expect(
        store.update(['test:state'], () => {
          outboxWrites(item('value', 1_000_000));
          throw new Error('rule refused');
        }),
      ).rejects.toThrow('rule refused');

      const outbox = makeOutbox(store, deliver);
      expect(await outbox.stats()).toMatchObject({ pending: 3, delivered: 0, oldestPendingAt: items[0]!.createdAt });
      expect((await outbox.pending('value')).map((p) => p.id)).toEqual([items[0]!.id, items[1]!.id]);
      outbox.start();
      // The counter follows the atomic delete, so wait for it rather than for pending === 0.
      await until('delivery', async () => (await outbox.stats()).delivered === 3);
      expect(value.state.inflowTotal).toBe(1200);
      expect([...value.state.byKey.keys()].sort()).toEqual([items[0]!.id, items[1]!.id].sort());
      expect(ledger.state.byKey.get(items[2]!.id)?.entry).toMatchObject({ id: items[2]!.id, task: 'work_unit', member: 'm_1' });
      const stats = await outbox.stats();
      expect(stats).toMatchObject({ pending: 0, delivered: 3, failedAttempts: 0 });
      expect(stats.oldestPendingAt).toBeUndefined();
      expect(await store.get(outboxKey(items[0]!.id, STATE_P))).toBeUndefined();
      expect(await store.get('test:state')).toBe(3);

      // kick() delivers right after an enqueue, without waiting for the poll.
      const slowPoll = makeOutbox(store, deliver, { pollMs: 60_000 });
      await outbox.stop();
      slowPoll.start();
      await sleep(50);
      const late = item('value', 5);
      await enqueue(store, [late]);
      // The poll is a minute away and the wait below ends after 15 s: only the kick can deliver it.
      slowPoll.kick();
      await until('kicked delivery', () => value.state.byKey.has(late.id), 15_000);
    });

    it('a dead peer leaves items pending with attempts and growing backoff; when it returns each id lands once', async () => {
      kind.fresh();
      const store = await kind.open();
      cleanups.push(() => store.close());
      // The peer works at first, then goes away (closed), then comes back on the same port.
      const first = await valueStandin();
      const port = first.port;
      const client = new ValueServiceClient({ url: `http://127.0.0.1:${port}`, timeoutMs: 500 });
      const real = rewardPeerDeliverers({ VALUE_SERVICE_URL: client.baseUrl, TASK_LEDGER_URL: undefined, PEER_TIMEOUT_MS: 500 }, { value: client });
      // Instrumentation around the real deliverer: when each attempt starts and which backoff preceded it.
      const attempts = new Map<string, Array<{ at: number; prevDelay?: number }>>();
      const deliver: Record<string, Deliver> = {
        value: async (it, signal) => {
          const rec = (await store.get(outboxKey(it.id, STATE_P))) as { lastDelayMs?: number } | undefined;
          const list = attempts.get(it.id) ?? [];
          list.push({ at: Date.now(), prevDelay: rec?.lastDelayMs });
          attempts.set(it.id, list);
          return real.value!(it, signal);
        },
      };
      const outbox = makeOutbox(store, deliver, { retryMinMs: 30, retryMaxMs: 600 });
      outbox.start();
      const early = item('value', 1000);
      await enqueue(store, [early]);
      outbox.kick();
      await until('the first delivery', async () => (await outbox.stats()).delivered === 1);
      await first.close();
      attempts.clear();

      const items = [item('value', 100), item('value', 20), item('value', 3)];
      await enqueue(store, items);
      outbox.kick();
      await until('five attempts each', () => items.every((i) => (attempts.get(i.id)?.length ?? 0) >= 5), 15_000);

      const pending = await outbox.pending();
      expect(pending.map((p) => p.id).sort()).toEqual(items.map((i) => i.id).sort());
      for (const p of pending) {
        expect(p.attempts).toBeGreaterThanOrEqual(5);
        expect(p.lastError).toMatch(/unreachable/);
      }
      const stats = await outbox.stats();
      expect(stats.pending).toBe(3);
      expect(stats.delivered).toBe(1);
      // Five attempts started per item; all but the last one of each have settled as failures.
      expect(stats.failedAttempts).toBeGreaterThanOrEqual(12);
      expect(stats.oldestPendingAt).toBe(items[0]!.createdAt);
      for (const i of items) {
        const list = attempts.get(i.id)!;
        const delays = list.slice(1).map((a) => a.prevDelay!);
        // Backoff recorded before each retry never shrinks, and grows past the minimum.
        for (let k = 1; k < delays.length; k++) expect(delays[k]).toBeGreaterThanOrEqual(delays[k - 1]!);
        expect(delays[0]).toBe(30);
        expect(delays.at(-1)!).toBeGreaterThan(delays[0]!);
        // Each retry waited at least its backoff.
        for (let k = 1; k < list.length; k++) expect(list[k]!.at - list[k - 1]!.at).toBeGreaterThanOrEqual(list[k]!.prevDelay! - 5);
      }

      // The peer comes back on the same port (with its totals kept across the restart).
      const value = await valueStandin({ port, state: first.state });
      await until('delivery after recovery', async () => (await outbox.stats()).delivered === 4, 15_000);
      expect((await outbox.stats()).pending).toBe(0);
      expect(value.state.inflowTotal).toBe(1123);
      expect(value.state.inflowCount).toBe(4);
      expect(value.state.calls).toBe(4);
      expect(value.state.byKey.size).toBe(4);
    });

    it('a slow peer times out without blocking deliveries to others; the retry is deduplicated by the peer', async () => {
      kind.fresh();
      const store = await kind.open();
      cleanups.push(() => store.close());
      const slow = await valueStandin({ delayMs: 1500 });
      const ledger = await startTaskLedgerStandin({ port: 0 });
      cleanups.push(() => ledger.close());
      const deliver = rewardPeerDeliverers({
        VALUE_SERVICE_URL: slow.url,
        TASK_LEDGER_URL: `tcp://127.0.0.1:${ledger.port}`,
        PEER_TIMEOUT_MS: 150,
      });
      const outbox = makeOutbox(store, deliver, { retryMinMs: 50, retryMaxMs: 200 });
      outbox.start();
      const slowItem = item('value', 77);
      await enqueue(store, [slowItem]);
      outbox.kick();
      await until('the slow call to start', () => slow.state.calls > 0);

      // While the value peer hangs, the ledger item goes out and the event loop stays free.
      const fastItem = item('task-ledger', 0, { task: 'content' });
      const t0 = Date.now();
      await enqueue(store, [fastItem]);
      outbox.kick();
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 10);
      await until('the ledger delivery', () => ledger.state.byKey.has(fastItem.id), 5000);
      expect(Date.now() - t0).toBeLessThan(1000);
      await until('a timed-out attempt', async () => {
        const [p] = await outbox.pending('value');
        return p !== undefined && p.attempts >= 2 && /did not answer within 150 ms/.test(p.lastError ?? '');
      });
      clearInterval(ticker);
      expect(ticks).toBeGreaterThan(5);
      expect(slow.state.inflowTotal).toBe(77); // the peer did the work; only its answer was late

      slow.knobs.delayMs = 0;
      await until('the slow item delivered', async () => (await outbox.stats()).pending === 0, 10_000);
      expect(slow.state.inflowTotal).toBe(77);
      expect(slow.state.inflowCount).toBe(1);
      expect(slow.state.duplicates).toBeGreaterThanOrEqual(1);
    });

    it('a claim held by another process is respected until its lease expires', async () => {
      kind.fresh();
      const store = await kind.open();
      cleanups.push(() => store.close());
      const value = await valueStandin();
      const it1 = item('value', 9);
      await enqueue(store, [it1]);
      // Another process claimed it and died: the record carries its claim and a lease 1.5 s out, on
      // the outbox's clock, which stands still until the test moves it past the lease.
      const clock = new ManualClock(Date.parse('2026-11-22T09:00:00Z'));
      const leaseEnd = clock.now() + 1500;
      await store.update([outboxKey(it1.id, STATE_P)], ([cur]) => ({
        writes: [
          { op: 'set', key: outboxKey(it1.id, STATE_P), value: { ...(cur as Record<string, Json>), attempts: 1, due: leaseEnd, claim: 'dead-process' } },
          { op: 'index', key: `outbox:due:{#${STATE_P}}`, member: it1.id, score: leaseEnd },
        ],
        result: undefined,
      }));
      const outbox = makeOutbox(store, rewardPeerDeliverers({ VALUE_SERVICE_URL: value.url, TASK_LEDGER_URL: undefined, PEER_TIMEOUT_MS: 1000 }), { clock });
      outbox.start();
      // 1 ms before the lease ends: a later item due now goes out (the outbox polled and delivered),
      // the claimed one does not, however long that took
      clock.advance(1499);
      const marker = { ...item('value', 10), createdAt: clock.now() };
      await enqueue(store, [marker]);
      outbox.kick();
      await until('the later item delivered', () => value.state.byKey.has(marker.id), 5000);
      expect(value.state.byKey.has(it1.id)).toBe(false);
      expect(value.state.calls).toBe(1);
      expect((await outbox.pending()).find((p) => p.id === it1.id)).toMatchObject({ id: it1.id, inFlight: true, attempts: 1 });
      clock.advance(1);
      outbox.kick();
      await until('delivery after the lease', () => value.state.byKey.has(it1.id), 5000);
      expect(clock.now()).toBeGreaterThanOrEqual(leaseEnd);
      await until('deleted', async () => (await outbox.stats()).pending === 0);
      expect(value.state.calls).toBe(2);
    });

    it('two Outbox instances sharing the store deliver each item exactly once, never concurrently', async () => {
      kind.fresh();
      const storeA = await kind.open();
      const storeB = await kind.open();
      cleanups.push(async () => {
        await storeA.close();
        if (storeB !== storeA) await storeB.close();
      });
      const value = await valueStandin({ delayMs: 40 });
      const client = new ValueServiceClient({ url: value.url, timeoutMs: 5000 });
      const real = rewardPeerDeliverers({ VALUE_SERVICE_URL: value.url, TASK_LEDGER_URL: undefined, PEER_TIMEOUT_MS: 5000 }, { value: client });
      const active = new Map<string, number>();
      const deliveries = new Map<string, number>();
      const byInstance = { A: 0, B: 0 };
      let overlap = 0;
      const instrumented =
        (name: 'A' | 'B'): Deliver =>
        async (it, signal) => {
          const now = (active.get(it.id) ?? 0) + 1;
          if (now > 1) overlap += 1;
          active.set(it.id, now);
          deliveries.set(it.id, (deliveries.get(it.id) ?? 0) + 1);
          byInstance[name] += 1;
          try {
            await real.value!(it, signal);
          } finally {
            active.set(it.id, (active.get(it.id) ?? 1) - 1);
          }
        };
      const items = Array.from({ length: 24 }, (_, k) => item('value', k + 1));
      await enqueue(storeA, items.slice(0, 12));
      await enqueue(storeB, items.slice(12));
      const a = makeOutbox(storeA, { value: instrumented('A') }, { concurrency: 3, pollMs: 20 });
      const b = makeOutbox(storeB, { value: instrumented('B') }, { concurrency: 3, pollMs: 20 });
      a.start();
      b.start();
      await until('all delivered', async () => (await a.stats()).pending === 0, 20_000);
      await Promise.all([a.stop(), b.stop()]);

      expect(overlap).toBe(0);
      expect(deliveries.size).toBe(24);
      expect([...deliveries.values()].every((n) => n === 1)).toBe(true);
      expect(byInstance.A).toBeGreaterThan(0);
      expect(byInstance.B).toBeGreaterThan(0);
      expect(byInstance.A + byInstance.B).toBe(24);
      // The peer saw each id once: no duplicate call, and the total is the sum once.
      expect(value.state.calls).toBe(24);
      expect(value.state.duplicates).toBe(0);
      expect(value.state.byKey.size).toBe(24);
      expect(value.state.inflowTotal).toBe((24 * 25) / 2);
      expect(await a.stats()).toMatchObject({ pending: 0, delivered: 24, failedAttempts: 0 });
    });

    it('stop() lets in-flight deliveries finish within the grace, aborts and reschedules the rest', async () => {
      kind.fresh();
      const store = await kind.open();
      cleanups.push(() => store.close());
      const value = await valueStandin({ delayMs: 300 });
      const deliver = rewardPeerDeliverers({ VALUE_SERVICE_URL: value.url, TASK_LEDGER_URL: undefined, PEER_TIMEOUT_MS: 5000 });

      const graceful = makeOutbox(store, deliver, { stopGraceMs: 2000 });
      const first = item('value', 1);
      await enqueue(store, [first]);
      graceful.start();
      await until('in flight', () => graceful.inFlight === 1);
      await graceful.stop();
      expect(graceful.inFlight).toBe(0);
      expect(await graceful.stats()).toMatchObject({ pending: 0, delivered: 1 });

      const hasty = makeOutbox(store, deliver, { stopGraceMs: 20 });
      // The peer holds its answer until it closes (after the test): a stop that waited for the
      // call instead of its grace would hang and fail.
      value.knobs.delayMs = 600_000;
      const second = item('value', 2);
      await enqueue(store, [second]);
      hasty.start();
      await until('in flight', () => hasty.inFlight === 1);
      await hasty.stop();
      const [left] = await hasty.pending();
      expect(left).toMatchObject({ id: second.id, attempts: 1, inFlight: false, lastError: 'outbox stopping' });
      // Restarted (here: a fresh instance), it goes out again; the peer dedupes the repeat.
      value.knobs.delayMs = 0;
      const again = makeOutbox(store, deliver);
      again.start();
      await until('redelivered', async () => (await again.stats()).pending === 0);
      expect(value.state.inflowTotal).toBe(3);
    });

    it('an unknown destination is attempted and backs off with the reason', async () => {
      kind.fresh();
      const store = await kind.open();
      cleanups.push(() => store.close());
      const outbox = makeOutbox(store, {});
      const b = item('mystery', 1);
      await enqueue(store, [b]);
      outbox.start();
      await until('two attempts', async () => (await outbox.pending()).every((p) => p.attempts >= 2));
      const pending = await outbox.pending();
      expect(pending.find((p) => p.id === b.id)?.lastError).toMatch(/no deliverer for dest "mystery"/);
      expect((await outbox.pending('mystery')).map((p) => p.id)).toEqual([b.id]);
      expect(await outbox.stats()).toMatchObject({ pending: 1, held: 0 });
    });

    it('items for an unconfigured peer are kept without attempts, said once, and go out once it is configured', async () => {
      kind.fresh();
      const store = await kind.open();
      cleanups.push(() => store.close());
      const { logger, lines: logged } = capture('info');
      const lines = () => logged.map((l) => ({ msg: String(l.msg), obj: l }));
      const none = rewardPeerDeliverers({ VALUE_SERVICE_URL: undefined, TASK_LEDGER_URL: undefined, PEER_TIMEOUT_MS: 100 });
      const outbox = makeOutbox(store, none, { logger });
      expect(await outbox.readiness()).toBe('ok');
      const first = [item('value', 1), item('value', 2), item('task-ledger', 0)];
      await enqueue(store, first);
      outbox.start();
      await until('held', async () => (await outbox.stats()).held === 3);
      // more work later, and many polls: still no attempt and no second line
      const later = item('value', 4);
      await enqueue(store, [later]);
      outbox.kick();
      await until('held again', async () => (await outbox.stats()).held === 4);
      await sleep(300);
      const pending = await outbox.pending();
      expect(pending.map((p) => p.id).sort()).toEqual([...first, later].map((i) => i.id).sort());
      for (const p of pending) {
        expect(p.attempts).toBe(0);
        expect(p.lastError).toBeUndefined();
      }
      expect(await outbox.stats()).toMatchObject({ pending: 4, held: 4, delivered: 0, failedAttempts: 0 });
      expect(lines().map((l) => l.msg)).toEqual([
        expect.stringMatching(/not configured/),
        expect.stringMatching(/not configured/),
      ]);
      expect(lines().map((l) => l.obj.dest).sort()).toEqual(['task-ledger', 'value']);
      expect(lines().find((l) => l.obj.dest === 'value')?.obj.reason).toBe('peer not configured: value service (set VALUE_SERVICE_URL)');
      expect(await outbox.readiness()).toBe(
        'holding 4 deliveries: value 3 (peer not configured: value service (set VALUE_SERVICE_URL)); ' +
          'task-ledger 1 (peer not configured: task ledger (set TASK_LEDGER_URL))',
      );
      await outbox.stop();

      // A restart with the value peer configured takes its items back and delivers each once;
      // the task ledger's stays held.
      const value = await valueStandin();
      const restarted = makeOutbox(store, rewardPeerDeliverers({ VALUE_SERVICE_URL: value.url, TASK_LEDGER_URL: undefined, PEER_TIMEOUT_MS: 2000 }));
      restarted.start();
      await until('delivered', async () => (await restarted.stats()).delivered === 3);
      expect(value.state.inflowTotal).toBe(7);
      expect(value.state.calls).toBe(3);
      expect(await restarted.stats()).toMatchObject({ pending: 1, held: 1, failedAttempts: 0 });
      expect(await restarted.readiness()).toMatch(/^holding 1 delivery: task-ledger 1 /);
    });

    it('re-enqueuing a pending id replaces it: one message, one delivery', async () => {
      kind.fresh();
      const store = await kind.open();
      cleanups.push(() => store.close());
      const value = await valueStandin();
      const it1 = item('value', 10);
      await enqueue(store, [it1]);
      await enqueue(store, [{ ...it1, payload: { amount: 10, note: 'again' } }]);
      // The read-set variant keeps the first copy.
      await store.update([outboxKey(it1.id, STATE_P)], ([cur]) => ({ writes: outboxWritesIfAbsent({ ...it1, payload: { amount: 99 } }, cur, 'test:state'), result: undefined }));
      const outbox = makeOutbox(store, rewardPeerDeliverers({ VALUE_SERVICE_URL: value.url, TASK_LEDGER_URL: undefined, PEER_TIMEOUT_MS: 1000 }));
      expect((await outbox.stats()).pending).toBe(1);
      outbox.start();
      await until('delivered', async () => (await outbox.stats()).pending === 0);
      expect(value.state.calls).toBe(1);
      expect(value.state.inflowTotal).toBe(10);
    });
  });
}

describe('a hub with no peers configured', () => {
  it('keeps the reward deliveries, logs it once per peer, and shows it at /readyz', async () => {
    const { logger, lines } = capture('info');
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('outbox-held'), LOG_LEVEL: 'info', ...AUTH_TEST_ENV });
    const maru = await startMaru(config, { logger, clock: new ManualClock(Date.parse('2026-11-21T12:00:00+09:00')) });
    cleanups.push(async () => { await maru.stop(); });
    const base = maru.url;
    const op = bearer(await login(base, 'admin', TEST_ADMIN_PASSWORD));
    expect((await call(base, 'GET', '/readyz')).body).toMatchObject({ status: 'ready', checks: { store: 'ok', outbox: 'ok' } });

    const zone = (await call(base, 'POST', '/culture', { country: 'KR', lang: 'ko', name: 'Outbox' }, op)).body.id as string;
    const member = (await call(base, 'POST', '/api/reward/members', { name: '보류', zone }, op)).body.id as string;
    for (let i = 0; i < 3; i++) expect((await call(base, 'GET', `/work?id=${member}&kc=1&v=100`)).status).toBe(200);
    await until('held', async () => (await call(base, 'GET', '/api/reward/outbox', undefined, op)).body.stats.held === 6);
    await new Promise((r) => setTimeout(r, 1500)); // more polls: still no retry and no new line

    const outbox = (await call(base, 'GET', '/api/reward/outbox', undefined, op)).body;
    expect(outbox.stats).toMatchObject({ pending: 6, held: 6, delivered: 0, failedAttempts: 0 });
    expect(outbox.pending.every((p: { attempts: number }) => p.attempts === 0)).toBe(true);
    const said = lines.filter((l) => l.part === 'outbox' && Number(l.level) >= 40);
    expect(said.map((l) => l.dest).sort()).toEqual(['task-ledger', 'value']);
    expect(said.every((l) => /not configured/.test(String(l.msg)))).toBe(true);

    const ready = await call(base, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.outbox).toBe(
      'holding 6 deliveries: value 3 (peer not configured: value service (set VALUE_SERVICE_URL)); ' +
        'task-ledger 3 (peer not configured: task ledger (set TASK_LEDGER_URL))',
    );
  });
});
