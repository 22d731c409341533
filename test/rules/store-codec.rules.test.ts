import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { codec, F, optional, plain } from '../../src/store/codec.js';
import type { Json } from '../../src/store/port.js';

// The field checks a record family is described with (src/store/codec.ts), each on both sides of
// what it accepts, and the order the corrupt-record error follows.

const table: [keyof typeof F, Json | undefined, boolean][] = [
  ['str', '', true],
  ['str', 'a', true],
  ['str', 1, false],
  ['str', null, false],
  ['str', undefined, false],
  ['int', 0, true],
  ['int', -3, true],
  ['int', Number.MAX_SAFE_INTEGER, true],
  ['int', Number.MAX_SAFE_INTEGER + 1, false],
  ['int', 1.5, false],
  ['int', '1', false],
  ['num', 1.5, true],
  ['num', -0.25, true],
  ['num', Number.POSITIVE_INFINITY, false],
  ['num', Number.NaN, false],
  ['num', '1', false],
  ['strOrNull', null, true],
  ['strOrNull', 'x', true],
  ['strOrNull', undefined, false],
  ['strOrNull', 0, false],
  ['intOrNull', null, true],
  ['intOrNull', 7, true],
  ['intOrNull', 7.5, false],
  ['intOrNull', undefined, false],
  ['obj', {}, true],
  ['obj', { a: 1 }, true],
  ['obj', [], false],
  ['obj', null, false],
  ['obj', 'x', false],
  ['obj', undefined, false],
  ['intMap', {}, true],
  ['intMap', { '2026-11-24': 3, '2026-11-25': 0 }, true],
  ['intMap', { a: 1, b: 1.5 }, false],
  ['intMap', { a: '1' }, false],
  ['intMap', [1, 2], false],
  ['intMap', null, false],
];

describe('field checks', () => {
  it.each(table)('%s(%j) is %s', (check, value, ok) => {
    expect(F[check](value as Json)).toBe(ok);
  });
});

describe('optional(check)', () => {
  it('takes an absent field, and a present one only when it passes the check', () => {
    const s = optional(F.str);
    expect([s(undefined), s('x'), s(null), s(1)]).toEqual([true, true, false, false]);
    const n = optional(F.strOrNull);
    expect([n(undefined), n(null), n(''), n(0)]).toEqual([true, true, true, false]);
  });
});

describe('a family described field by field', () => {
  interface R {
    a: string;
    b: number;
  }
  const family = codec<R>('thing', { fields: { a: F.str, b: F.int } });
  const error = (v: Json): string => {
    try {
      family.decode(v);
      return 'decoded';
    } catch (e) {
      expect(e).toBeInstanceOf(AppError);
      return (e as AppError).message;
    }
  };

  it('checks the fields in their declared order and needs no `also`', () => {
    expect(family.decode({ a: 'x', b: 1 })).toEqual({ a: 'x', b: 1 });
    expect(error({ a: 1, b: 'x' })).toBe('a stored thing is not readable (field a)');
    expect(error({ a: 'x', b: 'x' })).toBe('a stored thing is not readable (field b)');
    expect(error('x')).toBe('a stored thing is not readable');
  });

  it('a family with no mark takes any object', () => {
    const any = codec<{ x?: number }>('any');
    expect(any.decode({})).toEqual({});
    expect(() => any.decode(3)).toThrow('a stored any is not readable');
    expect(any.name).toBe('any');
  });
});

describe('a family of plain values', () => {
  const pointers = plain<string>('pointer', F.str);

  it('hands on a value that passes the check, absent as undefined, and refuses any other', () => {
    expect(pointers.decode('r_1')).toBe('r_1');
    expect(pointers.decode(undefined)).toBeUndefined();
    expect(pointers.decode(null)).toBeUndefined();
    expect(pointers.encode('r_2')).toBe('r_2');
    expect(pointers.decodeMany(['a', undefined])).toEqual(['a', undefined]);
    expect(() => pointers.decode(7)).toThrow('a stored pointer is not readable');
    expect(() => pointers.decode({ id: 'r_1' })).toThrow(expect.objectContaining({ code: 'corrupt_record' }));
    expect(pointers.name).toBe('pointer');
  });
});
