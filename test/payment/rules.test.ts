import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { auditPath, leafHash, treeHash, verifyInclusion } from '../../src/payment/merkle.js';
import { PegService, twap } from '../../src/payment/peg.js';
import { verifyWebhook } from '../../src/payment/peers.js';
import { collateralFor, isoWeek, learningCredit, lastPayableWeek, offrampFee, payoutAt, payoutUnits, payoutWeekOf, split, weekStart } from '../../src/payment/rules.js';
import { newWebhookSecret, startPriceStandin, webhookSignature } from '../../src/payment/standins.js';
import { PriceProviderClient } from '../../src/payment/peers.js';

describe('TWAP over a fully covered window', () => {
  it('weights each price by how long it held and refuses gaps or an uncovered window', () => {
    const s = [{ t: 0, price: 2 }, { t: 60, price: 4 }, { t: 90, price: 3 }];
    expect(twap(s, 0, 120, 60)).toBeCloseTo((2 * 60 + 4 * 30 + 3 * 30) / 120);
    expect(twap(s, 30, 120, 60)).toBeCloseTo((2 * 30 + 4 * 30 + 3 * 30) / 90);
    expect(twap(s.slice(1), 0, 120, 60)).toBe('window start not covered');
    expect(twap([{ t: 0, price: 2 }, { t: 100, price: 3 }], 0, 120, 60)).toBe('gap in the window');
    expect(twap([{ t: 0, price: 2 }], 0, 120, 60)).toBe('window end not covered');
  });

  it('takes the median of the providers left, leaves out a provider with a gap, and needs two', async () => {
    const ps = await Promise.all([0, 0.01, -0.01].map((bias) => startPriceStandin({ bias })));
    try {
      const peg = new PegService(ps.map((p, i) => new PriceProviderClient(`p${i}`, p.url, 5000)), { windowMs: 300_000, maxGapMs: 30_000, minProviders: 2 });
      const end = Date.parse('2026-11-22T12:00:00Z');
      const all = await peg.snapshot(end);
      expect(all.inputs.every((i) => i.twap !== undefined)).toBe(true);
      const mid = all.inputs.map((i) => i.twap!).sort((a, b) => a - b)[1]!;
      expect(Number(all.peg_rate)).toBeCloseTo(mid, 5);
      ps[2]!.state.gap = { from: end - 200_000, to: end - 100_000 };
      const two = await peg.snapshot(end);
      expect(two.inputs[2]!.excluded).toBe('gap in the window');
      ps[1]!.knobs.failRate = 1;
      await expect(peg.snapshot(end)).rejects.toMatchObject({ status: 503, code: 'peg_unavailable' });
    } finally {
      await Promise.all(ps.map((p) => p.close()));
    }
  });
});

describe('Merkle log (RFC 6962)', () => {
  it('proves every leaf of every tree size up to 33 and rejects a wrong leaf, index or root', () => {
    const leaves = Array.from({ length: 33 }, (_, i) => leafHash(`leaf ${i}`));
    for (let size = 1; size <= leaves.length; size++) {
      const tree = leaves.slice(0, size);
      const root = treeHash(tree);
      for (let i = 0; i < size; i++) {
        const path = auditPath(tree, i);
        expect(verifyInclusion(tree[i]!, i, size, path, root)).toBe(true);
        if (size > 1) {
          expect(verifyInclusion(tree[(i + 1) % size]!, i, size, path, root)).toBe(false);
          expect(verifyInclusion(tree[i]!, (i + 1) % size, size, path, root)).toBe(false);
        }
        expect(verifyInclusion(tree[i]!, i, size, path, leafHash('other'))).toBe(false);
      }
    }
  });
});

describe('Standard Webhooks signature', () => {
  it('accepts a fresh signed message and refuses a changed body, another secret or a stale timestamp', () => {
    const secret = newWebhookSecret();
    const now = Date.now();
    const ts = Math.floor(now / 1000);
    const body = '{"a":1}';
    const h = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(ts), 'webhook-signature': webhookSignature(secret, 'msg_1', ts, body) };
    expect(verifyWebhook(secret, h, body, now)).toBeUndefined();
    expect(verifyWebhook(secret, h, '{"a":2}', now)).toBe('no valid signature');
    expect(verifyWebhook(newWebhookSecret(), h, body, now)).toBe('no valid signature');
    expect(verifyWebhook(secret, h, body, now + 301_000)).toMatch(/tolerance/);
    expect(verifyWebhook(secret, { ...h, 'webhook-signature': `v1,bad ${h['webhook-signature']}` }, body, now)).toBeUndefined();
  });
});

describe('weeks and rounding', () => {
  it('ISO weeks round-trip and a week pays on its Sunday 00:00 UTC', () => {
    expect(isoWeek(Date.parse('2026-01-01T00:00:00Z'))).toBe('2026-W01');
    expect(isoWeek(Date.parse('2027-01-01T00:00:00Z'))).toBe('2026-W53');
    expect(new Date(payoutAt('2026-W47')).toISOString()).toBe('2026-11-22T00:00:00.000Z');
    expect(payoutWeekOf(Date.parse('2026-11-21T23:59:59Z'))).toBe('2026-W47');
    expect(payoutWeekOf(Date.parse('2026-11-22T00:00:00Z'))).toBe('2026-W48');
    expect(lastPayableWeek(Date.parse('2026-11-22T00:00:00Z'))).toBe('2026-W47');
    expect(lastPayableWeek(Date.parse('2026-11-21T23:59:59Z'))).toBe('2026-W46');
    expect(() => weekStart('2026-W54')).toThrow(/does not exist/);
    expect(() => weekStart('2026-W00')).toThrow();
    fc.assert(fc.property(fc.integer({ min: Date.parse('2000-01-01'), max: Date.parse('2100-01-01') }), (t) => {
      const w = isoWeek(t);
      return weekStart(w) <= t && t < weekStart(w) + 7 * 86_400_000;
    }));
  });

  it('rounds per flow and a split never loses a unit', () => {
    expect(learningCredit(100_000_001n)).toBe(30_000_000n);
    expect(offrampFee(1000n)).toBe(14n);
    expect(offrampFee(1001n)).toBe(15n);
    expect(collateralFor(10_000, 2_500_000n)).toBe(750n * 10n ** 6n);
    expect(payoutUnits(10_000, 1_000_000n, 900_000n, 2_500_000n)).toBe(225n * 10n ** 6n);
    expect(payoutUnits(-5, 1_000_000n, 1_000_000n, 1_000_000n)).toBe(0n);
    fc.assert(fc.property(fc.bigInt(0n, 2n ** 90n), fc.constantFrom(10n, 20n), (total, pct) => {
      const s = split(total, pct);
      return s.platform + s.trader === total && s.platform >= 0n && s.trader >= s.platform;
    }));
  });
});
