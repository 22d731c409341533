import { describe, expect, it } from 'vitest';
import {
  aggregateOf,
  checkUpdateKeys,
  crc16,
  keySlot,
  PARTITIONS,
  PartitionError,
  partitionKey,
  partitionKeyFor,
  partitionKeys,
  partitionOf,
  partitionOfAggregate,
  partitionTag,
  SLOTS_PER_PARTITION,
} from '../../src/store/partition.js';

describe('the partition rule', () => {
  it('CRC16 is the one Redis Cluster uses (its reference value and known key slots)', () => {
    // the CRC16-CCITT (XMODEM) check value, and slots redis-cli cluster keyslot gives
    expect(crc16('123456789')).toBe(0x31c3);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('bar')).toBe(5061);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('foo{}{bar}')).toBe(crc16('foo{}{bar}') % 16384);
    expect(keySlot('foo{{bar}}zap')).toBe(crc16('{bar') % 16384);
  });

  it('the aggregate: the first {tag}, else <service>:<kind>:<id>, else the key itself', () => {
    expect(aggregateOf('auth:account:admin')).toBe('auth:account:admin');
    expect(aggregateOf('auth:account:admin:tokens')).toBe('auth:account:admin');
    expect(aggregateOf('collab:doc:d1:v:3')).toBe('collab:doc:d1');
    expect(aggregateOf('auth:accounts')).toBe('auth:accounts');
    expect(aggregateOf('outbox')).toBe('outbox');
    expect(aggregateOf('')).toBe('');
    expect(aggregateOf('pay:{ledger}:acct:u1')).toBe('ledger');
    expect(aggregateOf('bus:h:{ticket:show:1}')).toBe('ticket:show:1');
    // an empty tag is no tag (as Redis reads it)
    expect(aggregateOf('a:{}:b:c')).toBe('a:{}:b');
    // a partition-local key belongs to no aggregate
    expect(aggregateOf(partitionKey('auth:accounts', 7))).toBeUndefined();
    expect(aggregateOf('x:{#64}')).toBe('#64');
    expect(aggregateOf('x:{#07}')).toBe('#07');
  });

  it('a service declared one aggregate: every pay: key is the ledger, its name unchanged; one update of them passes the check', () => {
    for (const key of ['pay:acct:bank', 'pay:acct:u1:wallet', 'pay:xfer:buy:c_1:credit', 'pay:log', 'pay:receipt:head', 'pay:chal:c_1', 'pay:payoutrun:2026-W47', 'pay:{x}:y', 'pay:a:{#3}']) {
      expect(aggregateOf(key)).toBe('ledger');
      expect(partitionOf(key)).toBe(partitionOfAggregate('ledger'));
    }
    // only the prefix itself: a key merely holding pay: is not the ledger
    expect(aggregateOf('payment:a:b:c')).toBe('payment:a:b');
    expect(aggregateOf('bus:h:{pay:x}')).toBe('pay:x');
    // a purchase: transfers, accounts, receipt, challenge, and its outbox messages beside the ledger
    const purchase = ['pay:xfer:buy:c_1:wallet', 'pay:acct:u1:wallet', 'pay:acct:escrow', 'pay:log', 'pay:receipt:head', 'pay:chal:c_1', 'pay:uchal:u1:starter_10k', partitionKeyFor('outbox:due', 'pay:receipt:head')];
    expect(checkUpdateKeys(purchase, 'aggregate')).toBe(partitionOfAggregate('ledger'));
    expect(() => checkUpdateKeys(['pay:acct:u1:wallet', 'program:p_1'], 'aggregate')).toThrow(PartitionError);
    // what docs/deploy.md tells the operator: the ledger is partition 9, hash tag {9.8}, slot 2438
    expect(partitionOfAggregate('ledger')).toBe(9);
    expect(partitionTag(9)).toBe('9.8');
    expect(keySlot('maru:{9.8}v:pay:acct:bank')).toBe(2438);
  });

  it('a key lives in its aggregate partition; partition n covers slots n*256..n*256+255', () => {
    expect(partitionOfAggregate('')).toBe(0);
    for (const agg of ['auth:account:admin', 'reward:member:m_1', 'ledger']) {
      const p = partitionOfAggregate(agg);
      expect(p).toBe(Math.floor(keySlot(`{${agg}}`) / SLOTS_PER_PARTITION));
      expect(p).toBeGreaterThanOrEqual(0);
      expect(p).toBeLessThan(PARTITIONS);
    }
    expect(partitionOf('auth:account:admin:tokens')).toBe(partitionOf('auth:account:admin'));
    expect(partitionOf(partitionKey('auth:accounts', 13))).toBe(13);
    expect(partitionOf(partitionKeyFor('auth:accounts', 'auth:account:admin'))).toBe(partitionOf('auth:account:admin'));
    expect(partitionKeys('i')).toHaveLength(PARTITIONS);
    expect(partitionKeys('i').map(partitionOf)).toEqual(Array.from({ length: PARTITIONS }, (_, n) => n));
    expect(() => partitionKey('i', PARTITIONS)).toThrow(RangeError);
    expect(() => partitionKey('i', -1)).toThrow(RangeError);
  });

  it("each partition's hash tag lies in the partition's slot range, so even slot ranges spread partitions evenly", () => {
    const perMaster = [0, 0, 0];
    for (let n = 0; n < PARTITIONS; n++) {
      const slot = keySlot(`x{${partitionTag(n)}}y`);
      expect(Math.floor(slot / SLOTS_PER_PARTITION)).toBe(n);
      // redis-cli --cluster create gives 3 masters 0-5460, 5461-10922, 10923-16383
      perMaster[slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2]!++;
    }
    expect(perMaster.sort()).toEqual([21, 21, 22]);
    expect(new Set(Array.from({ length: PARTITIONS }, (_, n) => partitionTag(n))).size).toBe(PARTITIONS);
    expect(() => partitionTag(PARTITIONS)).toThrow(RangeError);
  });

  it('the aggregate check: one aggregate plus partition-local keys of its partition', () => {
    const acct = 'auth:account:ann';
    const p = partitionOf(acct);
    expect(checkUpdateKeys([acct, `${acct}:tokens`, partitionKey('auth:accounts', p)], 'aggregate')).toBe(p);
    expect(checkUpdateKeys([], 'aggregate')).toBeUndefined();
    expect(checkUpdateKeys(['auth:account:ann', 'auth:account:bob'], 'off')).toBeUndefined();
    expect(() => checkUpdateKeys([acct, 'auth:accounts'], 'aggregate')).toThrow(PartitionError);
    expect(() => checkUpdateKeys([acct, 'auth:accounts'], 'aggregate')).toThrow(/"auth:account:ann" \(aggregate "auth:account:ann"\) and "auth:accounts"/);
    expect(() => checkUpdateKeys([acct, partitionKey('auth:accounts', (p + 1) % PARTITIONS)], 'aggregate')).toThrow(/spans partitions/);
    expect(() => checkUpdateKeys([partitionKey('a', 1), partitionKey('a', 2)], 'aggregate')).toThrow(/spans partitions/);
  });

  it('the partition check (a cluster) allows two aggregates of one partition, refuses two partitions', () => {
    // find two aggregates sharing a partition
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const agg = `t:k:${i}`;
      const p = partitionOf(agg);
      const other = seen.get(p);
      if (other) pair = [other, agg];
      else seen.set(p, agg);
    }
    expect(checkUpdateKeys(pair, 'partition')).toBe(partitionOf(pair[0]));
    expect(() => checkUpdateKeys(pair, 'aggregate')).toThrow(/spans aggregates/);
    const [a, b] = ['t:k:0', [...seen.values()].find((k) => partitionOf(k) !== partitionOf('t:k:0'))!];
    expect(() => checkUpdateKeys([a, b], 'partition')).toThrow(/spans partitions/);
  });

  it('a drawn number in the aggregate name is refused: the partition must be known before the draw', () => {
    expect(() => checkUpdateKeys(['reward:work:\u0000#0\u0000'], 'partition')).toThrow(/drawn number falls in its aggregate/);
    expect(() => checkUpdateKeys(['\u0000#0\u0000'], 'aggregate')).toThrow(/drawn number/);
    expect(checkUpdateKeys(['reward:work:w:\u0000#0\u0000', 'reward:work:w'], 'aggregate')).toBe(partitionOf('reward:work:w'));
  });
});

describe('a per-partition index read as one (mergedIndexRange)', () => {
  it('orders by score then member, pages, reverses and counts each member once', async () => {
    const { openLmdbStore } = await import('../../src/store/lmdb.js');
    const { mergedIndexCount, mergedIndexRange } = await import('../../src/store/merged.js');
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const store = await openLmdbStore({ path: mkdtempSync(join(tmpdir(), 'maru-merged-')) });
    const keys = partitionKeys('t:list');
    const entries = Array.from({ length: 30 }, (_, i) => ({ member: `m${String(i).padStart(2, '0')}`, score: Math.floor(i / 3) }));
    for (const [i, e] of entries.entries()) await store.index(keys[(i * 7) % PARTITIONS]!, e.member, e.score);
    // one member also in a second part (a legacy global list): listed once, at its first place
    await store.index('t:list', 'm05', 1);
    const all = [...keys, 't:list'];
    expect(await mergedIndexRange(store, all)).toEqual(entries);
    expect(await mergedIndexRange(store, all, { reverse: true })).toEqual([...entries].reverse());
    expect(await mergedIndexRange(store, all, { offset: 4, limit: 5 })).toEqual(entries.slice(4, 9));
    expect(await mergedIndexRange(store, all, { reverse: true, offset: 2, limit: 3 })).toEqual([...entries].reverse().slice(2, 5));
    expect(await mergedIndexRange(store, all, { min: 3, max: 4 })).toEqual(entries.filter((e) => e.score >= 3 && e.score <= 4));
    expect(await mergedIndexCount(store, all)).toBe(30);
    await store.close();
  });
});
