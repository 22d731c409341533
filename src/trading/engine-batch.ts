import type { Candles } from './candles.js';
import { ATR } from './indicators.js';
import { EXIT, LONG, NONE } from './strategies.js';
import { dayLossReached, riskLimits, scheduleTest, type RiskSettings } from './risk.js';
import { SYMBOL_SPECS } from './symbols.js';

/** Closed trades, column-oriented. */
export interface TradeLog {
  n: number;
  dir: number[];
  entryBar: number[];
  exitBar: number[];
  entryPrice: number[];
  exitPrice: number[];
  pnl: number[];
  reason: number[];
}

export interface RunRange {
  /** First bar fed to the strategy and indicators (warm-up starts here). */
  from: number;
  /** First bar whose actions count and whose equity is measured. */
  tradeFrom: number;
  /** End (exclusive). */
  to: number;
}

export interface RawRun {
  trades: TradeLog;
  /** Marked-to-market equity at each bar's close for bars [tradeFrom, to). */
  equity: Float64Array;
  /** Bars with a position open during the bar. */
  exposedBars: number;
  commission: number;
  riskStops: number;
  capital: number;
  range: RunRange;
}

/** The settings a run reads (Settings of engine.ts, every default applied). */
export interface RunSettings extends RiskSettings {
  capital: number;
  contracts: number;
  slippage_ticks: number;
  commission: number;
  stop_loss_atr: number;
  take_profit_atr: number;
  stop_loss_points?: number | undefined;
  take_profit_points?: number | undefined;
  atr_period: number;
}
type Settings = RunSettings;

const R_SIGNAL = 0;
const R_STOP = 1;
const R_TAKE = 2;
const R_RISK = 3;
const R_END = 4;

/** True when a run's stop or target is in ATR multiples (it needs the ATR of its bars). */
export function needsAtr(settings: Settings): boolean {
  return (!settings.stop_loss_points && settings.stop_loss_atr > 0) || (!settings.take_profit_points && settings.take_profit_atr > 0);
}

/** Appends a trade at index n (a reused log is overwritten in place: its arrays keep their storage). */
function record(tr: TradeLog, dir: number, entryBar: number, exitBar: number, entry: number, price: number, pnl: number, reason: number): void {
  const k = tr.n++;
  tr.dir[k] = dir;
  tr.entryBar[k] = entryBar;
  tr.exitBar[k] = exitBar;
  tr.entryPrice[k] = entry;
  tr.exitPrice[k] = price;
  tr.pnl[k] = pnl;
  tr.reason[k] = reason;
}

/** An empty trade log. */
export const emptyTradeLog = (): TradeLog => ({ n: 0, dir: [], entryBar: [], exitBar: [], entryPrice: [], exitPrice: [], pnl: [], reason: [] });

/**
 * A whole batch run of the engine (no fill listener) with every piece of state in locals: the same
 * rules, the same arithmetic in the same order as Engine.step and the quiet-bar path of the streaming
 * engine, so the result is the same to the bit (the golden tests hold it). `atrS` (element j = bar
 * range.from + j) replaces the engine's own ATR when given. `equityBuf` and `tradesBuf` (the runs of
 * a grid, read before the next run starts) are storage the run reuses; in a reused trade log only the
 * first n entries are this run's.
 */
export function runBatch(
  cs: Candles,
  settings: Settings,
  range: RunRange,
  actions: Int8Array,
  atrS: Float64Array | null,
  equityBuf?: Float64Array,
  tradesBuf?: TradeLog,
): RawRun {
  const spec = SYMBOL_SPECS[cs.symbol];
  // numbers read from objects go through unary plus (the same value): the optimising compiler then
  // knows them as numbers and keeps the locals built from them unboxed
  const pvRaw = +spec.pointValue;
  const slip = settings.slippage_ticks * spec.tick;
  const contracts = +settings.contracts;
  const fee = settings.commission * contracts;
  const pvq = pvRaw * contracts;
  const limits = riskLimits(settings);
  const maxPos = limits.maxPositions;
  const slPts = +(settings.stop_loss_points ?? 0);
  const tpPts = +(settings.take_profit_points ?? 0);
  const slAtr = settings.stop_loss_points ? 0 : +settings.stop_loss_atr;
  const tpAtr = settings.take_profit_points ? 0 : +settings.take_profit_atr;
  const needAtr = slAtr > 0 || tpAtr > 0;
  const atrObj = needAtr && atrS === null ? new ATR(settings.atr_period) : null;
  const atrArr = needAtr ? atrS : null;
  const dayLossLimit = +limits.dayLossLimit;
  const dayTradeLimit = +limits.dayTradeLimit;
  const scheduleOk = scheduleTest(settings);
  const { from, tradeFrom, to } = range;
  // every element is written below, so a reused buffer needs no clearing
  const eqLen = Math.max(0, to - tradeFrom);
  const equity = equityBuf !== undefined && equityBuf.length >= eqLen ? equityBuf.subarray(0, eqLen) : new Float64Array(eqLen);
  const trades = tradesBuf ?? emptyTradeLog();
  trades.n = 0;
  const pEntry = new Float64Array(maxPos);
  const pSL = new Float64Array(maxPos);
  const pTP = new Float64Array(maxPos);
  const pBar = new Int32Array(maxPos);
  const { o: O, h: H, l: L, c: C, t: T, session: S } = cs;
  let npos = 0;
  let dir = 0;
  let cash = +settings.capital;
  let pend = NONE;
  let pendSL = 0;
  let pendTP = 0;
  let flatten = false;
  let halted = false;
  let day = -1;
  let dayPnl = 0;
  let dayTrades = 0;
  let exposed = 0;
  let commissionPaid = 0;
  let riskStops = 0;
  // the run ends inside the loop (the close-out is in the loop's optimised code, not after it)
  for (let i = from; ; i++) {
    if (i >= to) {
      // what is still open closes at the last close (no slippage)
      const last = to - 1;
      if (npos > 0 && last >= tradeFrom) {
        const exit = C[last]!;
        for (let k = npos - 1; k >= 0; k--) {
          const entry = pEntry[k]!;
          const gross = dir * (exit - entry) * contracts * pvRaw;
          cash += gross - fee;
          commissionPaid += fee;
          record(trades, dir, pBar[k]!, last, entry, exit, gross - 2 * fee, R_END);
          const l = --npos;
          if (k !== l) {
            pEntry[k] = pEntry[l]!;
            pBar[k] = pBar[l]!;
          }
          dayPnl += gross - 2 * fee;
          if (!halted && dayLossReached(dayPnl, dayLossLimit)) {
            halted = true;
            riskStops++;
          }
        }
        equity[last - tradeFrom] = cash;
      }
      break;
    }
    // runs of quiet bars (no action, nothing pending, same session) with at most one position open:
    // only the stop/target test, the ATR and the mark to market; the bar that ends a run (an action, a
    // new session, a level hit) goes through the full step below
    if (pend === NONE && !flatten && i >= tradeFrom && npos <= 1) {
      if (npos === 0) {
        while (i < to && actions[i] === NONE && S[i] === day) {
          if (atrObj !== null) atrObj.update(H[i]!, L[i]!, C[i]!);
          equity[i - tradeFrom] = cash;
          i++;
        }
      } else {
        const e0 = pEntry[0]!;
        const sl = pSL[0]!;
        const tp = pTP[0]!;
        while (i < to && actions[i] === NONE && S[i] === day) {
          const o = O[i]!;
          const h = H[i]!;
          const l = L[i]!;
          const c = C[i]!;
          if (dir === LONG ? o <= sl || o >= tp || l <= sl || h >= tp : o >= sl || o <= tp || h >= sl || l <= tp) break;
          exposed++;
          if (atrObj !== null) atrObj.update(h, l, c);
          // the quiet bar's mark to market (sum over one position: 0 + (c - e0) is c - e0)
          equity[i - tradeFrom] = cash + dir * (c - e0) * pvq;
          i++;
        }
      }
      if (i >= to) continue;
    }
    const action = actions[i]!;
    const o = O[i]!;
    const h = H[i]!;
    const l = L[i]!;
    const c = C[i]!;
    // the streaming engine's quiet bar: nothing to fill, no decision, same session
    const quiet = action === NONE && pend === NONE && !flatten && i >= tradeFrom && S[i] === day;
    if (!quiet) {
      const sess = S[i]!;
      if (sess !== day) {
        day = sess;
        dayPnl = 0;
        dayTrades = 0;
        halted = false;
      }
      // orders waiting for this open: at most one close-all (a risk flatten leaves nothing for a signal)
      let allR = -1;
      if (flatten) {
        flatten = false;
        if (npos > 0) allR = R_RISK;
      }
      const p = pend;
      pend = NONE;
      if (allR < 0 && p !== NONE && npos > 0 && (p === EXIT || dir !== p)) allR = R_SIGNAL;
      if (allR >= 0) {
        const exit = o - dir * slip;
        for (let k = npos - 1; k >= 0; k--) {
          const entry = pEntry[k]!;
          const gross = dir * (exit - entry) * contracts * pvRaw;
          cash += gross - fee;
          commissionPaid += fee;
          const pnl = gross - 2 * fee;
          if (i >= tradeFrom) record(trades, dir, pBar[k]!, i, entry, exit, pnl, allR);
          const last = --npos;
          if (k !== last) {
            pEntry[k] = pEntry[last]!;
            pSL[k] = pSL[last]!;
            pTP[k] = pTP[last]!;
            pBar[k] = pBar[last]!;
          }
          if (npos === 0) dir = 0;
          dayPnl += pnl;
          if (!halted && dayLossReached(dayPnl, dayLossLimit)) {
            halted = true;
            riskStops++;
            if (npos > 0) flatten = true;
          }
        }
      }
      if (p !== NONE && p !== EXIT && !halted && npos < maxPos && dayTrades < dayTradeLimit && (scheduleOk === null || scheduleOk(T[i]!))) {
        const price = o + p * slip;
        const k = npos++;
        dir = p;
        pEntry[k] = price;
        pSL[k] = pendSL > 0 ? price - p * pendSL : NaN;
        pTP[k] = pendTP > 0 ? price + p * pendTP : NaN;
        pBar[k] = i;
        cash -= fee;
        commissionPaid += fee;
        dayTrades++;
      }
    }
    // stop-loss / take-profit
    if (npos > 0) {
      if (i >= tradeFrom) exposed++;
      for (let k = npos - 1; k >= 0; k--) {
        const sl = pSL[k]!;
        const tp = pTP[k]!;
        let px = 0;
        let r = -1;
        if (dir === LONG) {
          if (o <= sl) (px = o - slip), (r = R_STOP);
          else if (o >= tp) (px = o), (r = R_TAKE);
          else if (l <= sl) (px = sl - slip), (r = R_STOP);
          else if (h >= tp) (px = tp), (r = R_TAKE);
        } else {
          if (o >= sl) (px = o + slip), (r = R_STOP);
          else if (o <= tp) (px = o), (r = R_TAKE);
          else if (h >= sl) (px = sl + slip), (r = R_STOP);
          else if (l <= tp) (px = tp), (r = R_TAKE);
        }
        if (r < 0) continue;
        const entry = pEntry[k]!;
        const gross = dir * (px - entry) * contracts * pvRaw;
        cash += gross - fee;
        commissionPaid += fee;
        const pnl = gross - 2 * fee;
        if (i >= tradeFrom) record(trades, dir, pBar[k]!, i, entry, px, pnl, r);
        const last = --npos;
        if (k !== last) {
          pEntry[k] = pEntry[last]!;
          pSL[k] = pSL[last]!;
          pTP[k] = pTP[last]!;
          pBar[k] = pBar[last]!;
        }
        if (npos === 0) dir = 0;
        dayPnl += pnl;
        if (!halted && dayLossReached(dayPnl, dayLossLimit)) {
          halted = true;
          riskStops++;
          if (npos > 0) flatten = true;
        }
      }
    }
    const atr = atrObj !== null ? atrObj.update(h, l, c) : 0;
    if (i >= tradeFrom) {
      // mark to market (the two paths of the streaming engine multiply in their own order)
      let e = cash;
      if (npos > 0) {
        let sum = 0;
        for (let k = 0; k < npos; k++) sum += c - pEntry[k]!;
        e += quiet ? dir * sum * pvq : dir * sum * contracts * pvRaw;
      }
      equity[i - tradeFrom] = e;
      // this bar's decision, filled at the next open
      if (action !== NONE && i + 1 < to) {
        const a = atrArr !== null ? atrArr[i - from]! : atr;
        if (action === EXIT) pend = EXIT;
        else if (a === a) {
          pend = action;
          pendSL = slPts > 0 ? slPts : slAtr * a;
          pendTP = tpPts > 0 ? tpPts : tpAtr * a;
        }
      }
    }
  }
  return { trades, equity, exposedBars: exposed, commission: commissionPaid, riskStops, capital: settings.capital, range };
}
