import { z } from 'zod';
import { AppError, notFound } from '../errors.js';
import { mergedIndexCount, mergedIndexRange, type Json, type Store } from '../store/port.js';
import { memberIdSchema, parseInput } from './inputs.js';
import { K } from './keys.js';
import { ECOSYSTEM_CATEGORIES, coveragePct, toWire, type Split } from './plan.js';
import { counterValue, readAggregates, type Aggregates } from './aggregates.js';
import { decodeList } from '../store/codec.js';
import { ecoCursorCodec, ecoEntryCodec, ledgerEntryCodec, memberCodec } from './codecs.js';
import { ecoEntryWire, entryWire, iso, splitWire, type EcoCursor, type MemberRecord } from './records.js';

/**
 * Reading the ledgers and pools (reward ledger, ecosystem ledger and its sync payload, reserve
 * pool). Their movements are written by movements.ts, inside the balance change's own update.
 * Both ledgers are numbered 1, 2, 3, ... in commit order without gaps (each movement draws its
 * numbers from the counters inside its commit), so a page of either is a range of numbers.
 */

/** Sequence numbers from `top` down, at most `limit` of them, none below 1. */
const downFrom = (top: number, limit: number): number[] =>
  Array.from({ length: Math.max(0, Math.min(limit, top)) }, (_, i) => top - i);

export interface ListOptions {
  /** At most this many entries (default 100, at most 1000). */
  limit?: number;
  /** Entries with a sequence number below this one (paging backwards). */
  before?: number;
}

export const NOTE_NO_SHORTFALL =
  'no maturity shortfall: nothing to cover yet (coverage is undefined, reported as null)';

export const clampLimit = (n: number | undefined, def = 100, max = 1000) =>
  Number.isInteger(n) && (n as number) > 0 ? Math.min(n as number, max) : def;

/** A member id from the caller, or a 400 invalid_id. */
const idInput = z.object({ id: memberIdSchema });
export const checkId = (id: string): string => parseInput(idInput, { id }).id;

/**
 * Stored values by seq: each from the ledger aggregate's key, or else from the key of the layout
 * before it (entries written before keep their keys).
 */
async function bySeq(store: Store, seqs: number[], key: (seq: number) => string, oldKey: (seq: number) => string): Promise<(Json | undefined)[]> {
  const values = await store.getMany(seqs.map(key));
  const missing = seqs.filter((_, i) => values[i] === undefined);
  if (missing.length === 0) return values;
  const old = await store.getMany(missing.map(oldKey));
  let j = 0;
  return values.map((v) => (v === undefined ? old[j++] : v));
}

/** A member's ledger index: the ledger aggregate's and the one of before it, merged. */
const memberLedgers = (id: string): string[] => [K.memberLedger(id), K.old.memberLedger(id)];

/** The reward ledger, newest first; with `member`, that member's entries only. */
export async function readRewardLedger(store: Store, opts: ListOptions & { member?: string } = {}) {
  const limit = clampLimit(opts.limit);
  if (opts.member !== undefined) {
    const member = memberCodec.decode(await store.get(K.member(checkId(opts.member))));
    if (!member) throw notFound('member_not_found', `no member ${opts.member}`);
    const idx = await mergedIndexRange(store, memberLedgers(member.id), {
      reverse: true,
      limit,
      ...(opts.before !== undefined ? { max: opts.before - 1 } : {}),
    });
    const [entries, totals] = await Promise.all([
      bySeq(store, idx.map((e) => e.score), K.entry, K.old.entry),
      memberTotals(store, member),
    ]);
    return ledgerPage(entries, totals, limit);
  }
  const agg = await readAggregates(store);
  const last = agg.credits + agg.exchanges;
  const top = opts.before === undefined ? last : Math.min(last, opts.before - 1);
  const entries = await bySeq(store, downFrom(top, limit), K.entry, K.old.entry);
  return ledgerPage(entries, globalTotals(agg), limit);
}

function ledgerPage<T>(values: (Json | undefined)[], totals: T, limit: number) {
  const list = decodeList(ledgerEntryCodec, values).map(entryWire);
  return {
    totals,
    entries: list,
    next_before: list.length === limit ? list[list.length - 1]!.seq : null,
  };
}

function globalTotals(a: Aggregates) {
  return {
    entries: a.credits + a.exchanges,
    credits: a.credits,
    exchanges: a.exchanges,
    units: a.units,
    ru_earned: toWire(a.ruEarned),
    ru_burned: toWire(a.ruBurned),
    cu_minted: toWire(a.ruBurned),
    ru_outstanding: toWire(a.ruEarned - a.ruBurned),
  };
}

/**
 * One member's totals, from the member record: RU only leaves a balance by exchange into CU at
 * 1:1, so burned = minted = cu and earned = ru + cu; units are the member's kc.
 */
async function memberTotals(store: Store, m: MemberRecord) {
  return {
    member: m.id,
    entries: await mergedIndexCount(store, memberLedgers(m.id)),
    units: m.kc,
    ru_earned: toWire(m.ru + m.cu),
    ru_burned: toWire(m.cu),
    cu_minted: toWire(m.cu),
    ru_outstanding: toWire(m.ru),
  };
}

/** The ecosystem ledger: split, totals per category, realizable value, recent entries. */
export async function readEcosystemLedger(store: Store, split: Split, opts: ListOptions = {}) {
  const limit = clampLimit(opts.limit);
  const [agg, cursor] = await Promise.all([readAggregates(store), store.get(K.ecoCursor).then(ecoCursorCodec.decode)]);
  const e = agg.eco;
  const top = opts.before === undefined ? agg.credits : Math.min(agg.credits, opts.before - 1);
  const entries = decodeList(ecoEntryCodec, await bySeq(store, downFrom(top, limit), K.ecoEntry, K.old.ecoEntry)).map(ecoEntryWire);
  return {
    split_pct: { ...split },
    totals: splitWire(e),
    total: toWire(e.total),
    realizable: toWire(e.total - e.infrastructure),
    entries_count: agg.credits,
    sync_cursor: { seq: cursor?.seq ?? 0, at: cursor?.at == null ? null : iso(cursor.at) },
    entries,
    next_before: entries.length === limit ? entries[entries.length - 1]!.seq : null,
  };
}

/**
 * The synchronisation payload for the value service: every ecosystem entry after the sync
 * cursor (at most `limit`, oldest first), the cumulative totals, and the totals of the entries
 * carried. Read-only: after the value service accepted it, call markSynced(payload.cursor.to).
 */
export async function buildSyncPayload(store: Store, split: Split, now: number, opts: { limit?: number } = {}) {
  const limit = clampLimit(opts.limit, 1000, 10000);
  const [agg, cursor] = await Promise.all([readAggregates(store), store.get(K.ecoCursor).then(ecoCursorCodec.decode)]);
  const e = agg.eco;
  const from = cursor?.seq ?? 0;
  const seqs = Array.from({ length: Math.max(0, Math.min(limit, agg.credits - from)) }, (_, i) => from + 1 + i);
  const entries = decodeList(ecoEntryCodec, await bySeq(store, seqs, K.ecoEntry, K.old.ecoEntry));
  const carried = { service: 0, module: 0, content: 0, infrastructure: 0 };
  for (const x of entries) for (const k of ECOSYSTEM_CATEGORIES) carried[k] += x.categories[k];
  const to = entries.length ? entries[entries.length - 1]!.seq : from;
  return {
    source: 'maru-reward',
    version: '1.0',
    generated_at: iso(now),
    period: { from: cursor?.at == null ? null : iso(cursor.at), to: iso(now) },
    cursor: { from, to, more: to < agg.credits },
    split_pct: { ...split },
    totals: splitWire(e),
    total: toWire(e.total),
    realizable: toWire(e.total - e.infrastructure),
    period_totals: splitWire(carried),
    period_total: toWire(carried.service + carried.module + carried.content + carried.infrastructure),
    entries: entries.map(ecoEntryWire),
  };
}

/** Moves the sync cursor forward to `seq` (never backwards, never past the last entry). */
export async function markSynced(store: Store, seq: number, now: number) {
  return store.update([K.ecoCursor, K.n.credits], ([c, credits]) => {
    const cur = ecoCursorCodec.decode(c) ?? { seq: 0, at: null };
    const last = counterValue(credits);
    if (!Number.isInteger(seq) || seq < 0 || seq > last) {
      throw new AppError('invalid', 'invalid_cursor', `cursor must be an integer from 0 to ${last}`, { last });
    }
    if (seq <= cur.seq) return { writes: [], result: { seq: cur.seq, advanced: false } };
    const next: EcoCursor = { seq, at: now };
    return { writes: [{ op: 'set', key: K.ecoCursor, value: ecoCursorCodec.encode(next) }], result: { seq, advanced: true } };
  });
}

/** The reserve pool: balance, exchange lots, maturity obligation and shortfall, coverage rates. */
export async function readReservePool(store: Store) {
  const a = await readAggregates(store);
  // the reserve receives the reserve share of every credit: as much as the RU earned
  const balance = a.ruEarned;
  const lotsCu = a.ruBurned;
  const realizable = a.eco.total - a.eco.infrastructure;
  const shortfall = Math.max(0, a.obligation - lotsCu);
  const reserveCov = coveragePct(balance, shortfall);
  const combinedCov = coveragePct(balance + realizable, shortfall);
  return {
    balance: toWire(balance),
    credits: a.credits,
    lots: a.exchanges,
    lots_cu: toWire(lotsCu),
    maturity_obligation: toWire(a.obligation),
    maturity_shortfall: toWire(shortfall),
    ecosystem_realizable: toWire(realizable),
    reserve_coverage_pct: reserveCov,
    combined_coverage_pct: combinedCov,
    note: shortfall === 0 ? NOTE_NO_SHORTFALL : null,
    by_stage: Object.entries(a.byStage)
      .sort(([x], [y]) => (x < y ? -1 : 1))
      .map(([stage, s]) => ({ stage, lots: s.lots, cu: toWire(s.cu), maturity_obligation: toWire(s.obligation) })),
  };
}
