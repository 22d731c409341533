import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import type { Json, Store, Write } from '../store/port.js';
import type { Market, Markets } from './market.js';
import { Journal } from './program-journal.js';
import { Leases } from './program-leases.js';
import {
  emptyStats,
  EQUITY_CAP,
  K,
  MAX_CATCHUP,
  PROGRAM_TICK_TOPIC,
  TICK_MS,
  type LogEntry,
  type Move,
  type ProgramRecord,
  type ProgramStats,
  type TickEntry,
  type TickEvent,
  programRecords, programStats, tickEvents,
} from './program-model.js';
import { logWrite, pumpMarket, Runner, storedBooks } from './program-runner.js';

export interface DriverOptions {
  store: Store;
  clock: Clock;
  bus: Pick<Bus, 'publish' | 'publishMany'>;
  markets: Markets;
  owner: string;
  barMs: number;
  leaseMs: number;
  pumpMs?: number;
  onError?: (err: unknown) => void;
  /** Alerts: passed to the journal (program-journal.ts). */
  alerts?: { kick(): void };
  /** What the pump timer runs (the service's pump, so a wrapper around it sees every pump); default pump(). */
  runPump?: () => Promise<void>;
  /** A program whose day loss reached its limit: the service stops it. */
  stop(id: string, move: Move, reason: string): Promise<unknown>;
}

/**
 * The running programs of this process: which it drives (a program is driven by exactly one
 * process, the holder of its lease, program-leases.ts), the market pump that feeds them closed bars
 * and the 3-second ticks, and their hand-over (claim after a start or a failover, release at a pause,
 * a stop or a lost lease). Every bar's output goes through the Journal (program-journal.ts).
 */
export class Driver {
  readonly journal: Journal;
  readonly leases: Leases;
  private readonly runners = new Map<string, Runner>();
  /** Programs being claimed (between taking the lease and the runner). */
  private readonly claiming = new Set<string>();
  private pumping: Promise<void> | undefined;
  private lastTick: number;
  private timers: NodeJS.Timeout[] = [];
  private closed = false;

  constructor(private readonly opts: DriverOptions) {
    this.lastTick = Math.floor(opts.clock.now() / TICK_MS);
    this.journal = new Journal({ store: opts.store, bus: opts.bus, owner: opts.owner, barMs: opts.barMs, onError: opts.onError, ...(opts.alerts ? { alerts: opts.alerts } : {}) });
    this.leases = new Leases(opts.store, opts.owner, opts.leaseMs);
  }

  /** Claims running programs, starts the lease round and the pump. */
  async start(): Promise<void> {
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
      (this.opts.runPump ?? (() => this.pump()))()
        .catch((e) => this.opts.onError?.(e))
        .finally(() => this.schedulePump());
    }, wait);
    t.unref();
    this.timers.push(t);
  }

  /** Shutdown: programs stay running in the store (positions too) and continue on the next process that claims them. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    await this.pumping;
    await this.journal.flushed();
    const ids = [...this.runners.keys()];
    this.runners.clear();
    await Promise.all(ids.map((id) => this.leases.drop(id).catch((e) => this.opts.onError?.(e))));
  }

  /** Program ids this process drives. */
  owned(): string[] {
    return [...this.runners.keys()];
  }

  /** The live statistics of a program this process drives, else the stored ones. */
  stats(id: string, stored: ProgramStats): ProgramStats {
    const r = this.runners.get(id);
    return r ? { ...r.stats } : stored;
  }

  /** A status event (from any process): a program that left `running` is no longer driven here. */
  left(id: string, state: string, t: number): void {
    const r = this.runners.get(id);
    if (r) this.release(r, state === 'deleted' ? 'deleted' : 'flatten', t);
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
    for (const r of this.runners.values()) bySymbol.set(r.market, [...(bySymbol.get(r.market) ?? []), r]);
    for (const [market, runners] of bySymbol) pumpMarket(market, runners, now, (r, k, slot) => this.step(r, k, slot, now));
    const tick = Math.floor(now / TICK_MS);
    if (tick > this.lastTick) {
      this.lastTick = tick;
      await this.tick(tick * TICK_MS);
    }
    await this.journal.flushed();
  }

  private step(r: Runner, k: number, slot: number, now: number): void {
    if (r.stopping || this.runners.get(r.rec.id) !== r) return;
    const { entry, dailyLossHit } = r.step(k, slot, now);
    void this.journal.add(entry).then((ok) => ok || r.forgetBook());
    if (dailyLossHit) {
      r.stopping = true;
      void this.opts.stop(r.rec.id, 'stop', 'daily_loss_limit').catch((e) => this.opts.onError?.(e));
    }
  }

  private async tick(t: number): Promise<void> {
    const programs: TickEntry[] = [];
    for (const r of this.runners.values()) {
      if (r.stopping) continue;
      const entry = r.tickEntry();
      programs.push(entry);
      const point = { t, equity: entry.equity };
      void this.journal.add({ program: r.rec.id, writes: [{ op: 'push', key: K.equity(r.rec.id), value: point, cap: EQUITY_CAP }], events: [], run: { from: r.run, bar: r.lastBar } });
    }
    if (programs.length === 0) return;
    const ev: TickEvent = { type: 'tick', t, programs };
    await this.opts.bus.publish(PROGRAM_TICK_TOPIC, tickEvents.encode(ev));
  }

  // ---- ownership ----------------------------------------------------------------------------

  /** Renews this process's leases and claims running programs nobody drives. */
  async leaseRound(): Promise<void> {
    if (this.closed) return;
    await Promise.all(
      [...this.runners.values()].map(async (r) => {
        const verdict = await this.leases.renew(r.rec.id, r.run);
        if (verdict === 'mine') return;
        if (verdict === 'lost') {
          if (this.runners.get(r.rec.id) === r) this.runners.delete(r.rec.id);
        } else if (verdict === 'deleted') this.release(r, 'deleted');
        else if (verdict === 'other_run') this.release(r, 'drop');
        else this.release(r, 'flatten', verdict.left.updated_at);
      }),
    );
    for (const id of await this.leases.running()) if (!this.runners.has(id)) await this.claim(id);
  }

  /** Takes the program's lease when free (or drives it when `leased`: already taken) and starts driving it. */
  async claim(id: string, leased = false): Promise<void> {
    if (this.closed || this.runners.has(id) || this.claiming.has(id)) return;
    this.claiming.add(id);
    try {
      await this.claimHeld(id, leased);
    } finally {
      this.claiming.delete(id);
    }
  }

  private async claimHeld(id: string, leased: boolean): Promise<void> {
    if (!leased && !(await this.leases.hold(id))) return;
    // this process's own earlier output (the flatten of a previous run) lands first, and the
    // lease is held again in case that release gave it up meanwhile
    await this.journal.flushed();
    if (!(await this.leases.hold(id))) return;
    const [rec, stored, book] = await this.opts.store.getMany([K.rec(id), K.stats(id), K.book(id)]);
    const r = programRecords.decode(rec);
    if (this.closed || !r || r.state !== 'running' || this.runners.has(id)) {
      if (!this.runners.has(id)) await this.leases.drop(id);
      return;
    }
    const market = this.opts.markets.get(r.symbol);
    const kNow = market.closedAt(this.opts.clock.now());
    const stats = programStats.decode(stored) ?? emptyStats(r.settings.capital);
    let start = Math.max(stats.last_bar, r.from_bar ?? kNow);
    const writes: Write[] = [];
    if (start < kNow - MAX_CATCHUP) {
      writes.push(this.logWrite(id, 'warn', 'gap', `bars ${start + 1}-${kNow - MAX_CATCHUP} closed while no process drove the program: skipped`));
      start = kNow - MAX_CATCHUP;
    }
    const runner = new Runner(r, stats, market, storedBooks.decode(book), start);
    this.runners.set(id, runner);
    const restored = runner.stats.open_positions > 0 ? `; ${runner.stats.open_positions} open position(s) restored` : '';
    writes.push(this.logWrite(id, 'info', 'claimed', `driven by ${this.opts.owner} from bar ${start}${restored}`));
    void this.journal.add({ program: id, writes, events: [] });
  }

  /**
   * Stops driving a program. `flatten` (it was paused or stopped at time `until`): processes the
   * bars that closed before that moment, closes open positions at the last close and saves; `drop`:
   * the program is on another run now; `deleted`: nothing to save. The lease goes once the output
   * is committed.
   */
  private release(r: Runner, how: 'flatten' | 'deleted' | 'drop', until?: number): void {
    const id = r.rec.id;
    if (this.runners.get(id) !== r) return;
    if (how === 'flatten') {
      r.stopping = true; // the bars before the pause still count, but cannot stop it again
      const now = this.opts.clock.now();
      pumpMarket(r.market, [r], Math.min(until ?? now, now), (_, k, slot) => void this.journal.add(r.step(k, slot, now).entry));
      const flat = r.flatten();
      void this.journal.add(flat ?? { program: id, writes: r.state(), events: [], run: { from: r.run, bar: null } });
    }
    this.runners.delete(id);
    r.stopping = true;
    void this.journal
      .flushed()
      .then(() => (this.runners.has(id) || this.claiming.has(id) ? undefined : this.leases.drop(id)))
      .catch((e) => this.opts.onError?.(e));
  }

  logWrite(id: string, level: LogEntry['level'], code: string, message: string): Write {
    return logWrite(id, { t: this.opts.clock.now(), level, code, message });
  }
}
