import { codec } from '../store/codec.js';
import type { Json, Write } from '../store/port.js';
import { Engine, type EngineBook, type FillEvent } from './engine.js';
import type { JournalEntry } from './program-journal.js';
import { RING, type Market } from './market.js';
import { dayLossReached, entryBlock } from './risk.js';
import {
  K,
  LOG_CAP,
  MAX_CATCHUP,
  runOf,
  SIGNAL_CAP,
  type LogEntry,
  type ProgramEvent,
  type ProgramRecord,
  type ProgramStats,
  type TickEntry,
  logEntries, programStats,
} from './program-model.js';
import { EXIT, LONG, NONE, SHORT, STRATEGY_DEFS, type StrategyRun } from './strategies.js';

const ACTION_NAME: Record<number, 'long' | 'short' | 'exit'> = { [LONG]: 'long', [SHORT]: 'short', [EXIT]: 'exit' };

/** What the runner keeps beside its statistics: the engine's book and the entry signal awaiting its fill. */
export interface StoredBook extends EngineBook {
  signal: number;
}

export const storedBooks = codec<StoredBook>('program book');

export const logWrite = (id: string, entry: LogEntry): Write => ({ op: 'push', key: K.log(id), value: logEntries.encode(entry), cap: LOG_CAP });

/**
 * One program this process drives: its strategy and its own Engine on the symbol's market ring.
 * `step` processes one closed bar and returns everything the bar produced as one journal entry
 * (statistics with last_bar, book, signal, logs, events), so the bar is committed all or nothing.
 *
 * It begins after bar `start` = max(the program's from_bar, its last processed bar): the strategy
 * and the ATR warm up on the bars up to it (pure market bars, as a backtest's warm-up does), and
 * when it continues its own run (a new owner after a failover) the book is restored, so the
 * positions open at the crash are still open.
 */
export class Runner {
  readonly engine: Engine;
  readonly strategy: StrategyRun;
  /** Realized P&L before this runner started (the engine starts with the capital). */
  readonly offset: number;
  /** The run (the program's from_bar when it was claimed). */
  readonly run: number;
  lastBar: number;
  private fills: FillEvent[] = [];
  /** An entry signal waiting for the next open. */
  private pendingEntry = NONE;
  /** The book as last written (undefined: write it with the next bar). */
  private bookJson: string | undefined;
  stopping = false;

  constructor(
    readonly rec: ProgramRecord,
    readonly stats: ProgramStats,
    readonly market: Market,
    book: StoredBook | undefined,
    start: number,
  ) {
    const def = STRATEGY_DEFS[rec.strategy];
    this.run = runOf(rec);
    this.strategy = def.create(rec.params, 1380);
    this.engine = new Engine(market.ring, rec.settings, { from: 0, tradeFrom: 0, to: RING + 1 });
    this.offset = stats.realized_pnl;
    const w = def.warmup(rec.params, 1380).bars + 2;
    for (let k = start - w + 1; k <= start; k++) {
      const b = market.bar(k);
      this.strategy.next(b.o, b.h, b.l, b.c, b.v, b.session, b.pos);
    }
    const ew = Math.min(rec.settings.atr_period * 3 + 2, RING - 2);
    market.fill(start, ew);
    for (let k = start - ew + 1; k <= start; k++) this.engine.step(k % RING, NONE);
    // the book continues only within the run it belongs to (a pause flattened it anyway)
    if (book && stats.last_bar >= this.run) {
      this.engine.restore(book);
      this.pendingEntry = book.signal;
    } else {
      stats.open_positions = 0;
      stats.position = 'flat';
    }
    this.engine.onFill = (f) => this.fills.push(f);
    this.lastBar = start;
  }

  /** Processes closed bar k (already written in `slot` of the ring). */
  step(k: number, slot: number, now: number): { entry: JournalEntry; dailyLossHit: boolean } {
    const cs = this.market.ring;
    const s = this.stats;
    const id = this.rec.id;
    const writes: Write[] = [];
    const events: ProgramEvent[] = [];
    const session = cs.session[slot]!;
    if (session !== s.day_session) {
      s.day_session = session;
      s.day_pnl = 0;
      s.day_trades = 0;
    }
    const openBefore = s.open_positions;
    const dirBefore = s.position;
    const c = cs.c[slot]!;
    const action = this.strategy.next(cs.o[slot]!, cs.h[slot]!, cs.l[slot]!, c, cs.v[slot]!, session, cs.pos[slot]!);
    this.fills.length = 0;
    this.engine.step(slot, action);
    // an entry signal from the previous close that did not fill: a risk limit refused it
    if (this.pendingEntry !== NONE) {
      const want = this.pendingEntry;
      this.pendingEntry = NONE;
      if (!this.fills.some((f) => f.kind === 'entry')) {
        s.blocked++;
        writes.push(logWrite(id, { t: now, level: 'warn', ...this.blocked(want, dirBefore, openBefore) }));
      }
    }
    s.bars++;
    s.last_bar = k;
    s.last_price = c;
    this.lastBar = k;
    for (const f of this.fills) events.push(this.onFill(f, k));
    this.clearTrades();
    this.mark(slot);
    if (action !== NONE) {
      s.signals++;
      if (action === LONG || action === SHORT) this.pendingEntry = action;
      const sig = { t: cs.t[slot]!, bar: k, action: ACTION_NAME[action]!, price: c };
      writes.push({ op: 'push', key: K.signals(id), value: sig, cap: SIGNAL_CAP });
      events.push({ id: `${id}-s${s.signals}`, type: 'signal', program: id, created_by: this.rec.created_by, ...sig });
    }
    writes.push(...this.state());
    const limit = this.rec.settings.daily_loss_limit;
    return { entry: { program: id, writes, events, run: { from: this.run, bar: k } }, dailyLossHit: limit !== undefined && dayLossReached(s.day_pnl, limit) };
  }

  /** Closes what is open at the last processed close (a pause or a stop); null when flat. */
  flatten(): JournalEntry | null {
    if (this.stats.open_positions === 0 || this.lastBar < 0) return null;
    // Engine.finish closes what is open at the close of its last slot: the scratch slot RING
    this.fills.length = 0;
    this.market.write(this.lastBar, RING);
    this.engine.finish();
    const t = this.market.ring.t[RING]!;
    const events = this.fills.map((f) => this.onFill({ ...f, t }, this.lastBar));
    this.clearTrades();
    this.mark(RING);
    this.pendingEntry = NONE;
    return { program: this.rec.id, writes: this.state(), events, run: { from: this.run, bar: null } };
  }

  /** This program's entry in the 3-second tick. */
  tickEntry(): TickEntry {
    const s = this.stats;
    const r2 = (x: number) => Math.round(x * 100) / 100;
    return { program: this.rec.id, created_by: this.rec.created_by, price: s.last_price, equity: r2(s.equity), pnl: r2(s.pnl), day_pnl: r2(s.day_pnl), position: s.position, open_positions: s.open_positions };
  }

  /** The statistics, written with every bar, and the book when it changed since it was last written. */
  state(): Write[] {
    const writes: Write[] = [{ op: 'set', key: K.stats(this.rec.id), value: programStats.encode({ ...this.stats }) }];
    const book: StoredBook = { ...this.engine.snapshot(), signal: this.pendingEntry };
    const json = JSON.stringify(book);
    if (json !== this.bookJson) writes.push({ op: 'set', key: K.book(this.rec.id), value: storedBooks.encode(book) });
    this.bookJson = json;
    return writes;
  }

  /** A write of this runner was not committed: the next one carries the book again. */
  forgetBook(): void {
    this.bookJson = undefined;
  }

  private blocked(want: number, dirBefore: ProgramStats['position'], openBefore: number): { code: string; message: string } {
    const sameDir = (want === LONG ? 'long' : 'short') === dirBefore;
    const { code, detail } = entryBlock(this.rec.settings, this.stats.day_trades, sameDir, openBefore);
    return { code, message: `${ACTION_NAME[want]} entry blocked: ${code} (${detail})` };
  }

  private onFill(f: FillEvent, bar: number): ProgramEvent {
    const s = this.stats;
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
    return {
      id: `${this.rec.id}-f${s.entries + s.trades}`,
      type: 'trade',
      program: this.rec.id,
      created_by: this.rec.created_by,
      t: f.t,
      bar,
      kind: f.kind,
      side: f.side,
      price: f.price,
      contracts: f.contracts,
      ...(f.reason ? { reason: f.reason === 'end' ? 'flatten' : f.reason } : {}),
      ...(f.pnl !== undefined ? { pnl: Math.round(f.pnl * 100) / 100 } : {}),
      realized_pnl: Math.round(s.realized_pnl * 100) / 100,
      day_pnl: Math.round(s.day_pnl * 100) / 100,
    };
  }

  private clearTrades(): void {
    const tr = this.engine.trades;
    tr.n = 0;
    for (const a of [tr.dir, tr.entryBar, tr.exitBar, tr.entryPrice, tr.exitPrice, tr.pnl, tr.reason]) a.length = 0;
  }

  /** Equity at the slot's close (the engine's mark) plus what was realized before this runner. */
  private mark(slot: number): void {
    const s = this.stats;
    s.equity = this.engine.equity[slot]! + this.offset;
    s.pnl = s.equity - this.rec.settings.capital;
    if (s.equity > s.peak) s.peak = s.equity;
    if (s.peak - s.equity > s.max_drawdown) s.max_drawdown = s.peak - s.equity;
  }
}

/**
 * Steps runners of one market through every bar closed by clock time `until` they have not
 * processed (at most MAX_CATCHUP back). Each runner steps on a slot right after it is written
 * (bars are pure: rewriting a slot is harmless).
 */
export function pumpMarket(market: Market, runners: Runner[], until: number, step: (r: Runner, k: number, slot: number) => void): void {
  const kNow = market.closedAt(until);
  const from = Math.max(Math.min(...runners.map((r) => r.lastBar + 1)), kNow - MAX_CATCHUP + 1);
  for (let k = from; k <= kNow; k++) {
    const slot = market.write(k);
    if (k > market.last) market.last = k;
    for (const r of runners) if (r.lastBar < k) step(r, k, slot);
  }
}
