import { forbidden } from '../errors.js';
import { codec, F } from '../store/codec.js';
import { partitionKeyFor, partitionKeys } from '../store/port.js';
import type { Settings } from './engine.js';
import type { StrategyId } from './strategies.js';
import type { SymbolId } from './symbols.js';

/**
 * Live trading programs: the records, statistics, events and store keys shared by the service
 * (programs.ts), the runner that drives one program (program-runner.ts), the journal that commits
 * its output (program-journal.ts) and the leases (program-leases.ts). docs/trading.md "Live programs".
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

/**
 * Bus topics: the events (signal, trade, status), kept in the Bus history for resume (their
 * position `<epoch>-<offset>` is the stream id), and the tick batches (not kept). Also WebSocket
 * topics for operators; `program:<id>` carries one program's events and ticks to its owner.
 */
export const PROGRAM_EVENTS_TOPIC = 'program:events';
export const PROGRAM_TICK_TOPIC = 'program:tick';
/** The WebSocket topic of one program. */
export const programTopic = (id: string) => `program:${id}`;
/** The document: a tick for running programs every 3 seconds. */
export const TICK_MS = 3000;
/** Events kept in the Bus history for Last-Event-ID resume. */
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
  /** The identity (account id) that created it: it and operators may manage it. */
  created_by: string | null;
  /**
   * The last market bar closed when the program was last started or resumed: it processes only
   * later bars (null until the first start). Also names the run: bar output of an earlier run is
   * never committed.
   */
  from_bar: number | null;
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

/**
 * Every event names its program and the program's creator (`created_by`: who may see it). `id` is
 * the event's own name for consumers that apply it once (the program's n-th signal `<program>-s<n>`,
 * n-th fill `<program>-f<n>`, a status `<program>-m<random>`); the stream's position of the event is
 * the SSE id, not this.
 */
export type ProgramEvent =
  | { id: string; type: 'signal'; program: string; created_by: string | null; t: number; bar: number; action: 'long' | 'short' | 'exit'; price: number }
  | {
      id: string;
      type: 'trade';
      program: string;
      created_by: string | null;
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
  | { id: string; type: 'status'; program: string; created_by: string | null; t: number; state: ProgramState | 'deleted'; previous: ProgramState | null; reason: string | null };

export interface TickEntry {
  program: string;
  created_by: string | null;
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
  name?: string | undefined;
  strategy: StrategyId;
  symbol: SymbolId;
  params: Record<string, number>;
  settings: Settings;
}

/** Stored program records, statistics and log entries; the events and ticks the Bus carries. */
export const programRecords = codec<ProgramRecord>('program', (r) => typeof r.id === 'string' && typeof r.state === 'string');
export const programStats = codec<ProgramStats>('program statistics');
export const logEntries = codec<LogEntry>('program log entry', { fields: { t: F.num, level: (v) => v === 'info' || v === 'warn', code: F.str, message: F.str } });
export const programEvents = codec<ProgramEvent>('program event', (r) => typeof r.type === 'string' && typeof r.program === 'string');
export const tickEvents = codec<TickEvent>('program tick', (r) => Array.isArray(r.programs));

/**
 * Whether a program keeps the partitioned layout (docs/partitions.md): every program created since
 * has an id of 16 hex digits (`p_` and 64 random bits) and lives under its aggregate
 * `trading:program:<id>`; a program of before (12 hex digits, or any other id) keeps the global
 * layout (`program:<id>`, `program:lease:<id>`, ...: one Redis only), read and written as before.
 */
export const partitioned = (id: string): boolean => /^p_[0-9a-f]{16}$/.test(id);

const at = (id: string, part: string, old: string) => (partitioned(id) ? `trading:program:${id}${part ? `:${part}` : ''}` : old);

/**
 * Store keys. A program's record, statistics, log, signals, equity, book, lease and alert are one
 * aggregate, so every command, lease renewal and journal commit is one update of one partition; the
 * lists of programs and of running programs are per partition (`trading:programs:{#p}`,
 * `trading:running:{#p}`, in the program's), merged on read with the global ones of before.
 */
export const K = {
  rec: (id: string) => at(id, '', `program:${id}`),
  stats: (id: string) => at(id, 'stats', `program:stats:${id}`),
  log: (id: string) => at(id, 'log', `program:log:${id}`),
  signals: (id: string) => at(id, 'signals', `program:signals:${id}`),
  equity: (id: string) => at(id, 'equity', `program:equity:${id}`),
  lease: (id: string) => at(id, 'lease', `program:lease:${id}`),
  /** Open positions, waiting order and day risk state of the running program (Engine.snapshot). */
  book: (id: string) => at(id, 'book', `program:book:${id}`),
  /** The program's alert (alerts.ts). */
  alert: (id: string) => at(id, 'alert', `program:alert:${id}`),
  /** The list of programs its record is listed in, by creation time. */
  all: (id: string) => (partitioned(id) ? partitionKeyFor('trading:programs', K.rec(id)) : 'program:all'),
  /** The list of running programs it is listed in while it runs. */
  running: (id: string) => (partitioned(id) ? partitionKeyFor('trading:running', K.rec(id)) : 'program:running'),
  /** Every part of the lists, merged on read. */
  allParts: [...partitionKeys('trading:programs'), 'program:all'],
  runningParts: [...partitionKeys('trading:running'), 'program:running'],
};

export function newRecord(id: string, input: CreateInput, caller: Caller | undefined, now: number): ProgramRecord {
  const { strategy, symbol, params, settings } = input;
  const name = input.name ?? `${strategy} ${symbol}`;
  return { id, name, strategy, symbol, params, settings, state: 'created', created_at: now, updated_at: now, reason: null, created_by: caller?.id ?? null, from_bar: null };
}

export function emptyStats(capital: number): ProgramStats {
  return {
    bars: 0, signals: 0, entries: 0, trades: 0, wins: 0, losses: 0, blocked: 0, realized_pnl: 0,
    equity: capital, pnl: 0, peak: capital, max_drawdown: 0, day_session: -1, day_pnl: 0, day_trades: 0,
    open_positions: 0, position: 'flat', last_price: null, last_bar: -1,
  };
}

/** The run a record is on: its from_bar (-1 for a record from before runs were kept). */
export const runOf = (rec: ProgramRecord): number => rec.from_bar ?? -1;

/** Who asks: an identity id, and whether it is an operator (who may manage every program). */
export interface Caller {
  id: string;
  operator: boolean;
}

/** Internal callers (no caller), operators and the program's creator. */
export function mayManage(rec: Pick<ProgramRecord, 'created_by'>, caller: Caller | undefined): boolean {
  return caller === undefined || caller.operator || (rec.created_by !== null && rec.created_by === caller.id);
}

export function checkAccess(rec: ProgramRecord, caller: Caller | undefined): void {
  if (!mayManage(rec, caller)) throw forbidden(`program ${rec.id} belongs to another trader`, { id: rec.id });
}
