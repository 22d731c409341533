import { AppError } from '../errors.js';
import type { Json } from './port.js';

/**
 * A record family's codec: the one place where a typed record becomes the store's Json and back.
 * Services declare one per family (`const sessions = codec<SessionRecord>('chat session', (r) =>
 * typeof r.state === 'string')`) and read and write through it, instead of casting at every use. A
 * stored value that is not an object with the family's mark is refused as a corrupt record (500,
 * nothing leaked), never handed on half-typed.
 */
export interface Codec<T> {
  readonly name: string;
  encode(value: T): Json;
  decode(value: Json | undefined): T | undefined;
  decodeMany(values: readonly (Json | undefined)[]): (T | undefined)[];
}

type Obj = { [key: string]: Json };

/** A check of one stored field. */
export type FieldCheck = (v: Json | undefined) => boolean;

const obj = (v: Json | undefined): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const str: FieldCheck = (v) => typeof v === 'string';
const int: FieldCheck = (v) => typeof v === 'number' && Number.isSafeInteger(v);
const num: FieldCheck = (v) => typeof v === 'number' && Number.isFinite(v);
const strOrNull: FieldCheck = (v) => v === null || str(v);
const intOrNull: FieldCheck = (v) => v === null || int(v);
/** An object of integers (e.g. units per day). */
const intMap: FieldCheck = (v) => obj(v) && Object.values(v).every(int);

/** Field checks for `codec(name, {fields})`. */
export const F = { str, int, num, strOrNull, intOrNull, obj, intMap };

/** A field that may be absent, and passes `check` when present. */
export const optional =
  (check: FieldCheck): FieldCheck =>
  (v) =>
    v === undefined || check(v);

/**
 * What marks a stored value as one of the family: a predicate over the object, or the check of
 * each named field (then `also`); with fields, the corrupt-record error names the first bad one.
 */
export type Mark<T> = ((r: Obj) => boolean) | { fields: { [K in keyof T & string]-?: FieldCheck }; also?: (r: Obj) => boolean };

export function codec<T>(name: string, mark: Mark<T> = () => true): Codec<T> {
  const corrupt = (field?: string) =>
    new AppError('internal', 'corrupt_record', `a stored ${name} is not readable${field === undefined ? '' : ` (field ${field})`}`);
  const fields = typeof mark === 'function' ? undefined : (Object.entries(mark.fields) as [string, FieldCheck][]);
  const also = typeof mark === 'function' ? mark : mark.also;
  const decode = (value: Json | undefined): T | undefined => {
    if (value === undefined || value === null) return undefined;
    if (!obj(value)) throw corrupt();
    if (fields) for (const [field, ok] of fields) if (!ok(value[field])) throw corrupt(field);
    if (also && !also(value)) throw corrupt();
    return value as unknown as T;
  };
  return {
    name,
    encode: (value) => value as unknown as Json,
    decode,
    decodeMany: (values) => values.map(decode),
  };
}

/**
 * A family of plain stored values (a pointer from a code to an id, a count): the value itself
 * passes `check`, or it is refused as a corrupt record like a record of any other family.
 */
export function plain<T extends Json>(name: string, check: FieldCheck): Codec<T> {
  const decode = (value: Json | undefined): T | undefined => {
    if (value === undefined || value === null) return undefined;
    if (!check(value)) throw new AppError('internal', 'corrupt_record', `a stored ${name} is not readable`);
    return value as T;
  };
  return { name, encode: (value) => value, decode, decodeMany: (values) => values.map(decode) };
}

/** The records of one family among stored values (pushed entries, ranges, getMany), the absent ones left out. */
export const decodeList = <T>(c: Codec<T>, values: readonly (Json | undefined)[]): T[] => values.map((v) => c.decode(v)).filter((v): v is T => v !== undefined);
