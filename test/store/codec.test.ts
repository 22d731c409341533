import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { codec, decodeList, F } from '../../src/store/codec.js';
import type { Json } from '../../src/store/port.js';

interface Owner {
  id: string;
  uses: number;
  tags: string[];
}

describe('record codecs', () => {
  const owners = codec<Owner>('owner', (r) => typeof r.id === 'string' && typeof r.uses === 'number');

  it('round-trips a record and reads absent as undefined', () => {
    const o: Owner = { id: 'a', uses: 2, tags: ['x'] };
    expect(owners.decode(owners.encode(o))).toEqual(o);
    expect(owners.decode(undefined)).toBeUndefined();
    expect(owners.decode(null)).toBeUndefined();
    expect(owners.decodeMany([owners.encode(o), undefined])).toEqual([o, undefined]);
  });

  it('refuses a stored value that is not the family (a corrupt record is a 500, not a half-typed object)', () => {
    const bads: Json[] = [1, 'a', true, [1], { id: 1, uses: 2 }, { id: 'a' }];
    for (const bad of bads) {
      const err = (() => {
        try {
          owners.decode(bad);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(500);
      expect((err as AppError).code).toBe('corrupt_record');
      expect((err as AppError).message).toBe('a stored owner is not readable');
    }
  });

  it('a family described field by field names the first bad field of a corrupt record', () => {
    const typed = codec<Owner>('owner', { fields: { id: F.str, uses: F.int, tags: (v) => Array.isArray(v) }, also: (r) => (r.uses as number) >= 0 });
    expect(typed.decode({ id: 'a', uses: 2, tags: [] })).toEqual({ id: 'a', uses: 2, tags: [] });
    const message = (v: Json) => {
      try {
        typed.decode(v);
        return 'decoded';
      } catch (e) {
        return (e as AppError).code + ': ' + (e as AppError).message;
      }
    };
    expect(message({ id: 'a', uses: 2.5, tags: [] })).toBe('corrupt_record: a stored owner is not readable (field uses)');
    expect(message({ uses: 'x', tags: [] })).toBe('corrupt_record: a stored owner is not readable (field id)');
    expect(message({ id: 'a', uses: 2 })).toBe('corrupt_record: a stored owner is not readable (field tags)');
    expect(message({ id: 'a', uses: -1, tags: [] })).toBe('corrupt_record: a stored owner is not readable');
    expect(message([])).toBe('corrupt_record: a stored owner is not readable');
  });

  it('decodes a list of one family', () => {
    expect(decodeList(owners, [owners.encode({ id: 'a', uses: 0, tags: [] })])).toEqual([{ id: 'a', uses: 0, tags: [] }]);
    expect(() => decodeList(owners, [{ nope: true }])).toThrow(AppError);
    // absent values (a getMany's misses) are left out
    expect(decodeList(owners, [undefined, { id: 'b', uses: 1, tags: [] }, null])).toEqual([{ id: 'b', uses: 1, tags: [] }]);
  });
});
