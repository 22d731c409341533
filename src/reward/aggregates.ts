import type { Json, Store, Write } from '../store/port.js';
import { K } from './keys.js';
import { STAGES, type Split, type StageCode } from './plan.js';

/**
 * The aggregates of the reward plan (ledger totals, ecosystem totals, reserve pool) read from their
 * counters (keys.ts `K.n`), and the one-time upgrades of a store written with an earlier layout
 * (three shared records read and rewritten by every movement; the ledger numbered without its own
 * `entries` counter).
 */

/** A counter's stored value: an integer, absent = 0. */
export function counterValue(v: Json | undefined): number {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new TypeError('reward counter holds a non-integer');
  return v;
}

export type StageLots = { lots: number; cu: number; obligation: number };

export interface Aggregates {
  credits: number;
  exchanges: number;
  units: number;
  ruEarned: number;
  ruBurned: number;
  /** The ecosystem ledger's totals per category (infrastructure takes what the others do not). */
  eco: Split & { total: number };
  obligation: number;
  byStage: Partial<Record<StageCode, StageLots>>;
}

const STAGE_CODES = STAGES.map((s) => s.stage);

const FLAT_KEYS = [
  K.n.credits,
  K.n.exchanges,
  K.n.units,
  K.n.ruEarned,
  K.n.ruBurned,
  K.n.ecoService,
  K.n.ecoModule,
  K.n.ecoContent,
  K.n.obligation,
] as const;

/** Every aggregate, in one read. */
export async function readAggregates(store: Store): Promise<Aggregates> {
  const stageKeys = STAGE_CODES.flatMap((s) => [K.n.stageLots(s), K.n.stageCu(s), K.n.stageObligation(s)]);
  const values = (await store.getMany([...FLAT_KEYS, ...stageKeys])).map(counterValue);
  const [credits, exchanges, units, ruEarned, ruBurned, service, module, content, obligation] = values as [
    number, number, number, number, number, number, number, number, number,
  ];
  const byStage: Aggregates['byStage'] = {};
  STAGE_CODES.forEach((stage, i) => {
    const [lots, cu, ob] = values.slice(FLAT_KEYS.length + 3 * i, FLAT_KEYS.length + 3 * i + 3) as [number, number, number];
    if (lots > 0) byStage[stage] = { lots, cu, obligation: ob };
  });
  return {
    credits,
    exchanges,
    units,
    ruEarned,
    ruBurned,
    eco: { total: ruEarned, service, module, content, infrastructure: ruEarned - service - module - content },
    obligation,
    byStage,
  };
}

/** The RU ever earned (the /stats figure), in one read. */
export async function readRuEarned(store: Store): Promise<number> {
  return counterValue(await store.get(K.n.ruEarned));
}

// ------------------------------------------------------------------------------------------------
// Upgrade from the earlier layout

const num = (o: Json | undefined, field: string): number => {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return 0;
  const v = o[field];
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : 0;
};

/** Both upgrades, in order; a store that needs neither is left alone. Returns whether one ran. */
export async function upgradeLayout(store: Store): Promise<boolean> {
  const moved = await moveToLedger(store);
  const numbered = await countLedgerEntries(store);
  return moved || numbered;
}

const OLD_FLAT = (n: typeof K.n): string[] => [
  n.entries, n.credits, n.exchanges, n.units, n.ruEarned, n.ruBurned, n.ecoService, n.ecoModule, n.ecoContent, n.obligation,
  ...STAGE_CODES.flatMap((s) => [n.stageLots(s), n.stageCu(s), n.stageObligation(s)]),
];

/**
 * The figures of the layouts before the ledger aggregate, moved into its counters in one update of
 * the aggregate, then deleted: the counters `reward:n:*` and the sync cursor `reward:eco:cursor`
 * (no longer written), and the shared records `reward:totals`, `reward:eco`, `reward:reserve` of
 * before the counters (with two indexes the dense numbers made unnecessary). The update records
 * what it moved in the aggregate's `layout` marker, so processes starting together move it once.
 * The entries keep their keys (read by seq from both layouts).
 */
async function moveToLedger(store: Store): Promise<boolean> {
  const L = K.legacy;
  const oldKeys = OLD_FLAT(K.old.n);
  const newKeys = OLD_FLAT(K.n);
  const read = await store.getMany([L.totals, L.eco, L.reserve, K.old.ecoCursor, ...oldKeys]);
  if (read.every((v) => v === undefined)) return false;
  const seen = JSON.stringify(read.map((v) => v ?? null));
  const [t, e, r, cursor, ...old] = read;
  const stages = r !== null && typeof r === 'object' && !Array.isArray(r) ? r.by_stage : undefined;
  const fromLegacy = (key: string): number => {
    const n = K.n;
    const st = (s: StageCode) => (stages !== null && typeof stages === 'object' && !Array.isArray(stages) ? stages[s] : undefined);
    const table: Record<string, number> = {
      [n.credits]: num(t, 'credits'),
      [n.exchanges]: num(t, 'exchanges'),
      [n.units]: num(t, 'units'),
      [n.ruEarned]: num(t, 'ru_earned'),
      [n.ruBurned]: num(t, 'ru_burned'),
      [n.ecoService]: num(e, 'service'),
      [n.ecoModule]: num(e, 'module'),
      [n.ecoContent]: num(e, 'content'),
      [n.obligation]: num(r, 'obligation'),
      ...Object.fromEntries(
        STAGE_CODES.flatMap((s) => [
          [n.stageLots(s), num(st(s), 'lots')],
          [n.stageCu(s), num(st(s), 'cu')],
          [n.stageObligation(s), num(st(s), 'obligation')],
        ]),
      ),
    };
    return table[key] ?? 0;
  };
  const moved = await store.update([K.layout, K.ecoCursor], ([marker, cur]) => {
    if (marker === seen) return { writes: [], result: false };
    const writes: Write[] = [];
    newKeys.forEach((key, i) => {
      const by = counterValue(old[i]) + fromLegacy(key);
      if (by !== 0) writes.push({ op: 'incr', key, by });
    });
    if (cursor !== undefined && cur === undefined) writes.push({ op: 'set', key: K.ecoCursor, value: cursor });
    writes.push({ op: 'set', key: K.layout, value: seen });
    return { writes, result: true };
  });
  for (const key of [L.totals, L.eco, L.reserve, L.ledger, L.ecoIndex, K.old.ecoCursor, ...oldKeys]) await store.del(key);
  return moved;
}

/**
 * The movements draw their ledger seq from `K.n.entries`; a store written before that counter was
 * numbered by credits + exchanges, which the counter starts from. Safe to run by several processes
 * at once: the update reads the counter, so it is set once, before any movement of this version
 * (each runs the upgrade first) draws from it.
 */
async function countLedgerEntries(store: Store): Promise<boolean> {
  const keys = [K.n.entries, K.n.credits, K.n.exchanges];
  const [entries, credits, exchanges] = await store.getMany(keys);
  if (entries !== undefined || counterValue(credits) + counterValue(exchanges) === 0) return false;
  return store.update(keys, ([e, c, x]) => {
    const last = counterValue(c) + counterValue(x);
    if (e !== undefined || last === 0) return { writes: [], result: false };
    return { writes: [{ op: 'set', key: K.n.entries, value: last }], result: true };
  });
}
