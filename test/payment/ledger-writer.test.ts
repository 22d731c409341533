import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { checkLedger } from '../../src/payment/check.js';
import { K, type TransferInput } from '../../src/payment/ledger.js';
import { LedgerBatcher } from '../../src/payment/ledger-batch.js';
import { registerLedgerCommands, transfersArgs } from '../../src/payment/ledger-commands.js';
import { LK, LedgerWriter } from '../../src/payment/ledger-writer.js';
import { RK, verifyReceiptChain } from '../../src/payment/receipts.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

/**
 * The writer protocol between store instances (each as a hub process would hold it): one holds the
 * lease and applies, the others hand over and get each answer back, refusals included; an answer
 * lost after the commit is asked again and answered from the command's record, never applied twice;
 * a writer that stops hands the lease on within lease + renewal.
 */

const redis = await redisOrSkip();
const FAST = { leaseMs: 600, renewMs: 200, attemptMs: 300, deadlineMs: 5000 };

describe.skipIf(!redis.available)('ledger writer across store instances', () => {
  const prefix = uniquePrefix('ledger-writer-unit');
  const stores: RedisStore[] = [];
  const writers: LedgerWriter[] = [];
  afterEach(async () => {
    for (const w of writers.splice(0)) await w.stop();
    for (const s of stores.splice(0)) await s.close();
    await deletePrefix(redis.url, prefix);
  });
  const proc = async () => {
    const s = await openRedisStore({ url: redis.url, prefix });
    stores.push(s);
    const w = new LedgerWriter(s, FAST, new LedgerBatcher(s));
    registerLedgerCommands(w);
    writers.push(w);
    await w.start();
    return { s, w };
  };
  const t = (id: string, debit: string, credit: string, amount: bigint): TransferInput => ({ id, debit, credit, amount, code: 'test' });

  it('one writes, the others hand over: answers and refusals come back to each caller', async () => {
    const a = await proc();
    const b = await proc();
    const c = await proc();
    expect([a.w.isWriter, b.w.isWriter, c.w.isWriter]).toEqual([true, false, false]);
    await a.w.exec('transfers', transfersArgs([t('seed', 'bank', 'escrow', 1000n)]));
    const asks = Array.from({ length: 60 }, (_, i) => [b, c, a][i % 3]!.w.exec('transfers', transfersArgs([t(`x${i}`, 'escrow', `u:${i % 5}:wallet`, 20n)], { kind: 'test', user: null, ref: `x${i}` })));
    // one more than escrow holds: refused with the ledger's own error, nothing moved
    const over = b.w.exec('transfers', transfersArgs([t('over', 'u:0:wallet', 'escrow', 10_000n)]));
    const got = await Promise.allSettled([...asks, over]);
    const ok = got.slice(0, 60).filter((g) => g.status === 'fulfilled');
    expect(ok).toHaveLength(50); // 1000 / 20
    for (const g of got.slice(0, 60)) if (g.status === 'rejected') expect(g.reason).toMatchObject({ code: 'insufficient_balance' });
    expect(got[60]!.status).toBe('rejected');
    expect((got[60] as PromiseRejectedResult).reason).toBeInstanceOf(AppError);
    expect(b.w.stats.forwarded + c.w.stats.forwarded).toBe(41);
    expect(a.w.stats.served).toBe(41);
    expect(await a.s.indexCount(RK.all)).toBe(50);
    expect((await verifyReceiptChain(a.s)).ok).toBe(true);
    expect((await checkLedger(a.s)).ok).toBe(true);
  });

  it('an answer lost after the commit: asked again, answered from the record, applied once', async () => {
    const a = await proc();
    const b = await proc();
    await a.w.exec('transfers', transfersArgs([t('seed', 'bank', 'escrow', 1000n)]));
    // the writer commits, then its answers are lost (as if it died right after the commit)
    const lost = a.w as unknown as { answer: (to: string, r: unknown) => void };
    const real = lost.answer.bind(a.w);
    let dropped = 0;
    lost.answer = (to, r) => {
      if (dropped < 3) dropped++;
      else real(to, r);
    };
    const got = await Promise.all([1, 2, 3].map((i) => b.w.exec('transfers', transfersArgs([t(`y${i}`, 'escrow', 'u:y:wallet', 100n)], { kind: 'test', user: 'y', ref: `y${i}` }))));
    expect(dropped).toBe(3);
    expect(b.w.stats.resent).toBeGreaterThanOrEqual(3);
    // each answer is the first application's (its receipt), not a replay
    for (const g of got) expect(g).toMatchObject({ replayed: false });
    expect(new Set(got.map((g) => (g as { receipt_hash: string }).receipt_hash)).size).toBe(3);
    expect(await a.s.indexCount(RK.all)).toBe(3);
    expect((await a.s.indexRange(K.log)).filter((e) => e.member.startsWith('y'))).toHaveLength(3);
    expect((await checkLedger(a.s)).ok).toBe(true);
  });

  it('a writer that stops hands the lease on within lease + renewal; asks in flight are answered', async () => {
    const a = await proc();
    const b = await proc();
    await a.w.exec('transfers', transfersArgs([t('seed', 'bank', 'escrow', 1000n)]));
    const silent = a.w as unknown as { serve: (m: string) => void };
    silent.serve = () => undefined; // the writer hangs: takes nothing more
    const asked = b.w.exec('transfers', transfersArgs([t('z1', 'escrow', 'u:z:wallet', 5n)]));
    const stopped = Date.now();
    // the writer's process ends without giving the lease up (its renewals stop)
    const renew = a.w as unknown as { renew: () => Promise<void> };
    renew.renew = async () => undefined;
    await sleep(50);
    expect(await asked).toMatchObject({ transfers: ['z1'] });
    expect(Date.now() - stopped).toBeLessThan(FAST.leaseMs + FAST.renewMs + FAST.attemptMs + 500);
    expect(((await b.s.get(LK.lease)) as { token: string }).token).toBe(b.w.token);
    expect(b.w.isWriter).toBe(true);
  });
});
