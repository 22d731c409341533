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

export function codec<T>(name: string, mark: (r: { [k: string]: Json }) => boolean = () => true): Codec<T> {
  const decode = (value: Json | undefined): T | undefined => {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value) || !mark(value)) {
      throw new AppError('internal', 'corrupt_record', `a stored ${name} is not readable`);
    }
    return value as unknown as T;
  };
  return {
    name,
    encode: (value) => value as unknown as Json,
    decode,
    decodeMany: (values) => values.map(decode),
  };
}

/** The codec of a list whose entries are one family (pushed entries, ranges). */
export const decodeList = <T>(c: Codec<T>, values: readonly Json[]): T[] => values.map((v) => c.decode(v)!).filter((v) => v !== undefined);
