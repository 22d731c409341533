import { ECOSYSTEM_CATEGORIES, toWire, type Split, type StageCode } from './plan.js';

/**
 * Stored records of the reward plan and their wire forms. Every amount field of a stored record is
 * integer hundredths; the wire form divides by 100. Times are stored as epoch milliseconds and
 * sent as ISO 8601 strings.
 */

/** The member record: exactly eight fields. */
export type MemberRecord = {
  id: string;
  name: string;
  grade: number;
  grade_name: string;
  kc: number;
  ru: number;
  cu: number;
  /** Cumulative excess added value (sum of v - 100 over the member's works). */
  excess: number;
};

export type MemberMeta = { zone: string; public_key: string | null; created_at: number };

export type ZoneRecord = {
  id: string;
  country: string;
  lang: string;
  name: string;
  /** Normalised name (the zone's identity with country and lang). */
  key: string;
  members: number;
  created_at: number;
};

/** Units of one member in one KST calendar month, with the units of each day. */
export type SessionRecord = { month: string; units: number; days: { [date: string]: number } };

export type CreditEntry = {
  seq: number;
  id: string;
  at: number;
  member: string;
  kind: 'credit';
  ru: number;
  cu: null;
  stage: StageCode;
  coin_pct: number;
  kc: number;
  v: number;
  grade: number;
  grade_pct: number;
  new_grade: number;
  create_3x: number;
  member_share: number;
  ecosystem_share: number;
  reserve_share: number;
};

export type ExchangeEntry = {
  seq: number;
  id: string;
  at: number;
  member: string;
  kind: 'exchange';
  ru: number;
  cu: number;
  stage: StageCode;
  coin_pct: number;
  maturity_value: number;
};

export type LedgerEntry = CreditEntry | ExchangeEntry;

export type EcoEntry = {
  seq: number;
  /** The credit this share came from. */
  id: string;
  ledger_seq: number;
  member: string;
  at: number;
  amount: number;
  categories: Split;
};

export type EcoCursor = { seq: number; at: number | null };

export const iso = (ms: number): string => new Date(ms).toISOString();

export const splitWire = (s: Split) => {
  const out: { [k: string]: number } = {};
  for (const k of ECOSYSTEM_CATEGORIES) out[k] = toWire(s[k]);
  return out as { service: number; module: number; content: number; infrastructure: number };
};

export function memberWire(m: MemberRecord) {
  return {
    id: m.id,
    name: m.name,
    grade: m.grade,
    grade_name: m.grade_name,
    kc: m.kc,
    ru: toWire(m.ru),
    cu: toWire(m.cu),
    excess: m.excess,
    score: m.kc + m.excess,
  };
}

export function zoneWire(z: ZoneRecord, capacity: number) {
  return {
    id: z.id,
    country: z.country,
    lang: z.lang,
    name: z.name,
    members: z.members,
    capacity,
    created_at: iso(z.created_at),
  };
}

export function entryWire(e: LedgerEntry) {
  const head = {
    seq: e.seq,
    id: e.id,
    at: iso(e.at),
    member: e.member,
    kind: e.kind,
    ru: toWire(e.ru),
    cu: e.kind === 'credit' ? null : toWire(e.cu),
    stage: e.stage,
    coin_pct: e.coin_pct,
  };
  if (e.kind === 'credit') {
    return {
      ...head,
      kind: e.kind,
      kc: e.kc,
      v: e.v,
      grade: e.grade,
      grade_pct: e.grade_pct,
      new_grade: e.new_grade,
      create_3x: toWire(e.create_3x),
      member_share: toWire(e.member_share),
      ecosystem_share: toWire(e.ecosystem_share),
      reserve_share: toWire(e.reserve_share),
    };
  }
  return { ...head, kind: e.kind, maturity_value: toWire(e.maturity_value) };
}

export function ecoEntryWire(e: EcoEntry) {
  return {
    seq: e.seq,
    id: e.id,
    ledger_seq: e.ledger_seq,
    member: e.member,
    at: iso(e.at),
    amount: toWire(e.amount),
    categories: splitWire(e.categories),
  };
}
