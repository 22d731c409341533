import { randomBytes } from 'node:crypto';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { conflict, notFound } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { Engine, type FillEvent, type Settings } from './engine.js';
import { Markets, RING, type Market } from './market.js';
import { EXIT, LONG, NONE, SHORT, STRATEGY_DEFS, type StrategyId, type StrategyRun } from './strategies.js';
import type { SymbolId } from './symbols.js';

/**
 * Live trading programs (docs/trading.md "Live programs"). A program is created from a strategy,
 * its parameters and risk settings, then moves through the lifecycle below. A running program is
 * driven by exactly one process (a store lease): on every closed candle of its symbol's live market
 * it asks its strategy for an action and steps its own Engine (the one simulation engine); fills
 * update its statistics and P&L, and a fill that takes the day's loss to or past the daily loss
 * limit stops it. Signals, trades and status changes become stream events with ids from one store
 * counter, kept in a capped history and published on the Bus. Knows no sockets.
 */

export const PROGRAM_STATES = ['created', 'running', 'paused', 'stopped'] as const;
export type ProgramState = (typeof PROGRAM_STATES)[number];
export type Move = 'start' | 'pause' | 'stop';
/** The allowed moves: move -> states it may start from. Delete is allowed from every state. */
export const MOVES: Record<Move, { from: ProgramState[]; to: ProgramState }> = {
  start: { from: ['created', 'paused', 'stopped'], to: 'running' },
  pause: { from: ['running'], to: 'paused' },
  stop: { from: ['running', 'paused'], to: 'stopped' },
};

/** Bus topics (and WebSocket topics): events with ids, and tick batches (no id). */
export const PROGRAM_EVENTS_TOPIC = 'program:events';
export const PROGRAM_TICK_TOPIC = 'program:tick';
/** The document: a tick for running programs every 3 seconds. */
export const TICK_MS = 3000;
/** Events kept for Last-Event-ID replay. */
export const HISTORY = 1000;
export const LOG_CAP = 500;
export const SIGNAL_CAP = 200;
export const EQUITY_CAP = 500;
/** Most candles processed per market in one pump; older missed candles are skipped. */
export const MAX_CATCHUP = 500;
export const MAX_PROGRAMS = 10_000;

export interface ProgramRecord {
  id: string;
  name: string;
  strategy: StrategyId;
  symbol: SymbolId;
  params: Record<string, number>;
  settings: Settings;
  state: ProgramState;
  created_at: number;
  updated_at: number;
  /** Why the last stop happened (a move, or daily_loss_limit). */
  reason: string | null;
}

export interface ProgramStats {
  bars: number;
  signals: number;
  entries: number;
  trades: number;
  wins: number;
  losses: number;
  blocked: number;
  realized_pnl: number;
  /** Marked-to-market: capital + realized + open P&L at the last close. */
  equity: number;
  pnl: number;
  peak: number;
  max_drawdown: number;
  day_session: number;
  day_pnl: number;
  day_trades: number;
  open_positions: number;
  position: 'long' | 'short' | 'flat';
  last_price: number | null;
  last_bar: number;
}

export type ProgramEvent =
  | { id: number; type: 'signal'; program: string; t: number; bar: number; action: 'long' | 'short' | 'exit'; price: number }
  | {
      id: number;
      type: 'trade';
      program: string;
      t: number;
      bar: number;
      kind: 'entry' | 'exit';
      side: 'buy' | 'sell';
      price: number;
      contracts: number;
      reason?: string;
      pnl?: number;
      realized_pnl: number;
      day_pnl: number;
    }
  | { id: number; type: 'status'; program: string; t: number; state: ProgramState | 'deleted'; previous: ProgramState | null; reason: string | null };

export interface TickEntry {
  program: string;
  price: number | null;
  equity: number;
  pnl: number;
  day_pnl: number;
  position: ProgramStats['position'];
  open_positions: number;
}
export interface TickEvent {
  type: 'tick';
  t: number;
  programs: TickEntry[];
}

export interface LogEntry {
  t: number;
  level: 'info' | 'warn';
  code: string;
  message: string;
}

export interface CreateInput {
  name?: string;
  strategy: StrategyId;
  symbol: SymbolId;
  params: Record<string, number>;
  settings: Settings;
}

const K = {
  rec: (id: string) => `program:${id}`,
  stats: (id: string) => `program:stats:${id}`,
  log: (id: string) => `program:log:${id}`,
  signals: (id: string) => `program:signals:${id}`,
  equity: (id: string) => `program:equity:${id}`,
  lease: (id: string) => `program:lease:${id}`,
  all: 'program:all',
  running: 'program:running',
  seq: 'program:events:seq',
  history: 'program:events',
};

const ACTION_NAME: Record<number, 'long' | 'short' | 'exit'> = { [LONG]: 'long', [SHORT]: 'short', [EXIT]: 'exit' };

export function emptyStats(capital: number): ProgramStats {
  return {
    bars: 0, signals: 0, entries: 0, trades: 0, wins: 0, losses: 0, blocked: 0, realized_pnl: 0,
    equity: capital, pnl: 0, peak: capital, max_drawdown: 0, day_session: -1, day_pnl: 0, day_trades: 0,
    open_positions: 0, position: 'flat', last_price: null, last_bar: -1,
  };
}

/** A program this process drives. */
class Runner {
  readonly engine: Engine;
  readonly strategy: StrategyRun;
  /** Realized P&L before this runner started (the engine starts flat with the capital). */
  readonly offset: number;
  lastBar: number;
  fills: FillEvent[] = [];
  /** An entry signal waiting for the next open. */
  pendingEntry = NONE;
  dirty = false;
  stopping = false;

  constructor(
    readonly rec: ProgramRecord,
    readonly stats: ProgramStats,
    readonly market: Market,
  ) {
    const def = STRATEGY_DEFS[rec.strategy];
    this.strategy = def.create(rec.params, 1380);
    this.engine = new Engine(market.ring, rec.settings, { from: 0, tradeFrom: 0, to: RING + 1 });
    this.offset = stats.realized_pnl;
    const k0 = market.last;
    // strategy warm-up on past market bars (pure), engine warm-up (ATR) on the ring
    const w = def.warmup(rec.params, 1380).bars + 2;
    for (let k = k0 - w + 1; k <= k0; k++) {
      const b = market.bar(k);
      this.strategy.next(b.o, b.h, b.l, b.c, b.v, b.session, b.pos);
    }
    const ew = Math.min(rec.settings.atr_period * 3 + 2, RING - 2);
    market.fill(k0, ew);
    for (let k = k0 - ew + 1; k <= k0; k++) this.engine.step(k % RING, NONE);
    this.engine.onFill = (f) => this.fills.push(f);
    this.lastBar = k0;
  }
}

export interface ProgramServiceOptions {
  store: Store;
  clock: Clock;
  bus: Pick<Bus, 'publish' | 'onMessage'>;
  /** Candle interval on the hub clock, ms (PROGRAM_CANDLE_MS / PROGRAM_SPEED). */
  barMs: number;
  /** Lease time to live, ms; renewed every third of it. */
  leaseMs: number;
  /** This process's lease owner name. */
  owner?: string;
  /** Real-time period of the market pump (ms); default min(250, barMs / 4). */
  pumpMs?: number;
  onError?: (err: unknown) => void;
}

export class ProgramService {
  readonly markets: Markets;
  readonly owner: string;
  private readonly runners = new Map<string, Runner>();
  private pendingEvents: { ev: DistributiveOmit<ProgramEvent, 'id'>; done: () => void }[] = [];
  private emitting: Promise<void> | undefined;
  private pendingWrites: { id: string; w: Write }[] = [];
  private writing: Promise<void> | undefined;
  private pumping: Promise<void> | undefined;
  private lastTick: number;
  private timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void) | undefined;
  private closed = false;

  constructor(private readonly opts: ProgramServiceOptions) {
    this.markets = new Markets(opts.barMs);
    this.owner = opts.owner ?? `${process.pid}-${randomBytes(4).toString('hex')}`;
    this.lastTick = Math.floor(opts.clock.now() / TICK_MS);
  }

  // ---- lifecycle of the service -------------------------------------------------------------

  /** Reacts to status events from any process, claims running programs, starts the timers. */
  async start(): Promise<void> {
    this.unsubscribe = this.opts.bus.onMessage(({ topic, message }) => {
      if (topic !== PROGRAM_EVENTS_TOPIC) return;
      const ev = message as unknown as ProgramEvent;
      if (ev.type === 'status' && ev.state !== 'running') {
        const r = this.runners.get(ev.program);
        if (r) this.release(r, ev.state === 'deleted' ? 'deleted' : 'flatten');
      }
    });
    await this.leaseRound();
    const lease = setInterval(() => void this.leaseRound().catch((e) => this.opts.onError?.(e)), Math.max(50, Math.floor(this.opts.leaseMs / 3)));
    lease.unref();
    this.timers.push(lease);
    this.schedulePump();
  }

  /**
   * The pump runs at the next candle close or tick boundary of the hub clock, and at least every
   * pumpMs of real time (a clock that jumps, such as a ManualClock, is noticed within pumpMs).
   */
  private schedulePump(): void {
    if (this.closed) return;
    const pumpMs = this.opts.pumpMs ?? Math.max(20, Math.min(250, Math.floor(this.opts.barMs / 4)));
    const now = this.opts.clock.now();
    const nextBar = (Math.floor(now / this.opts.barMs) + 1) * this.opts.barMs;
    const nextTick = (Math.floor(now / TICK_MS) + 1) * TICK_MS;
    const wait = Math.max(1, Math.min(pumpMs, Math.min(nextBar, nextTick) - now + 1));
    const t = setTimeout(() => {
      this.timers = this.timers.filter((x) => x !== t);
      this.pump()
        .catch((e) => this.opts.onError?.(e))
        .finally(() => this.schedulePump());
    }, wait);
    t.unref();
    this.timers.push(t);
  }

  /** Shutdown: programs stay running in the store and resume on the next process that claims them. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.unsubscribe?.();
    await this.pumping;
    await this.flushed();
    const ids = [...this.runners.keys()];
    this.runners.clear();
    await Promise.all(ids.map((id) => this.dropLease(id)));
  }

  /** Program ids this process drives. */
  owned(): string[] {
    return [...this.runners.keys()];
  }

  // ---- commands -----------------------------------------------------------------------------

  async create(input: CreateInput): Promise<ProgramRecord & { stats: ProgramStats }> {
    const count = await this.opts.store.indexCount(K.all);
    if (count >= MAX_PROGRAMS) throw conflict('too_many_programs', `at most ${MAX_PROGRAMS} programs`, { limit: MAX_PROGRAMS });
    const now = this.opts.clock.now();
    const id = `p_${randomBytes(6).toString('hex')}`;
    const rec: ProgramRecord = {
      id,
      name: input.name ?? `${input.strategy} ${input.symbol}`,
      strategy: input.strategy,
      symbol: input.symbol,
      params: input.params,
      settings: input.settings,
      state: 'created',
      created_at: now,
      updated_at: now,
      reason: null,
    };
    const stats = emptyStats(input.settings.capital);
    await this.opts.store.update([], () => ({
      writes: [
        { op: 'set', key: K.rec(id), value: rec as unknown as Json },
        { op: 'set', key: K.stats(id), value: stats as unknown as Json },
        { op: 'index', key: K.all, member: id, score: now },
      ],
      result: null,
    }));
    this.log(id, 'info', 'created', `created from ${rec.strategy} on ${rec.symbol}`);
    return { ...rec, stats };
  }

  async list(): Promise<(ProgramRecord & { stats: ProgramStats })[]> {
    const ids = (await this.opts.store.indexRange(K.all)).map((e) => e.member);
    if (ids.length === 0) return [];
    const vals = await this.opts.store.getMany([...ids.map(K.rec), ...ids.map(K.stats)]);
    const out: (ProgramRecord & { stats: ProgramStats })[] = [];
    ids.forEach((id, i) => {
      const rec = vals[i] as unknown as ProgramRecord | undefined;
      if (rec) out.push({ ...rec, stats: this.liveStats(id, (vals[ids.length + i] as unknown as ProgramStats) ?? emptyStats(rec.settings.capital)) });
    });
    return out;
  }

  async get(id: string): Promise<ProgramRecord & { stats: ProgramStats; owner: string | null }> {
    const [rec, stats, owner] = await this.opts.store.getMany([K.rec(id), K.stats(id), K.lease(id)]);
    if (!rec) throw notFound('program_not_found', `no program ${id}`, { id });
    const r = rec as unknown as ProgramRecord;
    return { ...r, stats: this.liveStats(id, (stats as unknown as ProgramStats) ?? emptyStats(r.settings.capital)), owner: (owner as string) ?? null };
  }

  async logs(id: string, limit = 200) {
    await this.get(id);
    const [logs, signals, equity] = await Promise.all([
      this.opts.store.range<LogEntry & Json>(K.log(id), -limit, -1),
      this.opts.store.range<Json>(K.signals(id), -limit, -1),
      this.opts.store.range<Json>(K.equity(id), 0, -1),
    ]);
    return { id, logs, signals, equity };
  }

  /** start / pause / stop. A move the state forbids: 409 `invalid_state` with the current state. */
  async move(id: string, move: Move, reason: string = move): Promise<ProgramRecord> {
    const now = this.opts.clock.now();
    // starting takes the lease in the same atomic write, so no other process's lease round can
    // claim the program between the move and this process driving it
    const { rec, previous, leased } = await this.opts.store.update([K.rec(id), K.lease(id)], ([cur, lease]) => {
      if (!cur) throw notFound('program_not_found', `no program ${id}`, { id });
      const r = cur as unknown as ProgramRecord;
      const rule = MOVES[move];
      if (!rule.from.includes(r.state)) {
        throw conflict('invalid_state', `cannot ${move} a program that is ${r.state}`, { id, state: r.state, move, allowed_from: rule.from });
      }
      const next: ProgramRecord = { ...r, state: rule.to, updated_at: now, reason: rule.to === 'running' ? null : reason };
      const writes: Write[] = [{ op: 'set', key: K.rec(id), value: next as unknown as Json }];
      writes.push(rule.to === 'running' ? { op: 'index', key: K.running, member: id, score: now } : { op: 'unindex', key: K.running, member: id });
      const leased = rule.to === 'running' && (lease === undefined || lease === this.owner);
      if (leased) writes.push({ op: 'set', key: K.lease(id), value: this.owner, ttlMs: this.opts.leaseMs });
      return { writes, result: { rec: next, previous: r.state, leased } };
    });
    this.log(id, rec.state === 'running' ? 'info' : reason === move ? 'info' : 'warn', rec.state, `${previous} -> ${rec.state}${reason !== move ? ` (${reason})` : ''}`);
    await this.emit({ type: 'status', program: id, t: now, state: rec.state, previous, reason: rec.reason });
    if (rec.state === 'running') await this.claim(id, leased);
    return rec;
  }

  /** Deletes a program; a running (or paused) one is stopped first. */
  async remove(id: string): Promise<{ id: string; deleted: true }> {
    const cur = await this.get(id);
    if (cur.state === 'running' || cur.state === 'paused') {
      try {
        await this.move(id, 'stop', 'deleted');
      } catch (err) {
        if (!(err instanceof Error && 'status' in err && (err as { status: number }).status === 409)) throw err;
      }
    }
    const previous = await this.opts.store.update([K.rec(id)], ([r]) => {
      if (!r) throw notFound('program_not_found', `no program ${id}`, { id });
      return {
        writes: [
          { op: 'del', key: K.rec(id) },
          { op: 'del', key: K.stats(id) },
          { op: 'del', key: K.log(id) },
          { op: 'del', key: K.signals(id) },
          { op: 'del', key: K.equity(id) },
          { op: 'unindex', key: K.all, member: id },
          { op: 'unindex', key: K.running, member: id },
        ],
        result: (r as unknown as ProgramRecord).state,
      };
    });
    await this.emit({ type: 'status', program: id, t: this.opts.clock.now(), state: 'deleted', previous, reason: 'deleted' });
    return { id, deleted: true };
  }

  /** Events after `afterId` still in the bounded history, oldest first. */
  async history(afterId: number): Promise<ProgramEvent[]> {
    const all = await this.opts.store.range<Json>(K.history, 0, -1);
    return (all as unknown as ProgramEvent[]).filter((e) => e.id > afterId);
  }

  // ---- the market pump ----------------------------------------------------------------------

  /** Processes every candle closed by now for the programs this process drives, then the tick. */
  pump(): Promise<void> {
    if (this.pumping) return this.pumping;
    this.pumping = this.pumpOnce().finally(() => (this.pumping = undefined));
    return this.pumping;
  }

  private async pumpOnce(): Promise<void> {
    if (this.closed) return;
    const now = this.opts.clock.now();
    const bySymbol = new Map<Market, Runner[]>();
    for (const r of this.runners.values()) {
      const list = bySymbol.get(r.market);
      if (list) list.push(r);
      else bySymbol.set(r.market, [r]);
    }
    for (const [market, runners] of bySymbol) {
      const kNow = market.closedAt(now);
      let k = Math.max(market.last + 1, kNow - MAX_CATCHUP + 1);
      for (; k <= kNow; k++) {
        const slot = market.write(k);
        market.last = k;
        for (const r of runners) if (!r.stopping && r.lastBar < k) this.onBar(r, k, slot);
      }
    }
    const tick = Math.floor(now / TICK_MS);
    if (tick > this.lastTick) {
      this.lastTick = tick;
      await this.tick(tick * TICK_MS);
    }
    await this.flushed();
  }

  private onBar(r: Runner, k: number, slot: number): void {
    const cs = r.market.ring;
    const s = r.stats;
    const id = r.rec.id;
    const o = cs.o[slot]!, h = cs.h[slot]!, l = cs.l[slot]!, c = cs.c[slot]!;
    const session = cs.session[slot]!;
    if (session !== s.day_session) {
      s.day_session = session;
      s.day_pnl = 0;
      s.day_trades = 0;
    }
    const openBefore = s.open_positions;
    const dirBefore = s.position;
    const action = r.strategy.next(o, h, l, c, cs.v[slot]!, session, cs.pos[slot]!);
    r.fills.length = 0;
    r.engine.step(slot, action);
    const t = cs.t[slot]!;
    // an entry signal from the previous close that did not fill: a risk limit refused it
    if (r.pendingEntry !== NONE) {
      const want = r.pendingEntry;
      r.pendingEntry = NONE;
      if (!r.fills.some((f) => f.kind === 'entry')) {
        const sameDir = (want === LONG ? 'long' : 'short') === dirBefore;
        const set = r.rec.settings;
        const why =
          set.daily_trade_limit !== undefined && s.day_trades >= set.daily_trade_limit
            ? 'daily_trade_limit'
            : sameDir && openBefore >= set.max_positions
              ? 'max_positions'
              : set.schedule
                ? 'schedule'
                : 'risk';
        s.blocked++;
        const detail =
          why === 'daily_trade_limit'
            ? `${s.day_trades} of ${set.daily_trade_limit} entries today`
            : why === 'max_positions'
              ? `${openBefore} of ${set.max_positions} positions open`
              : why === 'schedule'
                ? `outside ${set.schedule!.start}-${set.schedule!.end} UTC on days ${set.schedule!.days.join(',')}`
                : 'refused by the engine';
        this.log(id, 'warn', why, `${ACTION_NAME[want]} entry blocked: ${why} (${detail})`);
      }
    }
    s.bars++;
    s.last_bar = k;
    s.last_price = c;
    r.lastBar = k;
    for (const f of r.fills) this.onFill(r, f);
    r.engine.trades.n = 0;
    for (const a of [r.engine.trades.dir, r.engine.trades.entryBar, r.engine.trades.exitBar, r.engine.trades.entryPrice, r.engine.trades.exitPrice, r.engine.trades.pnl, r.engine.trades.reason]) a.length = 0;
    this.mark(r, slot);
    if (action !== NONE) {
      s.signals++;
      if (action === LONG || action === SHORT) r.pendingEntry = action;
      const sig = { type: 'signal' as const, program: id, t, bar: k, action: ACTION_NAME[action]!, price: c };
      this.queueWrite(id, { op: 'push', key: K.signals(id), value: sig as unknown as Json, cap: SIGNAL_CAP });
      void this.emit(sig);
    }
    if (!r.stopping && r.rec.settings.daily_loss_limit !== undefined && s.day_pnl <= -r.rec.settings.daily_loss_limit) {
      r.stopping = true;
      void this.move(id, 'stop', 'daily_loss_limit').catch((e) => this.opts.onError?.(e));
    }
    if (r.dirty) this.saveStats(r);
  }

  private onFill(r: Runner, f: FillEvent): void {
    const s = r.stats;
    if (f.kind === 'entry') {
      s.entries++;
      s.day_trades++;
      s.open_positions++;
      s.position = f.side === 'buy' ? 'long' : 'short';
    } else {
      const pnl = f.pnl ?? 0;
      s.trades++;
      if (pnl > 0) s.wins++;
      else s.losses++;
      s.realized_pnl += pnl;
      s.day_pnl += pnl;
      s.open_positions = Math.max(0, s.open_positions - 1);
      if (s.open_positions === 0) s.position = 'flat';
    }
    r.dirty = true;
    const ev = {
      type: 'trade' as const,
      program: r.rec.id,
      t: f.t,
      bar: r.lastBar,
      kind: f.kind,
      side: f.side,
      price: f.price,
      contracts: f.contracts,
      ...(f.reason ? { reason: f.reason === 'end' ? 'flatten' : f.reason } : {}),
      ...(f.pnl !== undefined ? { pnl: Math.round(f.pnl * 100) / 100 } : {}),
      realized_pnl: Math.round(s.realized_pnl * 100) / 100,
      day_pnl: Math.round(s.day_pnl * 100) / 100,
    };
    void this.emit(ev);
  }

  /** Equity at the slot's close (the engine's mark) plus what was realized before this runner. */
  private mark(r: Runner, slot: number): void {
    const s = r.stats;
    s.equity = r.engine.equity[slot]! + r.offset;
    s.pnl = s.equity - r.rec.settings.capital;
    if (s.equity > s.peak) s.peak = s.equity;
    if (s.peak - s.equity > s.max_drawdown) s.max_drawdown = s.peak - s.equity;
  }

  private async tick(t: number): Promise<void> {
    if (this.runners.size === 0) return;
    const programs: TickEntry[] = [];
    for (const r of this.runners.values()) {
      if (r.stopping) continue;
      const s = r.stats;
      programs.push({
        program: r.rec.id,
        price: s.last_price,
        equity: Math.round(s.equity * 100) / 100,
        pnl: Math.round(s.pnl * 100) / 100,
        day_pnl: Math.round(s.day_pnl * 100) / 100,
        position: s.position,
        open_positions: s.open_positions,
      });
      this.queueWrite(r.rec.id, { op: 'push', key: K.equity(r.rec.id), value: { t, equity: Math.round(s.equity * 100) / 100 }, cap: EQUITY_CAP });
      this.saveStats(r);
    }
    if (programs.length === 0) return;
    const ev: TickEvent = { type: 'tick', t, programs };
    await this.opts.bus.publish(PROGRAM_TICK_TOPIC, ev as unknown as Json);
  }

  // ---- ownership (leases) -------------------------------------------------------------------

  /** Renews this process's leases and claims running programs nobody drives. */
  async leaseRound(): Promise<void> {
    if (this.closed) return;
    const store = this.opts.store;
    await Promise.all(
      [...this.runners.values()].map(async (r) => {
        const id = r.rec.id;
        // renewed only while this process holds it and the program is still running (a missed
        // status event cannot leave a paused or deleted program running here)
        const verdict = await store.update([K.lease(id), K.rec(id)], ([cur, rec]) => {
          if (cur !== this.owner) return { writes: [], result: 'lost' as const };
          if (!rec) return { writes: [], result: 'deleted' as const };
          if ((rec as unknown as ProgramRecord).state !== 'running') return { writes: [], result: 'flatten' as const };
          return { writes: [{ op: 'set', key: K.lease(id), value: this.owner, ttlMs: this.opts.leaseMs }], result: 'mine' as const };
        });
        if (verdict === 'lost') {
          if (this.runners.get(id) === r) this.runners.delete(id);
        } else if (verdict !== 'mine') {
          this.release(r, verdict);
        }
      }),
    );
    const running = await store.indexRange(K.running);
    for (const { member } of running) if (!this.runners.has(member)) await this.claim(member);
  }

  /** Takes the program's lease when free (or drives it when `leased`: already taken) and starts driving it. */
  private async claim(id: string, leased = false): Promise<void> {
    if (this.closed || this.runners.has(id)) return;
    const got = leased || (await this.opts.store.set(K.lease(id), this.owner, { ifAbsent: true, ttlMs: this.opts.leaseMs }));
    if (!got) return;
    const [rec, stats] = await this.opts.store.getMany([K.rec(id), K.stats(id)]);
    const r = rec as unknown as ProgramRecord | undefined;
    if (!r || r.state !== 'running' || this.runners.has(id)) {
      if (!this.runners.has(id)) await this.dropLease(id);
      return;
    }
    const market = this.markets.get(r.symbol);
    if (market.last < 0 || market.last < market.closedAt(this.opts.clock.now()) - MAX_CATCHUP) {
      market.last = market.closedAt(this.opts.clock.now());
    }
    const runner = new Runner(r, (stats as unknown as ProgramStats) ?? emptyStats(r.settings.capital), market);
    this.runners.set(id, runner);
    this.log(id, 'info', 'claimed', `driven by ${this.owner} from bar ${runner.lastBar}`);
  }

  /** Stops driving a program: flattens open positions at the last close unless it was deleted. */
  private release(r: Runner, how: 'flatten' | 'deleted'): void {
    if (this.runners.get(r.rec.id) !== r) return;
    this.runners.delete(r.rec.id);
    r.stopping = true;
    if (how === 'flatten' && r.stats.open_positions > 0 && r.lastBar >= 0) {
      // Engine.finish closes what is open at the close of its last slot: the scratch slot RING
      r.fills.length = 0;
      r.market.write(r.lastBar, RING);
      r.engine.finish();
      for (const f of r.fills) this.onFill(r, { ...f, t: r.market.ring.t[RING]! });
      this.mark(r, RING);
    }
    if (how === 'flatten') this.saveStats(r);
    void this.dropLease(r.rec.id);
  }

  private async dropLease(id: string): Promise<void> {
    await this.opts.store
      .update([K.lease(id)], ([cur]) => ({ writes: cur === this.owner ? [{ op: 'del', key: K.lease(id) }] : [], result: null }))
      .catch((e) => this.opts.onError?.(e));
  }

  // ---- persistence and events ---------------------------------------------------------------

  private liveStats(id: string, stored: ProgramStats): ProgramStats {
    const r = this.runners.get(id);
    return r ? { ...r.stats } : stored;
  }

  private saveStats(r: Runner): void {
    r.dirty = false;
    this.queueWrite(r.rec.id, { op: 'set', key: K.stats(r.rec.id), value: { ...r.stats } as unknown as Json });
  }

  private log(id: string, level: LogEntry['level'], code: string, message: string): void {
    const entry: LogEntry = { t: this.opts.clock.now(), level, code, message };
    this.queueWrite(id, { op: 'push', key: K.log(id), value: entry as unknown as Json, cap: LOG_CAP });
  }

  /**
   * Statistics, logs, signals and equity points are written in batches: everything queued while a
   * batch commits goes into the next one (one atomic store update each, writes of programs deleted
   * meanwhile left out).
   */
  private queueWrite(id: string, w: Write): void {
    this.pendingWrites.push({ id, w });
    this.writing ??= this.flushWrites();
  }

  private async flushWrites(): Promise<void> {
    await Promise.resolve();
    while (this.pendingWrites.length > 0) {
      const batch = this.pendingWrites.splice(0);
      const ids = [...new Set(batch.map((b) => b.id))];
      try {
        await this.opts.store.update(ids.map(K.rec), (vals) => {
          const alive = new Set(ids.filter((_, i) => vals[i] !== undefined));
          return { writes: batch.filter((b) => alive.has(b.id)).map((b) => b.w), result: null };
        });
      } catch (e) {
        this.opts.onError?.(e);
      }
    }
    this.writing = undefined;
  }

  /**
   * Gives events their ids (one `incr` per batch), keeps them in the history and publishes them, in
   * the order they were emitted. Resolves once the event is published.
   */
  private emit(ev: DistributiveOmit<ProgramEvent, 'id'>): Promise<void> {
    return new Promise((resolve) => {
      this.pendingEvents.push({ ev, done: resolve });
      this.emitting ??= this.flushEvents();
    });
  }

  private async flushEvents(): Promise<void> {
    await Promise.resolve();
    const store = this.opts.store;
    while (this.pendingEvents.length > 0) {
      const batch = this.pendingEvents.splice(0);
      try {
        const last = await store.incr(K.seq, batch.length);
        const full = batch.map((b, i) => ({ id: last - batch.length + 1 + i, ...b.ev }) as unknown as Json);
        await store.update([], () => ({ writes: full.map((value) => ({ op: 'push' as const, key: K.history, value, cap: HISTORY })), result: null }));
        await Promise.all(full.map((m) => this.opts.bus.publish(PROGRAM_EVENTS_TOPIC, m)));
      } catch (e) {
        this.opts.onError?.(e);
      } finally {
        for (const b of batch) b.done();
      }
    }
    this.emitting = undefined;
  }

  /** Waits until queued events and writes are in the store. */
  async flushed(): Promise<void> {
    while (this.emitting || this.writing) await Promise.all([this.emitting, this.writing]);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
