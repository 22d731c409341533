import { afterAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf, type Json, type Store } from '../../src/store/port.js';
import { AlertService } from '../../src/trading/alerts.js';
import { settingsSchema } from '../../src/trading/engine.js';
import { K, ProgramService, partitioned, type ProgramEvent } from '../../src/trading/programs.js';
import { strategyParams } from '../../src/trading/strategies.js';
import { tempDir } from '../support/process.js';

// Live programs in the partitioned keyspace (docs/partitions.md): a program's record, statistics,
// log, book, lease and alert are one aggregate (`trading:program:<id>`), the lists of programs and
// of running programs per partition; every command, lease round and journal commit is one update of
// it. Real LMDB with the partition check on (as STORE_PARTITION_CHECK=1). A program of the global
// layout is still listed, read and driven on one store.

const BAR = 1000;
const T0 = Date.parse('2026-11-18T12:01:00Z');
const OLD_ID = 'p_0123456789ab';
const input = () => ({ strategy: 'ema_cross' as const, symbol: 'ES' as const, params: strategyParams('ema_cross', { fast: 3, slow: 8 }), settings: settingsSchema.parse({}) });

const closing: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of closing.reverse()) await c();
});

async function rig(store: Store, clock: ManualClock, name: string) {
  const bus: Bus = createBus(store, name);
  await bus.start();
  bus.retain('program:events', { size: 1000 });
  const events: ProgramEvent[] = [];
  bus.onMessage(({ topic, message }) => {
    if (topic === 'program:events') events.push(message as unknown as ProgramEvent);
  });
  let kicks = 0;
  const svc = new ProgramService({ store, clock, bus, barMs: BAR, leaseMs: 60_000, pumpMs: 3_600_000, owner: name, alerts: { kick: () => void kicks++ } });
  await svc.start();
  closing.push(async () => {
    await svc.close();
    await bus.close();
  });
  return { svc, events, kicks: () => kicks };
}

describe('live programs in the partitioned keyspace', () => {
  it('create, start, bars with an alert, lease rounds, pause, stop and delete are each one aggregate; programs of before are still read', async () => {
    const path = tempDir('programs-parts');
    const clock = new ManualClock(T0);
    // a program of the global layout, written before the partitions
    const before = await openLmdbStore({ path, partitionCheck: false });
    const rec = { id: OLD_ID, name: 'before', strategy: 'ema_cross', symbol: 'ES', params: input().params, settings: input().settings, state: 'created', created_at: T0 - 5000, updated_at: T0 - 5000, reason: null, created_by: null, from_bar: null };
    await before.update([], () => ({
      writes: [
        { op: 'set', key: `program:${OLD_ID}`, value: rec as unknown as Json },
        { op: 'index', key: 'program:all', member: OLD_ID, score: T0 - 5000 },
      ],
      result: undefined,
    }));
    await before.close();

    const store = await openLmdbStore({ path, partitionCheck: true });
    closing.push(() => store.close());
    const { svc, events, kicks } = await rig(store, clock, 'one');
    expect(partitioned(OLD_ID)).toBe(false);
    const a = await svc.create(input());
    clock.advance(1);
    const b = await svc.create(input());
    expect(partitioned(a.id)).toBe(true);
    expect(K.lease(a.id)).toBe(`trading:program:${a.id}:lease`);
    expect(K.running(a.id)).toBe(`trading:running:{#${partitionOf(`trading:program:${a.id}`)}}`);
    expect((await svc.list()).map((p) => p.id)).toEqual([OLD_ID, a.id, b.id]);
    expect((await svc.get(OLD_ID)).name).toBe('before');

    await new AlertService(store, { allowPrivate: true }).set(a, { url: 'http://127.0.0.1:9/hook' });
    await svc.move(a.id, 'start');
    await svc.move(b.id, 'start');
    expect(await store.get(K.lease(a.id))).toBe('one');
    for (let i = 0; i < 12; i++) {
      clock.advance(BAR);
      await svc.pump();
    }
    await svc.leaseRound();
    await svc.flushed();
    expect((await svc.get(a.id)).stats.bars).toBeGreaterThan(0);
    expect((await svc.get(b.id)).stats.bars).toBeGreaterThan(0);
    // the alert's events in the outbox partition of the program
    const p = partitionOf(K.rec(a.id));
    expect(await store.indexCount(`outbox:due:{#${p}}`)).toBeGreaterThan(0);
    expect(kicks()).toBeGreaterThan(0);
    await svc.move(a.id, 'pause');
    await svc.move(b.id, 'stop');
    await svc.remove(a.id);
    await svc.flushed();
    expect(events.filter((e) => e.type === 'status').map((e) => `${e.program === a.id ? 'a' : 'b'} ${(e as { state: string }).state}`)).toEqual([
      'a running', 'b running', 'a paused', 'b stopped', 'a stopped', 'a deleted',
    ]);
    expect((await svc.list()).map((p) => p.id)).toEqual([OLD_ID, b.id]);
    expect(await store.get(K.stats(a.id))).toBeUndefined();
  }, 30_000);

  it('the lease round claims running programs of every partition and of the global list of before', async () => {
    const path = tempDir('programs-parts-claim');
    const clock = new ManualClock(T0);
    // one store without the check (a program of before is written as before: one Redis only)
    const store = await openLmdbStore({ path, partitionCheck: false });
    closing.push(() => store.close());
    const first = await rig(store, clock, 'first');
    const rec = { id: OLD_ID, name: 'before', strategy: 'ema_cross', symbol: 'ES', params: input().params, settings: input().settings, state: 'created', created_at: T0 - 5000, updated_at: T0 - 5000, reason: null, created_by: null, from_bar: null };
    await store.update([], () => ({ writes: [{ op: 'set', key: `program:${OLD_ID}`, value: rec as unknown as Json }, { op: 'index', key: 'program:all', member: OLD_ID, score: T0 - 5000 }], result: undefined }));
    const fresh = await first.svc.create(input());
    await first.svc.move(OLD_ID, 'start');
    await first.svc.move(fresh.id, 'start');
    expect(await store.indexScore('program:running', OLD_ID)).toBe(T0);
    expect(await store.indexScore(K.running(fresh.id), fresh.id)).toBe(T0);
    expect(first.svc.owned().sort()).toEqual([OLD_ID, fresh.id].sort());
    // the first process stops renewing: once its leases lapse, another claims both
    await first.svc.close();
    await store.del(K.lease(OLD_ID));
    await store.del(K.lease(fresh.id));
    const second = await rig(store, clock, 'second');
    await second.svc.leaseRound();
    expect(second.svc.owned().sort()).toEqual([OLD_ID, fresh.id].sort());
    expect(await store.get(K.lease(fresh.id))).toBe('second');
  }, 30_000);
});
