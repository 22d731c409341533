import { randomBytes } from 'node:crypto';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { conflict, notFound } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { Markets, type Market } from './market.js';
import { Journal } from './program-journal.js';
import { Leases } from './program-leases.js';
import {
  emptyStats,
  EQUITY_CAP,
  K,
  MAX_CATCHUP,
  MAX_PROGRAMS,
  MOVES,
  PROGRAM_EVENTS_TOPIC,
  PROGRAM_TICK_TOPIC,
  TICK_MS,
  checkAccess,
  mayManage,
  type Caller,
  type CreateInput,
  type LogEntry,
  type Move,
  type ProgramEvent,
  type ProgramRecord,
  type ProgramStats,
  type TickEntry,
  type TickEvent,
} from './program-model.js';
import { logWrite, pumpMarket, Runner, type StoredBook } from './program-runner.js';

export * from './program-model.js';

/**
 * Live trading programs (docs/trading.md "Live programs"): the commands (create, start, pause,
 * stop, delete), the queries, and the market pump of this process. A running program is driven by
 * exactly one process, the holder of its lease (program-leases.ts), through a Runner
 * (program-runner.ts); every bar's output is committed by the Journal (program-journal.ts). A
 * program processes only bars that close after it was started or resumed, each at most once.
 * Programs belong to the identity that created them: a caller that is neither it nor an operator
 * gets 403. Knows no sockets.
 */

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

type WithStats = ProgramRecord & { stats: ProgramStats };

export class ProgramService {
  readonly markets: Markets;
  readonly owner: string;
  private readonly runners = new Map<string, Runner>();
  /** Programs being claimed (between taking the lease and the runner). */
  private readonly claiming = new Set<string>();
  private readonly journal: Journal;
  private readonly leases: Leases;
  private pumping: Promise<void> | undefined;
  private lastTick: number;
  private timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void) | undefined;
  private closed = false;

  constructor(private readonly opts: ProgramServiceOptions) {
    this.markets = new Markets(opts.barMs);
    this.owner = opts.owner ?? `${process.pid}-${randomBytes(4).toString('hex')}`;
    this.lastTick = Math.floor(opts.clock.now() / TICK_MS);
    this.journal = new Journal({ store: opts.store, bus: opts.bus, owner: this.owner, barMs: opts.barMs, onError: opts.onError });
    this.leases = new Leases(opts.store, this.owner, opts.leaseMs);
  }

  // ---- lifecycle of the service -------------------------------------------------------------

  /** Reacts to status events from any process, claims running programs, starts the timers. */
  async start(): Promise<void> {
    this.unsubscribe = this.opts.bus.onMessage(({ topic, message }) => {
      if (topic !== PROGRAM_EVENTS_TOPIC) return;
      const ev = message as unknown as ProgramEvent;
      if (ev.type === 'status' && ev.state !== 'running') {
        const r = this.runners.get(ev.program);
        if (r) this.release(r, ev.state === 'deleted' ? 'deleted' : 'flatten', ev.t);
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

  /** Shutdown: programs stay running in the store (positions too) and continue on the next process that claims them. */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.unsubscribe?.();
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

  // ---- commands -----------------------------------------------------------------------------

  async create(input: CreateInput, caller?: Caller): Promise<WithStats> {
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
      created_by: caller?.id ?? null,
      from_bar: null,
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
    void this.journal.add({ program: id, writes: [this.logWrite(id, 'info', 'created', `created from ${rec.strategy} on ${rec.symbol}`)], events: [] });
    return { ...rec, stats };
  }

  /** The caller's programs (every program for an operator or an internal caller). */
  async list(caller?: Caller): Promise<WithStats[]> {
    const ids = (await this.opts.store.indexRange(K.all)).map((e) => e.member);
    if (ids.length === 0) return [];
    const vals = await this.opts.store.getMany([...ids.map(K.rec), ...ids.map(K.stats)]);
    const out: WithStats[] = [];
    ids.forEach((id, i) => {
      const rec = vals[i] as unknown as ProgramRecord | undefined;
      if (!rec || !mayManage(rec, caller)) return;
      out.push({ ...rec, stats: this.liveStats(id, (vals[ids.length + i] as unknown as ProgramStats) ?? emptyStats(rec.settings.capital)) });
    });
    return out;
  }

  async get(id: string, caller?: Caller): Promise<WithStats & { owner: string | null }> {
    const [rec, stats, owner] = await this.opts.store.getMany([K.rec(id), K.stats(id), K.lease(id)]);
    if (!rec) throw notFound('program_not_found', `no program ${id}`, { id });
    const r = rec as unknown as ProgramRecord;
    checkAccess(r, caller);
    return { ...r, stats: this.liveStats(id, (stats as unknown as ProgramStats) ?? emptyStats(r.settings.capital)), owner: (owner as string) ?? null };
  }

  async logs(id: string, limit = 200, caller?: Caller) {
    await this.get(id, caller);
    const [logs, signals, equity] = await Promise.all([
      this.opts.store.range<LogEntry & Json>(K.log(id), -limit, -1),
      this.opts.store.range<Json>(K.signals(id), -limit, -1),
      this.opts.store.range<Json>(K.equity(id), 0, -1),
    ]);
    return { id, logs, signals, equity };
  }

  /**
   * start / pause / stop. A move the state forbids: 409 `invalid_state` with the current state.
   * Starting (or resuming) sets from_bar to the last bar closed now: the program processes only
   * later bars. Starting takes the lease in the same atomic write, so no other process's lease
   * round can claim the program between the move and this process driving it.
   */
  async move(id: string, move: Move, caller?: Caller, reason: string = move): Promise<ProgramRecord> {
    const now = this.opts.clock.now();
    const { rec, previous, leased } = await this.opts.store.update([K.rec(id), K.lease(id)], ([cur, lease]) => {
      if (!cur) throw notFound('program_not_found', `no program ${id}`, { id });
      const r = cur as unknown as ProgramRecord;
      checkAccess(r, caller);
      const rule = MOVES[move];
      if (!rule.from.includes(r.state)) {
        throw conflict('invalid_state', `cannot ${move} a program that is ${r.state}`, { id, state: r.state, move, allowed_from: rule.from });
      }
      const running = rule.to === 'running';
      const next: ProgramRecord = {
        ...r,
        state: rule.to,
        updated_at: now,
        reason: running ? null : reason,
        from_bar: running ? this.markets.get(r.symbol).closedAt(now) : (r.from_bar ?? null),
      };
      const writes: Write[] = [{ op: 'set', key: K.rec(id), value: next as unknown as Json }];
      writes.push(running ? { op: 'index', key: K.running, member: id, score: now } : { op: 'unindex', key: K.running, member: id });
      const leased = running && (lease === undefined || lease === this.owner);
      if (leased) writes.push({ op: 'set', key: K.lease(id), value: this.owner, ttlMs: this.opts.leaseMs });
      return { writes, result: { rec: next, previous: r.state, leased } };
    });
    const level = rec.state === 'running' || reason === move ? 'info' : 'warn';
    const from = rec.state === 'running' ? `; processes bars after ${rec.from_bar}` : '';
    await this.journal.add({
      program: id,
      writes: [this.logWrite(id, level, rec.state, `${previous} -> ${rec.state}${reason !== move ? ` (${reason})` : ''}${from}`)],
      events: [{ type: 'status', program: id, t: now, state: rec.state, previous, reason: rec.reason }],
    });
    if (rec.state === 'running') await this.claim(id, leased);
    return rec;
  }

  /** Deletes a program; a running (or paused) one is stopped first. */
  async remove(id: string, caller?: Caller): Promise<{ id: string; deleted: true }> {
    const cur = await this.get(id, caller);
    if (cur.state === 'running' || cur.state === 'paused') {
      try {
        await this.move(id, 'stop', caller, 'deleted');
      } catch (err) {
        if (!(err instanceof Error && 'status' in err && (err as { status: number }).status === 409)) throw err;
      }
    }
    const previous = await this.opts.store.update([K.rec(id)], ([r]) => {
      if (!r) throw notFound('program_not_found', `no program ${id}`, { id });
      return {
        writes: [
          ...[K.rec(id), K.stats(id), K.book(id), K.log(id), K.signals(id), K.equity(id)].map((key) => ({ op: 'del' as const, key })),
          { op: 'unindex', key: K.all, member: id },
          { op: 'unindex', key: K.running, member: id },
        ],
        result: (r as unknown as ProgramRecord).state,
      };
    });
    await this.journal.add({ program: id, writes: [], events: [{ type: 'status', program: id, t: this.opts.clock.now(), state: 'deleted', previous, reason: 'deleted' }] });
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
    void this.journal.add(entry);
    if (dailyLossHit) {
      r.stopping = true;
      void this.move(r.rec.id, 'stop', undefined, 'daily_loss_limit').catch((e) => this.opts.onError?.(e));
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
    await this.opts.bus.publish(PROGRAM_TICK_TOPIC, ev as unknown as Json);
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
  private async claim(id: string, leased = false): Promise<void> {
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
    const r = rec as unknown as ProgramRecord | undefined;
    if (this.closed || !r || r.state !== 'running' || this.runners.has(id)) {
      if (!this.runners.has(id)) await this.leases.drop(id);
      return;
    }
    const market = this.markets.get(r.symbol);
    const kNow = market.closedAt(this.opts.clock.now());
    const stats = (stored as unknown as ProgramStats | undefined) ?? emptyStats(r.settings.capital);
    let start = Math.max(stats.last_bar, r.from_bar ?? kNow);
    const writes: Write[] = [];
    if (start < kNow - MAX_CATCHUP) {
      writes.push(this.logWrite(id, 'warn', 'gap', `bars ${start + 1}-${kNow - MAX_CATCHUP} closed while no process drove the program: skipped`));
      start = kNow - MAX_CATCHUP;
    }
    const runner = new Runner(r, stats, market, book as unknown as StoredBook | undefined, start);
    this.runners.set(id, runner);
    const restored = runner.stats.open_positions > 0 ? `; ${runner.stats.open_positions} open position(s) restored` : '';
    writes.push(this.logWrite(id, 'info', 'claimed', `driven by ${this.owner} from bar ${start}${restored}`));
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

  // ---- persistence --------------------------------------------------------------------------

  private liveStats(id: string, stored: ProgramStats): ProgramStats {
    const r = this.runners.get(id);
    return r ? { ...r.stats } : stored;
  }

  private logWrite(id: string, level: LogEntry['level'], code: string, message: string): Write {
    return logWrite(id, { t: this.opts.clock.now(), level, code, message });
  }

  /** Waits until queued events and writes are in the store. */
  flushed(): Promise<void> {
    return this.journal.flushed();
  }
}
