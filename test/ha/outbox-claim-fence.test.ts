import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { Outbox, outboxDueKey, outboxKey, outboxPartition, outboxWrites, type Deliver, type OutboxItem } from '../../src/outbox.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { sleep, until } from '../support/wait.js';

// The outbox's fence against a claim lost in a Redis failover (REDIS_MIN_REPLICAS=0): the claim is
// written on the old primary, the primary dies before a replica has it, and the promoted replica
// shows the item unclaimed, so another process claims it too. The first process reads its claim
// back before it calls the peer, finds it gone, and leaves the delivery to the other: one delivery.
// The item is written in the partition of the update that made it (docs/partitions.md).
const NEAR = 'pay:payout:week-1';
const P = outboxPartition(NEAR);

const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

/** The store as the first process sees it: its first claim is lost right after it was answered. */
function losingFirstClaim(inner: Store): Store {
  let lost = false;
  return new Proxy(inner, {
    get(target, prop, recv) {
      if (prop === 'update') {
        return async (keys: string[], fn: (cur: (Json | undefined)[]) => unknown) => {
          let before: Json | undefined;
          const out = await target.update(keys, (cur) => {
            before = cur[0];
            return fn(cur) as never;
          });
          const claimed = out && typeof out === 'object' && 'token' in (out as object);
          if (claimed && !lost && before !== undefined) {
            lost = true;
            const rec = before as { id: string; due: number };
            // the failover: the promoted replica never had the claim
            await target.update([keys[0]!], () => ({
              writes: [
                { op: 'set', key: keys[0]!, value: before! },
                { op: 'index', key: outboxDueKey(P), member: rec.id, score: rec.due },
              ],
              result: undefined,
            }));
          }
          return out;
        };
      }
      const v = Reflect.get(target, prop, recv);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as Store;
}

describe('outbox claim fence', () => {
  it('a process whose claim was lost does not call the peer; the item is delivered once, on a claim that held', async () => {
    const store = await openLmdbStore({ path: tempDir('outbox-fence') });
    stores.push(store);
    const item: OutboxItem = { id: 'payout-week-1', dest: 'bank', payload: { amount: 1000 }, createdAt: Date.now() };
    await store.update([outboxKey(item.id, P)], () => ({ writes: outboxWrites(item, NEAR), result: undefined }));

    const calls: string[] = [];
    const deliverer = (who: string): Deliver => async (it) => {
      calls.push(`${who}:${it.id}`);
    };
    const warnings: string[] = [];
    const logger = { warn: (_o: object, msg: string) => warnings.push(msg), error: () => undefined, debug: () => undefined };
    const a = new Outbox({ store: losingFirstClaim(store), clock: systemClock, deliver: { bank: deliverer('a') }, retryMinMs: 20, retryMaxMs: 200, pollMs: 20, logger: logger as never });
    const b = new Outbox({ store, clock: systemClock, deliver: { bank: deliverer('b') }, retryMinMs: 20, retryMaxMs: 200, pollMs: 20 });
    a.start();
    b.start();
    await until('delivered and settled', async () => (await store.get(outboxKey(item.id, P))) === undefined, 5_000, 10);
    await sleep(200); // a second delivery, if any, would land here
    await a.stop();
    await b.stop();
    // the lost claim was noticed before the peer call; the item went out once, on a claim that held
    expect(warnings).toContain('outbox claim lost before delivery; not delivered here');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatch(/^[ab]:payout-week-1$/);
  });
});
