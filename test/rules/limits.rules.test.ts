import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../src/clock.js';
import { PRESENCE_TIMEOUT_MS } from '../../src/collab/model.js';
import { CollabService } from '../../src/collab/service.js';
import { monteCarloBody } from '../../src/trading/routes.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { walkForwardWindows } from '../../src/trading/analyses.js';
import { checkWalkForward, MAX_MC_RUNS, MAX_WINDOWS } from '../../src/trading/rules.js';
import { tempDir } from '../support/process.js';

/** The fixed numbers of the documents on both sides of their boundary. */

describe('presence timeout: 30 s without a heartbeat', () => {
  it('is exactly 30 s: seen 29.999 s ago is present; 30 s and 30.001 s ago are gone', async () => {
    expect(PRESENCE_TIMEOUT_MS).toBe(30_000);
    const store = await openLmdbStore({ path: tempDir('presence-rule') });
    const clock = new ManualClock(Date.parse('2026-11-22T09:00:00Z'));
    const service = new CollabService({ store, clock, bus: { emit: () => undefined }, maxBytes: 1 << 20 });
    try {
      await service.presence.join('rule-doc', { id: 'jiwoo', name: '지우' });
      clock.advance(29_999);
      expect((await service.presence.peers('rule-doc')).map((p) => p.name)).toEqual(['지우']);
      clock.advance(1);
      expect(await service.presence.peers('rule-doc')).toEqual([]);
      clock.advance(1);
      expect(await service.presence.peers('rule-doc')).toEqual([]);
      // a heartbeat before the 30 s keeps the editor, and the 30 s count again from it
      await service.presence.join('rule-doc', { id: 'minji', name: '민지' });
      clock.advance(20_000);
      await service.presence.join('rule-doc', { id: 'minji', name: '민지' }, (await service.presence.peers('rule-doc'))[0]!.id);
      clock.advance(29_999);
      expect((await service.presence.peers('rule-doc')).map((p) => p.name)).toEqual(['민지']);
      clock.advance(1);
      expect(await service.presence.peers('rule-doc')).toEqual([]);
    } finally {
      service.close();
      await store.close();
    }
  });
});

describe('Monte Carlo runs: 500 by default, at most 500', () => {
  const base = { symbol: 'ES', strategy: 'ema_cross', count: 2000 };
  it('defaults to 500 and accepts 1, 499 and 500; refuses 0, 501 and 1.5', () => {
    expect(MAX_MC_RUNS).toBe(500);
    expect(monteCarloBody.parse(base).runs).toBe(500);
    for (const runs of [1, 499, 500]) expect(monteCarloBody.parse({ ...base, runs }).runs).toBe(runs);
    for (const runs of [0, 501, 1.5]) expect(monteCarloBody.safeParse({ ...base, runs }).success).toBe(false);
  });
});

describe('walk-forward windows: at most 50', () => {
  // in-sample 200, out-of-sample 100, step 10: count = 300 + (windows - 1) x 10
  const body = (windows: number) => ({ symbol: 'ES' as const, timeframe: '1m' as const, count: 300 + (windows - 1) * 10, seed: 1, in_sample: 200, out_of_sample: 100 });
  const issues = (windows: number) => {
    const found: string[] = [];
    const ctx = { addIssue: (i: { message?: string }) => found.push(i.message ?? '') } as unknown as z.RefinementCtx;
    checkWalkForward('ema_cross', body(windows) as never, 10, undefined, ctx);
    return found;
  };

  it('accepts 49 and 50 windows, refuses 51', () => {
    expect(MAX_WINDOWS).toBe(50);
    expect(walkForwardWindows(body(50).count, 200, 100, 10)).toHaveLength(50);
    expect(walkForwardWindows(body(51).count, 200, 100, 10)).toHaveLength(51);
    expect(issues(49)).toEqual([]);
    expect(issues(50)).toEqual([]);
    expect(issues(51)).toEqual(['51 windows; at most 50 (raise step or in_sample)']);
  });

  it('refuses no complete window: in-sample plus out-of-sample one more than the candles', () => {
    const found: string[] = [];
    const ctx = { addIssue: (i: { message?: string }) => found.push(i.message ?? '') } as unknown as z.RefinementCtx;
    checkWalkForward('ema_cross', { symbol: 'ES', timeframe: '1m', count: 299, seed: 1, in_sample: 200, out_of_sample: 100 } as never, 10, undefined, ctx);
    expect(found).toEqual(['no complete window: in_sample + out_of_sample = 300 is more than count 299']);
    expect(walkForwardWindows(300, 200, 100, 10)).toHaveLength(1);
  });
});
