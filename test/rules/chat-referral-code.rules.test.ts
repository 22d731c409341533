import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REFERRAL_CODE_RE, REFERRAL_PREFIX, isCustomerId, parseReferralCode, referralCode } from '../../src/chat/referral-code.js';

// Referral codes (docs/chat.md): MARU-<customer id in base 36, upper case>.

describe('referral codes', () => {
  it('writes the customer id in base 36 after MARU-', () => {
    expect(REFERRAL_PREFIX).toBe('MARU');
    expect(referralCode(1234567)).toBe('MARU-QGLJ');
    expect(referralCode(1)).toBe('MARU-1');
    expect(referralCode(35)).toBe('MARU-Z');
    expect(referralCode(36)).toBe('MARU-10');
    expect(referralCode(Number.MAX_SAFE_INTEGER)).toBe('MARU-2GOSA7PA2GV');
  });

  it('takes only positive safe integers', () => {
    for (const bad of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 1, NaN]) {
      expect(() => referralCode(bad), String(bad)).toThrow(new RangeError('customer id must be a positive safe integer'));
    }
    expect(isCustomerId(1)).toBe(true);
    expect(isCustomerId(0)).toBe(false);
    expect(isCustomerId('1')).toBe(false);
  });

  it('parses its own codes back, case and spacing ignored', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (id) => {
        const c = referralCode(id);
        expect(REFERRAL_CODE_RE.test(c)).toBe(true);
        expect(parseReferralCode(c)).toBe(id);
        expect(parseReferralCode(` ${c.toLowerCase()} `)).toBe(id);
      }),
    );
  });

  it('refuses what no customer was given', () => {
    for (const bad of ['MARU-', 'MARU-0', 'MARU-01', 'MARU-2GOSA7PA2GW', 'MARU-ZZZZZZZZZZZ', 'MARU-AB-C', 'XMARU-1', 'MARU-1X!', 'MARU1', 'MARU-123456789012', '']) {
      expect(parseReferralCode(bad), bad).toBeUndefined();
    }
  });
});
