import type { Json } from '../store/port.js';
import type { CreditEntry, EcoCursor, EcoEntry, ExchangeEntry, LedgerEntry, MemberMeta, MemberRecord, SessionRecord, ZoneRecord } from './records.js';

/**
 * One codec per stored record family of the reward plan: `encode` gives the stored JSON (the
 * record types are plain JSON data, so this is checked by the compiler, not cast), `decode` reads a
 * stored value back: undefined when absent, the record when every field has its type, and a thrown
 * StoredRecordError when the store holds something else (never a silently wrong record).
 */

export class StoredRecordError extends Error {
  constructor(family: string, field?: string) {
    super(`stored ${family} record is malformed${field === undefined ? '' : ` (field ${field})`}`);
    this.name = 'StoredRecordError';
  }
}

type Field = (v: Json | undefined) => boolean;
type Obj = { [key: string]: Json };

const str: Field = (v) => typeof v === 'string';
const int: Field = (v) => typeof v === 'number' && Number.isSafeInteger(v);
const num: Field = (v) => typeof v === 'number' && Number.isFinite(v);
const strOrNull: Field = (v) => v === null || typeof v === 'string';
const intOrNull: Field = (v) => v === null || int(v);
const isObj = (v: Json | undefined): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const intMap: Field = (v) => isObj(v) && Object.values(v).every(int);
const split: Field = (v) => isObj(v) && ['service', 'module', 'content', 'infrastructure'].every((k) => int(v[k]));

export interface Codec<T> {
  encode(record: T): Json;
  decode(value: Json | undefined): T | undefined;
}

function codec<T extends Obj>(family: string, fields: { [K in keyof T & string]: Field }, check?: (v: Obj) => boolean): Codec<T> {
  const entries = Object.entries(fields) as [string, Field][];
  return {
    encode: (record) => record,
    decode(value) {
      if (value === undefined) return undefined;
      if (!isObj(value)) throw new StoredRecordError(family);
      for (const [name, ok] of entries) if (!ok(value[name])) throw new StoredRecordError(family, name);
      if (check && !check(value)) throw new StoredRecordError(family);
      return value as T;
    },
  };
}

export const memberCodec = codec<MemberRecord>('member', { id: str, name: str, grade: int, grade_name: str, kc: int, ru: int, cu: int, excess: int });
export const memberMetaCodec = codec<MemberMeta>('member meta', { zone: str, public_key: strOrNull, created_at: num });
export const zoneCodec = codec<ZoneRecord>('zone', { id: str, country: str, lang: str, name: str, key: str, members: int, created_at: num });
export const sessionCodec = codec<SessionRecord>('work session', { month: str, units: int, days: intMap });
export const ecoEntryCodec = codec<EcoEntry>('ecosystem entry', { seq: int, id: str, ledger_seq: int, member: str, at: num, amount: int, categories: split });
export const ecoCursorCodec = codec<EcoCursor>('sync cursor', { seq: int, at: (v) => v === null || num(v) });

const entryHead = { seq: int, id: str, at: num, member: str, ru: int, stage: str, coin_pct: num };
const creditCodec = codec<CreditEntry>(
  'credit entry',
  { ...entryHead, kind: (v) => v === 'credit', cu: (v) => v === null, kc: int, v: int, grade: int, grade_pct: num, new_grade: int, create_3x: int, member_share: int, ecosystem_share: int, reserve_share: int },
);
const exchangeCodec = codec<ExchangeEntry>('exchange entry', { ...entryHead, kind: (v) => v === 'exchange', cu: intOrNull, maturity_value: int });

/** A reward ledger entry: a credit or an exchange, told apart by `kind`. */
export const ledgerEntryCodec: Codec<LedgerEntry> = {
  encode: (e) => (e.kind === 'credit' ? creditCodec.encode(e) : exchangeCodec.encode(e)),
  decode(value) {
    if (value === undefined) return undefined;
    return isObj(value) && value.kind === 'exchange' ? exchangeCodec.decode(value) : creditCodec.decode(value);
  },
};

/** Decodes each value, leaving out the absent ones. */
export function decodeAll<T>(c: Codec<T>, values: (Json | undefined)[]): T[] {
  const out: T[] = [];
  for (const v of values) {
    const rec = c.decode(v);
    if (rec !== undefined) out.push(rec);
  }
  return out;
}
