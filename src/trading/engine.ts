import type { Candles } from './candles.js';
import { needsAtr, runBatch, type RawRun, type RunRange, type TradeLog } from './engine-batch.js';
import { ATR } from './indicators.js';
import { EXIT, LONG, NONE, SHORT, type StrategyRun } from './strategies.js';
import { dayLossReached, riskLimits, scheduleTest } from './risk.js';
import { SYMBOL_SPECS } from './symbols.js';

export { defaultSettings, MAX_POSITIONS, REASONS, settingsSchema, type EngineBook, type ExitReason, type FillEvent, type Settings } from './engine-settings.js';
import { MAX_POSITIONS, REASONS, type EngineBook, type FillEvent, type Settings } from './engine-settings.js';

const R_SIGNAL = 0;
const R_STOP = 1;
const R_TAKE = 2;
const R_RISK = 3;
const R_END = 4;

export type { RawRun, RunRange, TradeLog } from './engine-batch.js';

const numOrNull = (x: number) => (Number.isNaN(x) ? null : x);

/**
 * The simulation engine: one for backtests and live programs. Bar by bar (`step`):
 *  1. a new session resets the day's P&L, entry count and halt;
 *  2. a pending risk flatten, then the previous bar's action, fill at this bar's open (market:
 *     adverse slippage); an opposite signal closes and reverses, EXIT closes everything;
 *  3. every open position checks its stop-loss and take-profit: a gap through a level fills at the
 *     open, otherwise at the level; both inside one bar takes the stop (conservative);
 *  4. equity is marked at the close;
 *  5. this bar's action waits for the next bar's open (stop/target distances use the ATR known now).
 * P&L = (exit - entry) x direction x contracts x point value - commission x contracts per side.
 */
export class Engine {
  private eqArr: Float64Array | null = null;
  readonly trades: TradeLog = { n: 0, dir: [], entryBar: [], exitBar: [], entryPrice: [], exitPrice: [], pnl: [], reason: [] };
  private readonly pv: number;
  private readonly slip: number;
  private readonly comm: number;
  private readonly contracts: number;
  private readonly maxPos: number;
  private readonly slPts: number;
  private readonly tpPts: number;
  private readonly slAtr: number;
  private readonly tpAtr: number;
  private readonly atr: ATR | null;
  private readonly dayLossLimit: number;
  private readonly dayTradeLimit: number;
  /** The schedule's test of a fill bar's open time; null without a schedule. */
  private readonly scheduleOk: ((t: number) => boolean) | null;
  // open positions (all in one direction)
  private readonly pEntry = new Float64Array(MAX_POSITIONS);
  private readonly pSL = new Float64Array(MAX_POSITIONS);
  private readonly pTP = new Float64Array(MAX_POSITIONS);
  private readonly pBar = new Int32Array(MAX_POSITIONS);
  private npos = 0;
  private dir = 0;
  private cash: number;
  private pend = NONE;
  private pendSL = 0;
  private pendTP = 0;
  private flatten = false;
  private halted = false;
  private day = -1;
  private dayPnl = 0;
  private dayTrades = 0;
  exposedBars = 0;
  commissionPaid = 0;
  riskStops = 0;
  /** Live programs listen to fills (a fill updates P&L and can stop the program). */
  onFill: ((e: FillEvent) => void) | null = null;

  constructor(
    private readonly cs: Candles,
    readonly settings: Settings,
    readonly range: RunRange = { from: 0, tradeFrom: 0, to: cs.n },
  ) {
    const spec = SYMBOL_SPECS[cs.symbol];
    this.pv = spec.pointValue;
    this.slip = settings.slippage_ticks * spec.tick;
    this.comm = settings.commission;
    this.contracts = settings.contracts;
    const limits = riskLimits(settings);
    this.maxPos = limits.maxPositions;
    this.slPts = settings.stop_loss_points ?? 0;
    this.tpPts = settings.take_profit_points ?? 0;
    this.slAtr = settings.stop_loss_points ? 0 : settings.stop_loss_atr;
    this.tpAtr = settings.take_profit_points ? 0 : settings.take_profit_atr;
    this.atr = needsAtr(settings) ? new ATR(settings.atr_period) : null;
    this.dayLossLimit = limits.dayLossLimit;
    this.dayTradeLimit = limits.dayTradeLimit;
    this.scheduleOk = scheduleTest(settings);
    this.cash = settings.capital;
  }

  /** Equity at each bar's close for bars [tradeFrom, to) (allocated on first use: batch runs keep their own). */
  get equity(): Float64Array {
    return (this.eqArr ??= new Float64Array(Math.max(0, this.range.to - this.range.tradeFrom)));
  }

  /** Runs a strategy over the range: actions in one batch loop, then the engine loop. */
  run(strategy: StrategyRun): RawRun {
    const { from, to } = this.range;
    const actions = new Int8Array(this.cs.n);
    strategy.fill(this.cs, from, to, actions);
    return this.runActions(actions);
  }

  /**
   * Runs given actions (actions[i] is decided at bar i's close): a fresh engine without a fill
   * listener runs the whole range in runBatch (state in locals); otherwise bar by bar through `step`.
   */
  runActions(actions: Int8Array): RawRun {
    if (this.fresh && this.onFill === null) {
      return runBatch(this.cs, this.settings, this.range, actions, null);
    }
    for (let i = this.range.from; i < this.range.to; i++) this.step(i, actions[i]!);
    return this.finish();
  }

  /** No bar processed yet. */
  private fresh = true;

  /** One bar. Live programs call this as each candle closes. */
  step(i: number, action: number): void {
    this.fresh = false;
    const cs = this.cs;
    const o = cs.o[i]!;
    const h = cs.h[i]!;
    const l = cs.l[i]!;
    const c = cs.c[i]!;
    const sess = cs.session[i]!;
    if (sess !== this.day) {
      this.day = sess;
      this.dayPnl = 0;
      this.dayTrades = 0;
      this.halted = false;
    }
    // 2. orders waiting for this open
    if (this.flatten) {
      this.flatten = false;
      if (this.npos > 0) this.closeAll(i, o, R_RISK);
    }
    const pend = this.pend;
    if (pend !== NONE) {
      this.pend = NONE;
      if (pend === EXIT) {
        if (this.npos > 0) this.closeAll(i, o, R_SIGNAL);
      } else {
        if (this.npos > 0 && this.dir !== pend) this.closeAll(i, o, R_SIGNAL);
        if (
          !this.halted &&
          this.npos < this.maxPos &&
          this.dayTrades < this.dayTradeLimit &&
          (this.scheduleOk === null || this.scheduleOk(cs.t[i]!))
        ) {
          this.open(i, o, pend);
        }
      }
    }
    // 3. stop-loss / take-profit
    if (this.npos > 0) {
      this.exposedBars += i >= this.range.tradeFrom ? 1 : 0;
      this.checkExits(i, o, h, l);
    }
    // 4. mark to market
    const atr = this.atr !== null ? this.atr.update(h, l, c) : 0;
    if (i >= this.range.tradeFrom) {
      let eq = this.cash;
      if (this.npos > 0) {
        let sum = 0;
        for (let k = 0; k < this.npos; k++) sum += c - this.pEntry[k]!;
        eq += this.dir * sum * this.contracts * this.pv;
      }
      this.equity[i - this.range.tradeFrom] = eq;
      // 5. this bar's decision, filled at the next open
      if (action !== NONE && i + 1 < this.range.to) {
        if (action === EXIT) this.pend = EXIT;
        else if (atr === atr) {
          this.pend = action;
          this.pendSL = this.slPts > 0 ? this.slPts : this.slAtr * atr;
          this.pendTP = this.tpPts > 0 ? this.tpPts : this.tpAtr * atr;
        }
      }
    }
  }

  private open(i: number, o: number, dir: number): void {
    const price = o + dir * this.slip;
    const k = this.npos++;
    this.dir = dir;
    this.pEntry[k] = price;
    this.pSL[k] = this.pendSL > 0 ? price - dir * this.pendSL : NaN;
    this.pTP[k] = this.pendTP > 0 ? price + dir * this.pendTP : NaN;
    this.pBar[k] = i;
    const fee = this.comm * this.contracts;
    this.cash -= fee;
    this.commissionPaid += fee;
    this.dayTrades++;
    if (this.onFill) {
      this.onFill({ bar: i, t: this.cs.t[i]!, kind: 'entry', side: dir === LONG ? 'buy' : 'sell', price, contracts: this.contracts });
    }
  }

  private checkExits(i: number, o: number, h: number, l: number): void {
    const dir = this.dir;
    for (let k = this.npos - 1; k >= 0; k--) {
      const sl = this.pSL[k]!;
      const tp = this.pTP[k]!;
      if (dir === LONG) {
        if (o <= sl) this.close(k, i, o - this.slip, R_STOP); // gap through the stop
        else if (o >= tp) this.close(k, i, o, R_TAKE); // gap through the target
        else if (l <= sl) this.close(k, i, sl - this.slip, R_STOP); // stop first when both are hit
        else if (h >= tp) this.close(k, i, tp, R_TAKE);
      } else {
        if (o >= sl) this.close(k, i, o + this.slip, R_STOP);
        else if (o <= tp) this.close(k, i, o, R_TAKE);
        else if (h >= sl) this.close(k, i, sl + this.slip, R_STOP);
        else if (l <= tp) this.close(k, i, tp, R_TAKE);
      }
    }
  }

  private closeAll(i: number, price: number, reason: number): void {
    const exit = reason === R_END ? price : price - this.dir * this.slip;
    for (let k = this.npos - 1; k >= 0; k--) this.close(k, i, exit, reason);
  }

  /** Closes position k at `price` (slippage already applied). */
  private close(k: number, i: number, price: number, reason: number): void {
    const dir = this.dir;
    const entry = this.pEntry[k]!;
    const fee = this.comm * this.contracts;
    const gross = dir * (price - entry) * this.contracts * this.pv;
    this.cash += gross - fee;
    this.commissionPaid += fee;
    const pnl = gross - 2 * fee;
    const tr = this.trades;
    if (i >= this.range.tradeFrom || reason === R_END) {
      tr.n++;
      tr.dir.push(dir);
      tr.entryBar.push(this.pBar[k]!);
      tr.exitBar.push(i);
      tr.entryPrice.push(entry);
      tr.exitPrice.push(price);
      tr.pnl.push(pnl);
      tr.reason.push(reason);
    }
    // remove k (swap with the last)
    const last = --this.npos;
    if (k !== last) {
      this.pEntry[k] = this.pEntry[last]!;
      this.pSL[k] = this.pSL[last]!;
      this.pTP[k] = this.pTP[last]!;
      this.pBar[k] = this.pBar[last]!;
    }
    if (this.npos === 0) this.dir = 0;
    this.dayPnl += pnl;
    if (this.onFill) {
      this.onFill({
        bar: i,
        t: this.cs.t[i]!,
        kind: 'exit',
        side: dir === LONG ? 'sell' : 'buy',
        price,
        contracts: this.contracts,
        reason: REASONS[reason],
        pnl,
      });
    }
    if (!this.halted && dayLossReached(this.dayPnl, this.dayLossLimit)) {
      // the daily loss limit: no entry for the rest of the session, flatten at the next open
      this.halted = true;
      this.riskStops++;
      if (this.npos > 0 && reason !== R_END) this.flatten = true;
    }
  }

  /**
   * The book of a live run: open positions, the order waiting for the next open and the day's risk
   * state (a live program keeps it with its statistics, so a new owner continues with it).
   */
  snapshot(): EngineBook {
    const positions: EngineBook['positions'] = [];
    for (let k = 0; k < this.npos; k++) positions.push({ entry: this.pEntry[k]!, sl: numOrNull(this.pSL[k]!), tp: numOrNull(this.pTP[k]!), bar: this.pBar[k]! });
    return {
      dir: this.dir,
      positions,
      pend: this.pend,
      pend_sl: this.pendSL,
      pend_tp: this.pendTP,
      flatten: this.flatten,
      halted: this.halted,
      day: this.day,
      day_pnl: this.dayPnl,
      day_trades: this.dayTrades,
    };
  }

  /**
   * Continues from a book: the cash is the capital less the entry commissions of the open positions
   * (what this engine would hold had it opened them), so later fills settle exactly.
   */
  restore(b: EngineBook): void {
    this.fresh = false;
    const n = Math.min(b.positions.length, MAX_POSITIONS);
    for (let k = 0; k < n; k++) {
      const p = b.positions[k]!;
      this.pEntry[k] = p.entry;
      this.pSL[k] = p.sl ?? NaN;
      this.pTP[k] = p.tp ?? NaN;
      this.pBar[k] = p.bar;
    }
    this.npos = n;
    this.dir = n > 0 ? b.dir : 0;
    this.cash = this.settings.capital - n * this.comm * this.contracts;
    this.pend = b.pend;
    this.pendSL = b.pend_sl;
    this.pendTP = b.pend_tp;
    this.flatten = b.flatten;
    this.halted = b.halted;
    this.day = b.day;
    this.dayPnl = b.day_pnl;
    this.dayTrades = b.day_trades;
  }

  /** True once today's loss reached the limit (a live program stops on it). */
  get haltedToday(): boolean {
    return this.halted;
  }

  /** Closes what is open at the last close (no slippage) and returns the run. */
  finish(): RawRun {
    const last = this.range.to - 1;
    if (this.npos > 0 && last >= this.range.tradeFrom) {
      this.closeAll(last, this.cs.c[last]!, R_END);
      this.equity[last - this.range.tradeFrom] = this.cash;
    }
    return {
      trades: this.trades,
      equity: this.equity,
      exposedBars: this.exposedBars,
      commission: this.commissionPaid,
      riskStops: this.riskStops,
      capital: this.settings.capital,
      range: this.range,
    };
  }
}

export { EXIT, LONG, NONE, SHORT };
