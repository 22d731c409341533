import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkCap, checkInt, checkKey, checkScore, checkTtl, encodeJson, prepareWrite } from '../../src/store/checks.js';
import type { Write } from '../../src/store/port.js';

// The argument checks both Store adapters share (src/store/checks.ts), on each side of every
// boundary: a bad call fails the same way on LMDB and on Redis, before anything is written.

describe('checkScore', () => {
  it('turns -0 into 0 and keeps every other finite number', () => {
    expect(Object.is(checkScore(-0), 0)).toBe(true);
    expect(Object.is(checkScore(0), 0)).toBe(true);
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
        const out = checkScore(x);
        if (x === 0) expect(Object.is(out, 0)).toBe(true);
        else expect(out).toBe(x);
      }),
    );
    expect(checkScore(-1)).toBe(-1);
    expect(checkScore(Number.MIN_VALUE)).toBe(Number.MIN_VALUE);
  });
  it('refuses NaN, infinities and non-numbers with a RangeError', () => {
    for (const bad of [NaN, Infinity, -Infinity, '1', null, undefined, 1n]) {
      expect(() => checkScore(bad), String(bad)).toThrow(RangeError);
    }
    expect(() => checkScore(NaN)).toThrow('score must be a finite number');
  });
});

describe('checkTtl', () => {
  it('undefined means no expiry', () => {
    expect(checkTtl(undefined)).toBeUndefined();
  });
  it('0 and below are refused, anything above 0 is rounded up to whole milliseconds', () => {
    expect(() => checkTtl(0)).toThrow(RangeError);
    expect(() => checkTtl(-1)).toThrow('ttlMs must be a positive number of milliseconds');
    expect(() => checkTtl(-0.5)).toThrow(RangeError);
    expect(checkTtl(0.1)).toBe(1);
    expect(checkTtl(1)).toBe(1);
    expect(checkTtl(1.5)).toBe(2);
    expect(checkTtl(2)).toBe(2);
    for (const bad of [NaN, Infinity, '10', null]) expect(() => checkTtl(bad), String(bad)).toThrow(RangeError);
  });
});

describe('checkCap', () => {
  it('0 refused, 1 and above accepted, fractions and unsafe integers refused', () => {
    expect(() => checkCap(0)).toThrow('cap must be a positive integer');
    expect(() => checkCap(-1)).toThrow(RangeError);
    expect(checkCap(1)).toBe(1);
    expect(checkCap(2)).toBe(2);
    expect(checkCap(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of [1.5, Number.MAX_SAFE_INTEGER + 1, NaN, Infinity, '3', null]) {
      expect(() => checkCap(bad), String(bad)).toThrow(RangeError);
    }
  });
});

describe('checkInt', () => {
  it('safe integers pass, everything else is refused naming the argument', () => {
    expect(checkInt(0, 'n')).toBe(0);
    expect(checkInt(-3, 'n')).toBe(-3);
    expect(() => checkInt(0.5, 'offset')).toThrow('offset must be an integer');
    for (const bad of [NaN, Infinity, 2 ** 53, '1', undefined]) expect(() => checkInt(bad, 'limit'), String(bad)).toThrow(RangeError);
  });
});

describe('checkKey and encodeJson', () => {
  it('keys are strings (the empty string too); the error names what was checked', () => {
    expect(checkKey('')).toBe('');
    expect(checkKey('a:b')).toBe('a:b');
    expect(() => checkKey(1)).toThrow(new TypeError('key must be a string'));
    expect(() => checkKey(undefined, 'member')).toThrow(new TypeError('member must be a string'));
  });
  it('values are JSON text; what JSON cannot hold is refused', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(JSON.parse(encodeJson(v))).toEqual(JSON.parse(JSON.stringify(v)));
      }),
    );
    expect(encodeJson(null)).toBe('null');
    expect(() => encodeJson(undefined)).toThrow(new TypeError('value is not JSON-serialisable'));
    expect(() => encodeJson(() => 1)).toThrow(TypeError);
  });
});

describe('prepareWrite', () => {
  it('prepares each op with its fields checked and its value serialised', () => {
    expect(prepareWrite({ op: 'set', key: 'k', value: { a: 1 } })).toEqual({ op: 'set', key: 'k', json: '{"a":1}', ttlMs: undefined });
    expect(prepareWrite({ op: 'set', key: 'k', value: 1, ttlMs: 0.2 })).toEqual({ op: 'set', key: 'k', json: '1', ttlMs: 1 });
    expect(prepareWrite({ op: 'del', key: 'k' })).toEqual({ op: 'del', key: 'k' });
    expect(prepareWrite({ op: 'push', key: 'k', value: 'x', cap: 3 })).toEqual({ op: 'push', key: 'k', json: '"x"', cap: 3 });
    const idx = prepareWrite({ op: 'index', key: 'k', member: 'm', score: -0 });
    expect(idx).toEqual({ op: 'index', key: 'k', member: 'm', score: 0 });
    expect(Object.is((idx as { score: number }).score, 0)).toBe(true);
    expect(prepareWrite({ op: 'unindex', key: 'k', member: 'm' })).toEqual({ op: 'unindex', key: 'k', member: 'm' });
  });
  it('refuses bad fields of each op', () => {
    const bad: unknown[] = [
      { op: 'set', key: 1, value: 1 },
      { op: 'set', key: 'k', value: undefined },
      { op: 'set', key: 'k', value: 1, ttlMs: 0 },
      { op: 'del', key: null },
      { op: 'push', key: 'k', value: 1, cap: 0 },
      { op: 'push', key: 2, value: 1, cap: 1 },
      { op: 'push', key: 'k', value: undefined, cap: 1 },
      { op: 'index', key: 'k', member: 1, score: 1 },
      { op: 'index', key: 3, member: 'm', score: 1 },
      { op: 'index', key: 'k', member: 'm', score: NaN },
      { op: 'unindex', key: 'k', member: 1 },
      { op: 'unindex', key: 1, member: 'm' },
    ];
    for (const w of bad) expect(() => prepareWrite(w as Write), JSON.stringify(w)).toThrow();
    expect(() => prepareWrite({ op: 'del', key: null } as unknown as Write)).toThrow('key must be a string');
    expect(() => prepareWrite({ op: 'unindex', key: 'k', member: 1 } as unknown as Write)).toThrow('member must be a string');
    expect(() => prepareWrite({ op: 'index', key: 'k', member: 2 } as unknown as Write)).toThrow('member must be a string');
  });
  it('refuses what is not a write, naming an unknown op', () => {
    expect(() => prepareWrite(null as unknown as Write)).toThrow(new TypeError('write must be an object'));
    expect(() => prepareWrite('set' as unknown as Write)).toThrow(new TypeError('write must be an object'));
    expect(() => prepareWrite({ op: 'drop', key: 'k' } as unknown as Write)).toThrow(new TypeError('unknown write op "drop"'));
    expect(() => prepareWrite({ key: 'k' } as unknown as Write)).toThrow(new TypeError('unknown write op undefined'));
  });
});
