import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  TERMINATOR,
  countKey,
  esc,
  expiryKey,
  f64,
  indexEntryKey,
  indexPrefix,
  listMetaKey,
  listPrefix,
  readF64,
  scoreKey,
  u64,
  unesc,
  valueKey,
} from '../../src/store/lmdb-keys.js';

// The layout as documented in lmdb-keys.ts, built part by part: the keys built in one pass must be
// these very bytes, or data written before could no longer be read.
const parts = (tag: string, ...rest: Buffer[]) => Buffer.concat([Buffer.from(tag), ...rest]);

// strings with the bytes the layout escapes (0x00, 0x01), multi-byte UTF-8 and lone surrogates
const text = fc.string({ unit: fc.constantFrom('a', 'z', ':', '{', '\u0000', '\u0001', '\u0002', 'é', '한', '\u{1F600}', '\uD800', '\uDFFF'), maxLength: 40 });
const score = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constantFrom(0, -0, 1e300, -1e300, Number.MIN_VALUE));

describe('LMDB key layout', () => {
  it('builds every key as the documented parts, byte for byte', () => {
    fc.assert(
      fc.property(text, text, score, fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (key, member, s, at) => {
        expect(valueKey(key)).toEqual(parts('v', esc(key)));
        expect(expiryKey(at, key)).toEqual(parts('e', u64(at), esc(key)));
        expect(listMetaKey(key)).toEqual(parts('m', esc(key)));
        expect(listPrefix(key)).toEqual(parts('l', esc(key), TERMINATOR));
        expect(indexPrefix(key)).toEqual(parts('z', esc(key), TERMINATOR));
        expect(scoreKey(key, member)).toEqual(parts('s', esc(key), TERMINATOR, esc(member)));
        expect(countKey(key)).toEqual(parts('c', esc(key)));
        const entry = indexEntryKey(key, s, member);
        expect(entry).toEqual(parts('z', esc(key), TERMINATOR, f64(s), esc(member)));
        const prefix = indexPrefix(key).length;
        expect(readF64(entry, prefix)).toBe(s === 0 ? 0 : s);
        expect(unesc(entry.subarray(prefix + 8))).toBe(Buffer.from(member, 'utf8').toString('utf8'));
      }),
      { numRuns: 500 },
    );
  });

  it('orders index entries by score, then by member bytes', () => {
    const members = ['b', 'a', 'a\u0000', 'a\u0001', '', 'é'];
    const scores = [-1e9, -1, -Number.MIN_VALUE, 0, 1, 2.5, 1e9];
    const entries = scores.flatMap((s) => members.map((m) => ({ s, m, k: indexEntryKey('z', s, m) })));
    const sorted = [...entries].sort((x, y) => Buffer.compare(x.k, y.k));
    const want = [...entries].sort((x, y) => x.s - y.s || Buffer.compare(esc(x.m), esc(y.m)));
    expect(sorted.map((e) => [e.s, e.m])).toEqual(want.map((e) => [e.s, e.m]));
  });

  it('refuses a key longer than LMDB takes', () => {
    expect(() => valueKey('k'.repeat(1978))).toThrow(RangeError);
    expect(valueKey('k'.repeat(1977)).length).toBe(1978);
    expect(() => scoreKey('k', 'é'.repeat(1000))).toThrow(RangeError);
  });
});
