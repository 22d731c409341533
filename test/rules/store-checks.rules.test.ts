import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkCap,
  checkDraw,
  checkInt,
  checkKey,
  checkPlan,
  checkScore,
  checkTtl,
  digits,
  encodeJson,
  fillWrite,
  jsonPieces,
  prepareWrite,
  splitDrawn,
} from '../../src/store/checks.js';
import { drawn, type Write } from '../../src/store/port.js';

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

// ---- numbers drawn in the commit: placeholders split out of a write's strings and filled in ----

describe('checkPlan and checkDraw', () => {
  it('a plan is an object with an array of writes', () => {
    const plan = { writes: [], result: 1 };
    expect(checkPlan(plan)).toBe(plan);
    for (const bad of [undefined, null, 5, 'x', {}, { writes: {} }, { writes: 'w' }]) {
      expect(() => checkPlan(bad as never), JSON.stringify(bad)).toThrow(new TypeError('update fn must return { writes, result }'));
    }
  });
  it('the draw is an array of keys; no options, no draw', () => {
    expect(checkDraw(undefined)).toBeUndefined();
    expect(checkDraw({ draw: [] })).toEqual([]);
    expect(checkDraw({ draw: ['a', 'b', 'a'] })).toEqual(['a', 'b', 'a']);
    for (const bad of [null, {}, { draw: 'a' }, { draw: { 0: 'a' } }]) {
      expect(() => checkDraw(bad as never), JSON.stringify(bad)).toThrow(new TypeError('draw must be an array of keys'));
    }
    expect(() => checkDraw({ draw: ['a', 1 as never] })).toThrow(new TypeError('draw key must be a string'));
  });
});

describe('splitDrawn', () => {
  it('plain text has no pieces', () => {
    expect(splitDrawn('entry:1', 2)).toBeUndefined();
    expect(splitDrawn('', 2)).toBeUndefined();
    // a NUL and # that do not make a placeholder
    expect(splitDrawn('a\u0000#x\u0000', 2)).toBeUndefined();
  });
  it('splits text around each placeholder, with its counter and width', () => {
    expect(splitDrawn(`entry:${drawn(0)}`, 1)).toEqual(['entry:', { draw: 0, width: 0 }]);
    expect(splitDrawn(`${drawn(1, 4)}:tail`, 2)).toEqual([{ draw: 1, width: 4 }, ':tail']);
    expect(splitDrawn(`${drawn(0)}${drawn(1)}`, 2)).toEqual([{ draw: 0, width: 0 }, { draw: 1, width: 0 }]);
    expect(splitDrawn(`a${drawn(0)}b${drawn(0, 20)}c`, 1)).toEqual(['a', { draw: 0, width: 0 }, 'b', { draw: 0, width: 20 }, 'c']);
    expect(splitDrawn(drawn(0), 1)).toEqual([{ draw: 0, width: 0 }]);
    // counters and widths of more than one digit
    expect(splitDrawn(`x${drawn(12, 15)}y`, 13)).toEqual(['x', { draw: 12, width: 15 }, 'y']);
    expect(jsonPieces({ n: drawn(12) }, 13)).toEqual(['{"n":', { draw: 12, width: 0 }, '}']);
    expect(jsonPieces({ n: drawn(12, 15) }, 13)).toEqual(['{"n":"', { draw: 12, width: 15 }, '"}']);
  });
  it('a placeholder naming no counter of the draw, or wider than 20, is refused', () => {
    expect(() => splitDrawn(drawn(1), 1)).toThrow(new RangeError("placeholder drawn(1) names no counter of the update's draw"));
    expect(() => splitDrawn(drawn(0), 0)).toThrow(/drawn\(0\) names no counter/);
    expect(splitDrawn(drawn(1), 2)).toEqual([{ draw: 1, width: 0 }]);
    expect(() => splitDrawn('\u0000#0.21\u0000', 1)).toThrow(new RangeError('placeholder width must be at most 20'));
    expect(splitDrawn('\u0000#0.20\u0000', 1)).toEqual([{ draw: 0, width: 20 }]);
  });
});

describe('jsonPieces', () => {
  it('a value without placeholders is its JSON text', () => {
    expect(jsonPieces({ a: 1, b: 'x' }, 1)).toBe('{"a":1,"b":"x"}');
    // text that reads like a placeholder after an escaped backslash is not one: the value holds a
    // backslash, "u0000#0" and a NUL, whose JSON text is \\u0000#0\u0000
    const lookalike = '\\u0000#0\u0000';
    expect(jsonPieces(lookalike, 1)).toBe(JSON.stringify(lookalike));
    expect(jsonPieces([lookalike, lookalike], 1)).toBe(JSON.stringify([lookalike, lookalike]));
    // three backslashes before it: one escaped pair and the placeholder's own
    expect(jsonPieces(`\\\\${drawn(0)}`, 1)).toEqual(['"\\\\\\\\', { draw: 0, width: 0 }, '"']);
    // a lookalike and then a real placeholder in the same text
    expect(jsonPieces([lookalike, drawn(0)], 1)).toEqual([`[${JSON.stringify(lookalike)},`, { draw: 0, width: 0 }, ']']);
  });
  it('a string that is exactly a placeholder without width becomes the bare number; inside text or with a width it stays text', () => {
    expect(jsonPieces({ n: drawn(0) }, 1)).toEqual(['{"n":', { draw: 0, width: 0 }, '}']);
    expect(jsonPieces([drawn(0)], 1)).toEqual(['[', { draw: 0, width: 0 }, ']']);
    expect(jsonPieces(drawn(0), 1)).toEqual([{ draw: 0, width: 0 }]);
    expect(jsonPieces({ n: drawn(0, 3) }, 1)).toEqual(['{"n":"', { draw: 0, width: 3 }, '"}']);
    expect(jsonPieces({ n: `#${drawn(0)}` }, 1)).toEqual(['{"n":"#', { draw: 0, width: 0 }, '"}']);
    expect(jsonPieces({ n: `${drawn(0)}!` }, 1)).toEqual(['{"n":"', { draw: 0, width: 0 }, '!"}']);
  });
  it('an object key that is a placeholder stays a string', () => {
    expect(jsonPieces({ [drawn(0)]: 1 }, 1)).toEqual(['{"', { draw: 0, width: 0 }, '":1}']);
  });
  it('a placeholder after an escaped backslash is still one; a quote after an escaped backslash does not open a string', () => {
    // the value \ followed by a placeholder: the backslash pair is text, the placeholder is drawn
    expect(jsonPieces(`\\${drawn(0)}`, 1)).toEqual(['"\\\\', { draw: 0, width: 0 }, '"']);
    // the value "<placeholder>" with its quotes as text: an escaped quote opens no string
    expect(jsonPieces(`"${drawn(0)}"`, 1)).toEqual(['"\\"', { draw: 0, width: 0 }, '\\""']);
  });
  it('the placeholders are checked against the draw', () => {
    expect(() => jsonPieces({ n: drawn(2) }, 2)).toThrow(/drawn\(2\) names no counter/);
  });
});

describe('digits and fillWrite', () => {
  it('pads with zeros to the width, after the sign', () => {
    expect(digits(7, 0)).toBe('7');
    expect(digits(7, 3)).toBe('007');
    expect(digits(1234, 3)).toBe('1234');
    expect(digits(-7, 3)).toBe('-07');
    expect(digits(-7, 0)).toBe('-7');
    expect(digits(0, 2)).toBe('00');
  });
  it('fills every kind of write, and reads a drawn score as a number', () => {
    const nums = [5, 42];
    const fill = (w: Write) => fillWrite(prepareWrite(w, 2), nums);
    expect(fill({ op: 'set', key: `e:${drawn(0)}`, value: { n: drawn(1), s: drawn(0, 3) } })).toEqual({ op: 'set', key: 'e:5', json: '{"n":42,"s":"005"}', ttlMs: undefined });
    expect(fill({ op: 'set', key: 'plain', value: 1, ttlMs: 10 })).toEqual({ op: 'set', key: 'plain', json: '1', ttlMs: 10 });
    expect(fill({ op: 'push', key: `l:${drawn(1)}`, value: drawn(0), cap: 3 })).toEqual({ op: 'push', key: 'l:42', json: '5', cap: 3 });
    expect(fill({ op: 'index', key: `i:${drawn(0)}`, member: drawn(1, 4), score: drawn(1) as never })).toEqual({ op: 'index', key: 'i:5', member: '0042', score: 42 });
    expect(fill({ op: 'index', key: 'i', member: 'm', score: 2.5 })).toEqual({ op: 'index', key: 'i', member: 'm', score: 2.5 });
    expect(fill({ op: 'unindex', key: `i:${drawn(0)}`, member: `m${drawn(1)}` })).toEqual({ op: 'unindex', key: 'i:5', member: 'm42' });
    expect(fill({ op: 'del', key: `d:${drawn(0)}` })).toEqual({ op: 'del', key: 'd:5' });
    expect(fill({ op: 'incr', key: `c:${drawn(1)}`, by: 2 })).toEqual({ op: 'incr', key: 'c:42', by: 2 });
  });
  it('a drawn score is exactly one placeholder', () => {
    const bad = (score: string) => () => prepareWrite({ op: 'index', key: 'i', member: 'm', score: score as never }, 1);
    expect(bad(`1${drawn(0)}`)).toThrow(new RangeError('score must be a finite number or a placeholder'));
    expect(bad(`${drawn(0)}${drawn(0)}`)).toThrow(new RangeError('score must be a finite number or a placeholder'));
    expect(bad('12')).toThrow(new RangeError('score must be a finite number or a placeholder'));
    // without a draw, a string score is refused as any non-number
    expect(() => prepareWrite({ op: 'index', key: 'i', member: 'm', score: drawn(0) as never })).toThrow(new RangeError('score must be a finite number'));
  });
  it('an incr names its step when it is not an integer', () => {
    expect(() => prepareWrite({ op: 'incr', key: 'c', by: 1.5 })).toThrow(new RangeError('by must be an integer'));
    expect(() => prepareWrite({ op: 'incr', key: 'c', by: 1.5 }, 1)).toThrow(new RangeError('by must be an integer'));
  });
  it('without a draw a placeholder is plain text', () => {
    expect(prepareWrite({ op: 'set', key: `k${drawn(0)}`, value: drawn(0) })).toEqual({ op: 'set', key: `k${drawn(0)}`, json: JSON.stringify(drawn(0)), ttlMs: undefined });
  });
});
