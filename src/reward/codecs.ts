import { codec, F, type Codec, type FieldCheck } from '../store/codec.js';
import type { Json } from '../store/port.js';
import type { CreditEntry, EcoCursor, EcoEntry, ExchangeEntry, LedgerEntry, MemberMeta, MemberRecord, SessionRecord, ZoneRecord } from './records.js';

/**
 * One codec per stored record family of the reward plan (src/store/codec.ts): `decode` gives
 * undefined when absent, the record when every field has its type, and refuses anything else as a
 * corrupt record naming the first bad field (never a silently wrong record).
 */

const { str, int, num, strOrNull, intOrNull } = F;
const split: FieldCheck = (v) => F.obj(v) && ['service', 'module', 'content', 'infrastructure'].every((k) => int(v[k]));

export const memberCodec = codec<MemberRecord>('member', { fields: { id: str, name: str, grade: int, grade_name: str, kc: int, ru: int, cu: int, excess: int } });
export const memberMetaCodec = codec<MemberMeta>('member meta', { fields: { zone: str, public_key: strOrNull, created_at: num } });
export const zoneCodec = codec<ZoneRecord>('zone', { fields: { id: str, country: str, lang: str, name: str, key: str, members: int, created_at: num } });
export const sessionCodec = codec<SessionRecord>('work session', { fields: { month: str, units: int, days: F.intMap } });
export const ecoEntryCodec = codec<EcoEntry>('ecosystem entry', { fields: { seq: int, id: str, ledger_seq: int, member: str, at: num, amount: int, categories: split } });
export const ecoCursorCodec = codec<EcoCursor>('sync cursor', { fields: { seq: int, at: (v) => v === null || num(v) } });

const entryHead = { seq: int, id: str, at: num, member: str, ru: int, stage: str, coin_pct: num };
const creditCodec = codec<CreditEntry>('credit entry', {
  fields: { ...entryHead, kind: (v) => v === 'credit', cu: (v) => v === null, kc: int, v: int, grade: int, grade_pct: num, new_grade: int, create_3x: int, member_share: int, ecosystem_share: int, reserve_share: int },
});
const exchangeCodec = codec<ExchangeEntry>('exchange entry', { fields: { ...entryHead, kind: (v) => v === 'exchange', cu: intOrNull, maturity_value: int } });

/** A reward ledger entry: a credit or an exchange, told apart by `kind`. */
const decodeEntry = (value: Json | undefined): LedgerEntry | undefined =>
  F.obj(value) && value.kind === 'exchange' ? exchangeCodec.decode(value) : creditCodec.decode(value);
export const ledgerEntryCodec: Codec<LedgerEntry> = {
  name: 'ledger entry',
  encode: (e) => (e.kind === 'credit' ? creditCodec.encode(e) : exchangeCodec.encode(e)),
  decode: decodeEntry,
  decodeMany: (values) => values.map(decodeEntry),
};
