import { afterAll, describe, expect, it } from 'vitest';
import { createBus } from '../../src/bus.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { storeUnavailable } from '../../src/store/redis-unavailable.js';
import { Journal } from '../../src/trading/program-journal.js';
import { PROGRAM_EVENTS_TOPIC, type ProgramEvent } from '../../src/trading/program-model.js';
import { tempDir } from '../support/process.js';

// The store answers store_unavailable between a journal batch's commit and the publication of its
// events (Redis lost right after the update): the events are published once the store answers
// again, in order, so a dashboard's stream has every committed event.

const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

const signal = (n: number): ProgramEvent => ({ id: `e${n}`, type: 'signal', program: 'p1', created_by: 'trader', t: n * 60_000, bar: n, action: n % 2 ? 'long' : 'exit', price: 100 + n });

describe('program journal across a store outage', () => {
  it('events committed before the outage reach the stream after it, in order', async () => {
    const store = await openLmdbStore({ path: tempDir('journal-outage') });
    stores.push(store);
    const bus = createBus(store, 'journal-test');
    bus.retain(PROGRAM_EVENTS_TOPIC, { size: 100 });
    let failures = 3;
    const flaky = {
      publishMany: (topic: string, messages: Parameters<typeof bus.publishMany>[1]) => {
        if (failures > 0) {
          failures--;
          return Promise.reject(storeUnavailable('the store is not reachable: Connection is closed'));
        }
        return bus.publishMany(topic, messages);
      },
    };
    const errors: unknown[] = [];
    const journal = new Journal({ store, bus: flaky, owner: 'me', barMs: 60_000, onError: (e) => errors.push(e) });
    const done = await Promise.all([1, 2, 3].map((n) => journal.add({ program: 'p1', writes: [{ op: 'set', key: `mark:${n}`, value: n }], events: [signal(n)] })));
    await journal.flushed();
    expect(done).toEqual([true, true, true]);
    expect(errors).toEqual([]);
    expect(failures).toBe(0);
    const h = await bus.history(PROGRAM_EVENTS_TOPIC, { offset: 0, epoch: (await bus.history(PROGRAM_EVENTS_TOPIC)).position.epoch });
    expect(h.publications.map((p) => (p.message as { id: string }).id)).toEqual(['e1', 'e2', 'e3']);
    await bus.close();
  });
});
