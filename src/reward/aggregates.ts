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
  const moved = await moveLegacyRecords(store);
  const numbered = await countLedgerEntries(store);
  return moved || numbered;
}

/**
 * A store written before the counters holds `reward:totals`, `reward:eco` and `reward:reserve`
 * records (and two indexes the dense sequence numbers make unnecessary). This moves their figures
 * into the counters, in one atomic update, and deletes them; a store without them is left alone.
 * Safe to run by several processes at once: the update reads the old records, so only one moves them.
 */
async function moveLegacyRecords(store: Store): Promise<boolean> {
  const L = K.legacy;
  if ((await store.getMany([L.totals, L.eco, L.reserve])).every((v) => v === undefined)) return false;
  return store.update([L.totals, L.eco, L.reserve], ([t, e, r]) => {
    if (t === undefined && e === undefined && r === undefined) return { writes: [], result: false };
    const add = (key: string, by: number): Write[] => (by === 0 ? [] : [{ op: 'incr', key, by }]);
    const stages = r !== null && typeof r === 'object' && !Array.isArray(r) ? r.by_stage : undefined;
    const writes: Write[] = [
      ...add(K.n.credits, num(t, 'credits')),
      ...add(K.n.exchanges, num(t, 'exchanges')),
      ...add(K.n.units, num(t, 'units')),
      ...add(K.n.ruEarned, num(t, 'ru_earned')),
      ...add(K.n.ruBurned, num(t, 'ru_burned')),
      ...add(K.n.ecoService, num(e, 'service')),
      ...add(K.n.ecoModule, num(e, 'module')),
      ...add(K.n.ecoContent, num(e, 'content')),
      ...add(K.n.obligation, num(r, 'obligation')),
      ...STAGE_CODES.flatMap((s) => {
        const st = stages !== null && typeof stages === 'object' && !Array.isArray(stages) ? stages[s] : undefined;
        return [...add(K.n.stageLots(s), num(st, 'lots')), ...add(K.n.stageCu(s), num(st, 'cu')), ...add(K.n.stageObligation(s), num(st, 'obligation'))];
      }),
      { op: 'del', key: L.totals },
      { op: 'del', key: L.eco },
      { op: 'del', key: L.reserve },
      { op: 'del', key: L.ledger },
      { op: 'del', key: L.ecoIndex },
    ];
    return { writes, result: true };
  });
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
