import { randomBytes } from 'node:crypto';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { IDEMPOTENCY_TTL_MS } from '../idempotency.js';
import { notFound } from '../errors.js';
import { mergedIndexCount, mergedIndexRange, type Json, type Store, type Write } from '../store/port.js';
import { readRuEarned, upgradeLayout } from './aggregates.js';
import { principles, type Principle } from './charter.js';
import { decodeList } from '../store/codec.js';
import { memberCodec, memberMetaCodec, zoneCodec } from './codecs.js';
import { buildReadme, buildSpec, type RouteLine } from './guide.js';
import { createMemberSchema, cultureSchema, exchangeSchema, parseInput, workSchema } from './inputs.js';
import { K } from './keys.js';
import {
  buildSyncPayload,
  checkId,
  clampLimit,
  markSynced,
  readEcosystemLedger,
  readReservePool,
  readRewardLedger,
  type ListOptions,
} from './ledgers.js';
import {
  AlreadyApplied,
  creditKeys,
  creditWire,
  exchangeKeys,
  ledgerDraws,
  ledgerKeys,
  planCredit,
  planExchange,
  planLedger,
  planSettled,
  refuseOutsidePlan,
  type Applied,
  type CreditOutcome,
  type Movement,
} from './movements.js';
import {
  DEFAULT_SPLIT,
  PLAN_DAYS,
  PLAN_END,
  PLAN_END_YEAR,
  ZONE_CAPACITY,
  checkSplit,
  daysLeft,
  kstDate,
  kstMonth,
  maturityValue,
  progress,
  stageFor,
  toWire,
  type Split,
} from './plan.js';
import { iso, memberWire, zoneWire } from './records.js';
import { IdTaken, joinKeys, memberKeys, planJoin, planJoined, planMember, planZone, zoneKeys, type Joining } from './registry.js';
import { readWorkSessions } from './sessions.js';
import { coverageSimulation, type SimulationParams } from './simulation.js';
import { zoneId } from './zone-id.js';

export type { ListOptions } from './ledgers.js';

/** Bus topic of reward events. */
export const REWARD_TOPIC = 'reward';

/**
 * Signing seam: called by work() once the member is known and before anything is written, with
 * the public key registered at member creation (undefined when none). Throw an AppError (for
 * example 401) to refuse the work; nothing is written then.
 */
export type WorkVerifier = (memberPublicKey: string | undefined, member: { id: string }) => void | Promise<void>;

export interface RewardServiceOptions {
  store: Store;
  clock: Clock;
  bus: Bus;
  /** Principles 1 to 8 supplied by the operator (exactly 8 texts); absent: reported as not configured. */
  charter?: readonly string[];
  /** Ecosystem split in percent; default 30/20/20/30 (service/module/content/infrastructure). */
  ecosystemSplit?: Split;
}

export interface WorkInput {
  id: string;
  kc: number;
  v: number;
  verify?: WorkVerifier;
  /**
   * Writes that record the caller's answer (the hub's idempotency), applied once the credit is in
   * the ledgers, in their own update.
   */
  answer?: (result: Json) => Write[];
  /**
   * The credit's id when the caller retries requests (derived from its idempotency key): a credit
   * of this id already made by the member (a day back at most) is not made again; its answer is
   * given again, the same seq included.
   */
  creditId?: string;
}

const RANDOM_ID_CHARS = 10;

/** `prefix` + url-safe random characters from crypto. */
function randomId(prefix: string, chars = RANDOM_ID_CHARS): string {
  return prefix + randomBytes(Math.ceil((chars * 3) / 4) + 1).toString('base64url').slice(0, chars);
}


export class RewardService {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly bus: Bus;
  private readonly charter: Principle[];
  private readonly split: Split;
  private upgraded: Promise<unknown> | undefined;

  constructor(opts: RewardServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.bus = opts.bus;
    if (opts.charter !== undefined && opts.charter.length !== 8) {
      throw new Error('reward charter must hold exactly 8 texts (principles 1 to 8)');
    }
    this.charter = principles(opts.charter);
    this.split = checkSplit(opts.ecosystemSplit ?? DEFAULT_SPLIT);
  }

  // -------------------------------------------------------------------------------------------
  // Read side

  /** /stats: members, cultures (zones), total_ru (all RU ever earned), progress, stage. */
  async stats() {
    await this.upgrade();
    const now = this.clock.now();
    const [members, cultures, ruEarned] = await Promise.all([
      // a member is listed once, in its partition's list (or, created before, in the global one)
      Promise.all(K.allMembers.map((k) => this.store.indexCount(k))).then((n) => n.reduce((a, b) => a + b, 0)),
      mergedIndexCount(this.store, K.allZones),
      readRuEarned(this.store),
    ]);
    return {
      members,
      cultures,
      total_ru: toWire(ruEarned),
      progress: progress(now),
      stage: stageFor(now).stage,
    };
  }

  /** /maturity: days_left, progress, stage, end_year (+ today, end_date, plan_days, coin_pct). */
  maturity() {
    const now = this.clock.now();
    const stage = stageFor(now);
    return {
      days_left: daysLeft(now),
      progress: progress(now),
      stage: stage.stage,
      end_year: PLAN_END_YEAR,
      today: kstDate(now),
      end_date: PLAN_END,
      plan_days: PLAN_DAYS,
      coin_pct: stage.pct,
    };
  }

  /** /member: id, name, grade, grade_name, kc, ru, cu (+ excess, score, zone, created_at). */
  async member(id: string) {
    id = checkId(id);
    const [m] = await this.store.getMany([K.member(id)]);
    const rec = memberCodec.decode(m);
    if (!rec) throw notFound('member_not_found', `no member ${id}`);
    const mm = await this.memberMeta(id);
    return {
      ...memberWire(rec),
      zone: mm?.zone ?? null,
      created_at: mm ? iso(mm.created_at) : null,
    };
  }

  async zone(id: string) {
    const z = zoneCodec.decode(await this.store.get(K.zone(id)));
    if (!z) throw notFound('zone_not_found', `no cultural zone ${id}`);
    return zoneWire(z, ZONE_CAPACITY);
  }

  /** Zones in registration order. */
  async listZones(opts: { limit?: number; offset?: number } = {}) {
    const limit = clampLimit(opts.limit);
    const offset = Number.isInteger(opts.offset) && (opts.offset as number) > 0 ? (opts.offset as number) : 0;
    const [total, ids] = await Promise.all([
      mergedIndexCount(this.store, K.allZones),
      mergedIndexRange(this.store, K.allZones, { limit, offset }),
    ]);
    const zones = decodeList(zoneCodec, await this.store.getMany(ids.map((e) => K.zone(e.member))));
    return {
      total,
      zones: zones.map((z) => zoneWire(z, ZONE_CAPACITY)),
    };
  }

  /** Units performed per KST day and calendar month by one member (newest month first). */
  workSessions(memberId: string, opts: { months?: number } = {}) {
    return readWorkSessions(this.store, this.clock.now(), memberId, opts);
  }

  /** The reward ledger, newest first; with `member`, that member's entries only. */
  async rewardLedger(opts: ListOptions & { member?: string } = {}) {
    await this.upgrade();
    return readRewardLedger(this.store, opts);
  }

  /** The ecosystem ledger: split, totals per category, realizable value, recent entries. */
  async ecosystemLedger(opts: ListOptions = {}) {
    await this.upgrade();
    return readEcosystemLedger(this.store, this.split, opts);
  }

  /**
   * The synchronisation payload for the value service: the ecosystem entries after the sync
   * cursor. Read-only: once the value service accepted it, call markSynced(payload.cursor.to).
   */
  async syncPayload(opts: { limit?: number } = {}) {
    await this.upgrade();
    return buildSyncPayload(this.store, this.split, this.clock.now(), opts);
  }

  /** Moves the sync cursor forward to `seq` (never backwards, never past the last entry). */
  async markSynced(seq: number) {
    await this.upgrade();
    return markSynced(this.store, seq, this.clock.now());
  }

  /** The reserve pool: balance, exchange lots, maturity obligation and shortfall, coverage rates. */
  async reservePool() {
    await this.upgrade();
    return readReservePool(this.store);
  }

  /** The 12-month coverage simulation (see simulation.ts); every assumption is in its output. */
  coverageSimulation(params?: SimulationParams) {
    return coverageSimulation(params, this.split);
  }

  /** /declare: the nine principles. */
  declare() {
    return {
      title: 'Reward plan charter: nine principles',
      principles: this.charter.map((p) => ({ ...p })),
      configured: this.charter.filter((p) => p.configured).length,
    };
  }

  /** /spec: the service as machine-readable JSON. */
  /** `routes`: the routes the spec lists, read from their declarations (routes.ts). */
  spec(routes?: RouteLine[]) {
    return buildSpec(this.declare().principles, { ...this.split }, routes);
  }

  /** /readme: markdown guide. */
  readme(): string {
    return buildReadme(this.charter, this.split);
  }

  // -------------------------------------------------------------------------------------------
  // Write side

  /**
   * /culture: registers a cultural zone; registering an existing one (same country, lang and
   * normalised name) changes nothing and answers created: false.
   */
  async culture(input: { country: string; lang: string; name: string }) {
    const { country, lang, name } = parseInput(cultureSchema, input);
    const id = zoneId(country, lang, name);
    const now = this.clock.now();
    const { zone, created } = await this.store.update(zoneKeys(id), (cur) => planZone({ country, lang, name, now }, cur));
    const total_cultures = await mergedIndexCount(this.store, K.allZones);
    const result = {
      ok: true as const,
      country: zone.country,
      lang: zone.lang,
      name: zone.name,
      total_cultures,
      id: zone.id,
      created,
    };
    if (created) await this.emit({ type: 'culture', id: zone.id, country, lang, name: zone.name });
    return result;
  }

  /**
   * Creates a member in a zone (not in the document). The zone's update counts it (so a full zone,
   * 6561, refuses with 409 zone_full and nothing changes, however many creates race), then the
   * member is written in its own update (registry.ts): the answer is given once both are done.
   */
  async createMember(input: { name: string; zone: string; public_key?: string | undefined }) {
    const { name, zone, public_key } = parseInput(createMemberSchema, input);
    const now = this.clock.now();
    await this.upgrade();
    for (let attempt = 0; ; attempt++) {
      const id = randomId('m_');
      try {
        if ((await this.store.get(K.member(id))) !== undefined) throw new IdTaken();
        const joining: Joining = { id, name, zone, public_key: public_key ?? null, created_at: now };
        const m = await this.store.update(joinKeys(zone, id), (cur) => planJoin(joining, cur));
        await this.join(joining);
        const out = {
          ...memberWire(m.rec),
          zone,
          zone_members: m.zoneMembers,
          public_key: public_key ?? null,
          created_at: iso(now),
        };
        await this.emit({ type: 'member', id, name, zone, grade: m.rec.grade, grade_name: m.rec.grade_name });
        return out;
      } catch (err) {
        if (err instanceof IdTaken && attempt < 5) continue;
        throw err;
      }
    }
  }

  /** A member counted by its zone: created (once), then its joining record removed. */
  private async join(j: Joining): Promise<void> {
    await this.store.update(memberKeys(j.id), (cur) => planMember(j, cur));
    await this.store.update([], () => planJoined(j.zone, j.id));
  }

  /** A member's facts, from its own key or from the one of before the partitions. */
  private async memberMeta(id: string) {
    const [own, old] = await this.store.getMany([K.memberMeta(id), K.old.memberMeta(id)]);
    return memberMetaCodec.decode(own ?? old);
  }

  /**
   * Carries a movement the member's update left pending into the ledgers (once: its `applied`
   * marker), then removes it from the member; returns the numbers it got there.
   */
  private async carry(movement: Movement): Promise<Applied> {
    let applied: Applied;
    try {
      const { drawn } = await this.store.update(ledgerKeys(movement), (cur) => planLedger(movement, cur), { draw: ledgerDraws(movement) });
      applied = movement.kind === 'credit' ? { seq: drawn[0]!, eco: drawn[1]! } : { seq: drawn[0]! };
    } catch (err) {
      if (!(err instanceof AlreadyApplied)) throw err;
      applied = err.applied;
    }
    await this.store.update([], () => planSettled(movement.member, movement.id));
    return applied;
  }

  /**
   * Finishes what a process stopped between two updates left: members counted by their zone and
   * not created, movements of members not yet in the ledgers. Each step is once only, so a
   * movement or a member another process is finishing at the same time is not done twice.
   */
  private async finishLeftovers(): Promise<void> {
    for (const e of await mergedIndexRange(this.store, K.allJoining)) {
      const [zone, id] = e.member.split('/') as [string, string];
      const j = (await this.store.get(K.joining(zone, id))) as Joining | undefined;
      if (j) await this.join(j);
      else await this.store.update([], () => planJoined(zone, id));
    }
    for (const e of await mergedIndexRange(this.store, K.allPending)) {
      const [member, id] = e.member.split('/') as [string, string];
      const m = (await this.store.get(K.pending(member, id))) as Movement | undefined;
      if (m) await this.carry(m);
      else await this.store.update([], () => planSettled(member, id));
    }
  }

  /**
   * /work: credits kc units assessed at v percent. Refusals (nothing written): 400 invalid_kc /
   * invalid_v, 409 plan_not_started / plan_ended, 404 member_not_found, whatever `verify` throws,
   * 409 daily_units_exceeded / monthly_units_exceeded. The credit, the member, the work session,
   * the three shares, the ledgers and the two peer deliveries land in one atomic update.
   */
  async work(input: WorkInput) {
    const { id, kc, v } = parseInput(workSchema, { id: input.id, kc: input.kc, v: input.v });
    const now = this.clock.now();
    refuseOutsidePlan(now);
    const meta = await this.memberMeta(id);
    if (!meta) throw notFound('member_not_found', `no member ${id}`);
    if (input.verify) await input.verify(meta.public_key ?? undefined, { id });
    await this.upgrade();

    const today = kstDate(now);
    const month = kstMonth(now);
    const stage = stageFor(now);
    const creditId = input.creditId ?? randomId('cr_', 16);
    const once = input.creditId === undefined ? [] : [K.credited(id, creditId)];

    // the month's session of the layout before the partitions, counted until the member has its own
    const earlier = await this.store.get(K.old.session(id, month));
    const r = await this.store.update([...creditKeys(id, month), ...once], (cur) => {
      const made = cur[2];
      if (made !== undefined) return { writes: [], result: made as unknown as CreditOutcome };
      const plan = planCredit({ id, kc, v, now, today, month, stage, split: this.split, creditId }, cur.slice(0, 2), earlier);
      const marks: Write[] = once.map((key) => ({ op: 'set', key, value: plan.result as unknown as Json, ttlMs: IDEMPOTENCY_TTL_MS }));
      return { writes: [...plan.writes, ...marks], result: plan.result };
    });
    const { seq } = await this.carry(r.movement);

    const { result, event } = creditWire(id, creditId, stage, r, seq);
    // the caller's answer (the hub's idempotency), recorded once the credit is in the ledgers
    if (input.answer) {
      const answer = input.answer;
      await this.store.update([], () => ({ writes: answer(result), result: undefined }));
    }
    await this.emit(event);
    return result;
  }

  /**
   * /exchange: burns amt RU and mints amt CU (1:1) in the current stage; the exchange is a lot of
   * the reserve pool with maturity value cu x 600 / coin%. Refusals (nothing written): 400
   * invalid_amount, 404 member_not_found, 409 insufficient_ru {balance}.
   */
  async exchange(input: { id: string; amt: number | string; verify?: WorkVerifier }) {
    const { id, amt } = parseInput(exchangeSchema, { id: input.id, amt: input.amt });
    if (input.verify) {
      const meta = await this.memberMeta(id);
      if (!meta) throw notFound('member_not_found', `no member ${id}`);
      await input.verify(meta.public_key ?? undefined, { id });
    }
    await this.upgrade();
    const now = this.clock.now();
    const stage = stageFor(now);
    const exchangeId = randomId('ex_', 16);
    const r = await this.store.update(exchangeKeys(id), (cur) => planExchange({ id, amt, now, stage, exchangeId }, cur));
    const { seq } = await this.carry(r.movement);
    const result = {
      id,
      ru_burned: toWire(amt),
      cu_minted: toWire(amt),
      stage: stage.stage,
      maturity_value: toWire(r.maturityValue),
      coin_pct: stage.pct,
      maturity_multiple: toWire(maturityValue(100, stage.pct)),
      ru: toWire(r.member.ru),
      cu: toWire(r.member.cu),
      exchange_id: exchangeId,
      seq,
    };
    await this.emit({
      type: 'exchange',
      id,
      ru_burned: result.ru_burned,
      cu_minted: result.cu_minted,
      stage: stage.stage,
      maturity_value: result.maturity_value,
      exchange_id: exchangeId,
    });
    return result;
  }

  // -------------------------------------------------------------------------------------------

  /** Moves a store written with the earlier layout to the counters, once per service (aggregates.ts). */
  private upgrade(): Promise<unknown> {
    this.upgraded ??= upgradeLayout(this.store).then(() => this.finishLeftovers()).catch((err: unknown) => {
      this.upgraded = undefined; // tried again by the next call
      throw err;
    });
    return this.upgraded;
  }

  /** Publishes a reward event with fresh /stats figures; a failure never fails the request. */
  private async emit(msg: { [key: string]: Json }): Promise<void> {
    const at = iso(this.clock.now());
    let stats;
    try {
      stats = await this.stats();
    } catch (err) {
      // the bus logs it: the event is lost, the request is not
      return this.bus.emit(REWARD_TOPIC, Promise.reject(err));
    }
    this.bus.emit(REWARD_TOPIC, { ...msg, at, stats });
  }
}
