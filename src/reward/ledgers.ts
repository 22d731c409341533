import { z } from 'zod';
import { AppError, notFound } from '../errors.js';
import type { Store } from '../store/port.js';
import { memberIdSchema, parseInput } from './inputs.js';
import { K } from './keys.js';
import { ECOSYSTEM_CATEGORIES, coveragePct, toWire, type Split } from './plan.js';
import {
  EMPTY_ECO,
  EMPTY_RESERVE,
  EMPTY_TOTALS,
  ecoEntryWire,
  entryWire,
  iso,
  json,
  splitWire,
  type EcoCursor,
  type EcoEntry,
  type EcoTotals,
  type LedgerEntry,
  type MemberRecord,
  type ReserveRecord,
  type Totals,
} from './records.js';

/**
 * Reading the ledgers and pools (reward ledger, ecosystem ledger and its sync payload, reserve
 * pool). Their movements are written by movements.ts, inside the balance change's own update.
 */

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

/** The reward ledger, newest first; with `member`, that member's entries only. */
export async function readRewardLedger(store: Store, opts: ListOptions & { member?: string } = {}) {
  const limit = clampLimit(opts.limit);
  const key = opts.member === undefined ? K.ledger : K.memberLedger(checkId(opts.member));
  const member = opts.member === undefined ? undefined : await store.get<MemberRecord>(K.member(opts.member));
  if (opts.member !== undefined && !member) {
    throw notFound('member_not_found', `no member ${opts.member}`);
  }
  const idx = await store.indexRange(key, {
    reverse: true,
    limit,
    ...(opts.before !== undefined ? { max: opts.before - 1 } : {}),
  });
  const [entries, totals] = await Promise.all([
    store.getMany<LedgerEntry>(idx.map((e) => K.entry(e.score))),
    member ? memberTotals(store, member) : globalTotals(store),
  ]);
  const list = entries.filter((e): e is LedgerEntry => e !== undefined).map(entryWire);
  return {
    totals,
    entries: list,
    next_before: list.length === limit ? list[list.length - 1]!.seq : null,
  };
}

async function globalTotals(store: Store) {
  const t = (await store.get<Totals>(K.totals)) ?? EMPTY_TOTALS;
  return {
    entries: t.seq,
    credits: t.credits,
    exchanges: t.exchanges,
    units: t.units,
    ru_earned: toWire(t.ru_earned),
    ru_burned: toWire(t.ru_burned),
    cu_minted: toWire(t.cu_minted),
    ru_outstanding: toWire(t.ru_earned - t.ru_burned),
  };
}

/**
 * One member's totals, from the member record: RU only leaves a balance by exchange into CU at
 * 1:1, so burned = minted = cu and earned = ru + cu; units are the member's kc.
 */
async function memberTotals(store: Store, m: MemberRecord) {
  return {
    member: m.id,
    entries: await store.indexCount(K.memberLedger(m.id)),
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
  const [eco, cursor, idx] = await Promise.all([
    store.get<EcoTotals>(K.eco),
    store.get<EcoCursor>(K.ecoCursor),
    store.indexRange(K.ecoIndex, {
      reverse: true,
      limit,
      ...(opts.before !== undefined ? { max: opts.before - 1 } : {}),
    }),
  ]);
  const e = eco ?? EMPTY_ECO;
  const entries = (await store.getMany<EcoEntry>(idx.map((x) => K.ecoEntry(x.score))))
    .filter((x): x is EcoEntry => x !== undefined)
    .map(ecoEntryWire);
  return {
    split_pct: { ...split },
    totals: splitWire(e),
    total: toWire(e.total),
    realizable: toWire(e.total - e.infrastructure),
    entries_count: e.seq,
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
  const [eco, cursor] = await Promise.all([store.get<EcoTotals>(K.eco), store.get<EcoCursor>(K.ecoCursor)]);
  const e = eco ?? EMPTY_ECO;
  const from = cursor?.seq ?? 0;
  const idx = await store.indexRange(K.ecoIndex, { min: from + 1, limit });
  const entries = (await store.getMany<EcoEntry>(idx.map((x) => K.ecoEntry(x.score)))).filter(
    (x): x is EcoEntry => x !== undefined,
  );
  const carried = { service: 0, module: 0, content: 0, infrastructure: 0 };
  for (const x of entries) for (const k of ECOSYSTEM_CATEGORIES) carried[k] += x.categories[k];
  const to = entries.length ? entries[entries.length - 1]!.seq : from;
  return {
    source: 'maru-reward',
    version: '1.0',
    generated_at: iso(now),
    period: { from: cursor?.at == null ? null : iso(cursor.at), to: iso(now) },
    cursor: { from, to, more: to < e.seq },
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
  return store.update([K.ecoCursor, K.eco], ([c, e]) => {
    const cur = (c as EcoCursor | undefined) ?? { seq: 0, at: null };
    const last = ((e as EcoTotals | undefined) ?? EMPTY_ECO).seq;
    if (!Number.isInteger(seq) || seq < 0 || seq > last) {
      throw new AppError('invalid', 'invalid_cursor', `cursor must be an integer from 0 to ${last}`, { last });
    }
    if (seq <= cur.seq) return { writes: [], result: { seq: cur.seq, advanced: false } };
    const next: EcoCursor = { seq, at: now };
    return { writes: [{ op: 'set', key: K.ecoCursor, value: json(next) }], result: { seq, advanced: true } };
  });
}

/** The reserve pool: balance, exchange lots, maturity obligation and shortfall, coverage rates. */
export async function readReservePool(store: Store) {
  const [r, e] = await store.getMany([K.reserve, K.eco]);
  const reserve = (r as ReserveRecord | undefined) ?? EMPTY_RESERVE;
  const eco = (e as EcoTotals | undefined) ?? EMPTY_ECO;
  const realizable = eco.total - eco.infrastructure;
  const shortfall = Math.max(0, reserve.obligation - reserve.lots_cu);
  const reserveCov = coveragePct(reserve.balance, shortfall);
  const combinedCov = coveragePct(reserve.balance + realizable, shortfall);
  return {
    balance: toWire(reserve.balance),
    credits: reserve.credits,
    lots: reserve.lots,
    lots_cu: toWire(reserve.lots_cu),
    maturity_obligation: toWire(reserve.obligation),
    maturity_shortfall: toWire(shortfall),
    ecosystem_realizable: toWire(realizable),
    reserve_coverage_pct: reserveCov,
    combined_coverage_pct: combinedCov,
    note: shortfall === 0 ? NOTE_NO_SHORTFALL : null,
    by_stage: Object.keys(reserve.by_stage)
      .sort()
      .map((stage) => {
        const s = reserve.by_stage[stage]!;
        return { stage, lots: s.lots, cu: toWire(s.cu), maturity_obligation: toWire(s.obligation) };
      }),
  };
}
