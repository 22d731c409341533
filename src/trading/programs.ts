import { randomBytes } from 'node:crypto';
import { followAlways, type Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { conflict, notFound } from '../errors.js';
import { mergedIndexCount, mergedIndexRange, type Json, type Store, type Write } from '../store/port.js';
import { ALERT_KEPT_AFTER_DELETE_MS, alertKey } from './alerts.js';
import { Markets } from './market.js';
import { Driver } from './program-driver.js';
import {
  emptyStats,
  K,
  MAX_PROGRAMS,
  MOVES,
  PROGRAM_EVENTS_TOPIC,
  checkAccess,
  mayManage,
  newRecord,
  type Caller,
  type CreateInput,
  type LogEntry,
  type Move,
  type ProgramEvent,
  type ProgramRecord,
  type ProgramStats,
  logEntries, programRecords, programStats, programEvents,
} from './program-model.js';

export * from './program-model.js';

/**
 * Live trading programs (docs/trading.md "Live programs"): the commands (create, start, pause,
 * stop, delete) and the queries. A running program is driven by exactly one process, the holder of
 * its lease, through this process's Driver (program-driver.ts: the market pump, claims and
 * releases); every bar's output is committed by the Journal (program-journal.ts) and its events
 * published on the Bus. A program processes only bars that close after it was started or resumed,
 * each at most once. Programs belong to the identity that created them: a caller that is neither it
 * nor an operator gets 403. Knows no sockets.
 */

export interface ProgramServiceOptions {
  store: Store;
  clock: Clock;
  bus: Pick<Bus, 'publish' | 'publishMany' | 'onMessage' | 'follow'>;
  /** Candle interval on the hub clock, ms (PROGRAM_CANDLE_MS / PROGRAM_SPEED). */
  barMs: number;
  /** Lease time to live, ms; renewed every third of it. */
  leaseMs: number;
  /** This process's lease owner name. */
  owner?: string;
  /** Real-time period of the market pump (ms); default min(250, barMs / 4). */
  pumpMs?: number;
  onError?: (err: unknown) => void;
  /**
   * Alerts: the journal enqueues each program's events for its webhook and kicks the outbox; a
   * deleted program's alert is kept `keepAfterDeleteMs` (default ALERT_KEPT_AFTER_DELETE_MS) so the
   * events still queued for it (its `deleted` status last) are delivered, then it expires.
   */
  alerts?: { kick(): void; keepAfterDeleteMs?: number };
}

type WithStats = ProgramRecord & { stats: ProgramStats };

export class ProgramService {
  readonly markets: Markets;
  readonly owner: string;
  private readonly driver: Driver;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly opts: ProgramServiceOptions) {
    this.markets = new Markets(opts.barMs);
    this.owner = opts.owner ?? `${process.pid}-${randomBytes(4).toString('hex')}`;
    this.driver = new Driver({
      ...opts,
      markets: this.markets,
      owner: this.owner,
      stop: (id, move, reason) => this.move(id, move, undefined, reason),
      runPump: () => this.pump(),
    });
  }

  private get journal() {
    return this.driver.journal;
  }

  // ---- lifecycle of the service -------------------------------------------------------------

  /** Reacts to status events from any process, claims running programs, starts the pump. */
  async start(): Promise<void> {
    const off = this.opts.bus.onMessage(({ topic, message }) => {
      if (topic !== PROGRAM_EVENTS_TOPIC) return;
      const ev = programEvents.decode(message)!;
      if (ev.type === 'status' && ev.state !== 'running') this.driver.left(ev.program, ev.state, ev.t);
    });
    // every process's status events: the topic followed on the Bus for as long as the service runs
    const release = await this.opts.bus.follow(PROGRAM_EVENTS_TOPIC).catch((err) => {
      off();
      throw err;
    });
    this.unsubscribe = () => {
      off();
      release();
    };
    await this.driver.start();
  }

  /** Every program's events as the Bus delivers them on this process (from any process); returns the unsubscribe. */
  follow(listener: (event: ProgramEvent) => void): () => void {
    const off = this.opts.bus.onMessage(({ topic, message }) => {
      if (topic === PROGRAM_EVENTS_TOPIC) listener(programEvents.decode(message)!);
    });
    const unfollow = followAlways(this.opts.bus, PROGRAM_EVENTS_TOPIC);
    return () => {
      off();
      unfollow();
    };
  }

  /** Shutdown: programs stay running in the store (positions too) and continue on the next process that claims them. */
  async close(): Promise<void> {
    this.unsubscribe?.();
    await this.driver.close();
  }

  /** Program ids this process drives. */
  owned(): string[] {
    return this.driver.owned();
  }

  /** Processes every candle closed by now for the programs this process drives, then the tick. */
  pump(): Promise<void> {
    return this.driver.pump();
  }

  /** Renews this process's leases and claims running programs nobody drives. */
  leaseRound(): Promise<void> {
    return this.driver.leaseRound();
  }

  /** Waits until queued events and writes are in the store. */
  flushed(): Promise<void> {
    return this.journal.flushed();
  }

  // ---- commands -----------------------------------------------------------------------------

  async create(input: CreateInput, caller?: Caller): Promise<WithStats> {
    const { program, writes } = await this.draft(input, caller);
    await this.opts.store.update([], () => ({ writes, result: null }));
    return program;
  }

  /**
   * A new program (state `created`) as the writes that make it, under a new id; `create` commits
   * them alone.
   */
  async draft(input: CreateInput, caller?: Caller): Promise<{ program: WithStats; writes: Write[] }> {
    await this.checkRoom();
    return this.draftAs(this.newId(), input, caller, this.opts.clock.now());
  }

  /** A new program's id: 16 hex digits, the partitioned layout (program-model.ts `partitioned`). */
  newId(): string {
    return `p_${randomBytes(8).toString('hex')}`;
  }

  /**
   * Creates the program `id` (made by `newId`) unless it is there already, in one update of its
   * aggregate: what another service's outbox delivers (a bought challenge's program), so a
   * delivery retried creates it once. Whether this call created it.
   */
  async createAs(id: string, input: CreateInput, caller?: Caller): Promise<boolean> {
    if (!/^p_[0-9a-f]{16}$/.test(id)) throw new Error(`not a program id of the partitioned layout: ${id}`);
    if ((await this.opts.store.get(K.rec(id))) !== undefined) return false;
    await this.checkRoom();
    const { writes } = this.draftAs(id, input, caller, this.opts.clock.now());
    return this.opts.store.update([K.rec(id)], ([cur]) => (cur !== undefined ? { writes: [], result: false } : { writes, result: true }));
  }

  private async checkRoom(): Promise<void> {
    const count = await mergedIndexCount(this.opts.store, K.allParts);
    if (count >= MAX_PROGRAMS) throw conflict('too_many_programs', `at most ${MAX_PROGRAMS} programs`, { limit: MAX_PROGRAMS });
  }

  private draftAs(id: string, input: CreateInput, caller: Caller | undefined, now: number): { program: WithStats; writes: Write[] } {
    const rec = newRecord(id, input, caller, now);
    const stats = emptyStats(input.settings.capital);
    const writes: Write[] = [
      { op: 'set', key: K.rec(id), value: programRecords.encode(rec) },
      { op: 'set', key: K.stats(id), value: programStats.encode(stats) },
      { op: 'index', key: K.all(id), member: id, score: now },
      this.logWrite(id, 'info', 'created', `created from ${rec.strategy} on ${rec.symbol}`),
    ];
    return { program: { ...rec, stats }, writes };
  }

  /** The caller's programs (every program for an operator or an internal caller). */
  async list(caller?: Caller): Promise<WithStats[]> {
    const ids = (await mergedIndexRange(this.opts.store, K.allParts)).map((e) => e.member);
    if (ids.length === 0) return [];
    const vals = await this.opts.store.getMany([...ids.map(K.rec), ...ids.map(K.stats)]);
    const out: WithStats[] = [];
    ids.forEach((id, i) => {
      const rec = programRecords.decode(vals[i]);
      if (!rec || !mayManage(rec, caller)) return;
      out.push({ ...rec, stats: this.liveStats(id, programStats.decode(vals[ids.length + i]) ?? emptyStats(rec.settings.capital)) });
    });
    return out;
  }

  async get(id: string, caller?: Caller): Promise<WithStats & { owner: string | null }> {
    const [rec, stats, owner] = await this.opts.store.getMany([K.rec(id), K.stats(id), K.lease(id)]);
    if (!rec) throw notFound('program_not_found', `no program ${id}`, { id });
    const r = programRecords.decode(rec)!;
    checkAccess(r, caller);
    return { ...r, stats: this.liveStats(id, programStats.decode(stats) ?? emptyStats(r.settings.capital)), owner: (owner as string) ?? null };
  }

  /** Who created the program (null: an internal caller); undefined when there is no such program. */
  async creatorOf(id: string): Promise<string | null | undefined> {
    const rec = programRecords.decode(await this.opts.store.get(K.rec(id)));
    return rec ? rec.created_by : undefined;
  }

  async logs(id: string, limit = 200, caller?: Caller) {
    await this.get(id, caller);
    const [logs, signals, equity] = await Promise.all([
      this.opts.store.range(K.log(id), -limit, -1).then((raw) => logEntries.decodeMany(raw).filter((e): e is LogEntry => e !== undefined)),
      this.opts.store.range<Json>(K.signals(id), -limit, -1),
      this.opts.store.range<Json>(K.equity(id), 0, -1),
    ]);
    return { id, logs, signals, equity };
  }

  /**
   * The last `count` closed bars of the program's market (bar k spans [k x barMs, (k+1) x barMs)):
   * what its live chart opens with, so a new program's chart shows recent prices, not one bar.
   */
  async bars(id: string, count: number, caller?: Caller) {
    const r = await this.get(id, caller);
    const market = this.markets.get(r.symbol);
    const last = market.closedAt(this.opts.clock.now());
    const bars: { t: number; o: number; h: number; l: number; c: number }[] = [];
    for (let k = Math.max(0, last - count + 1); k <= last; k++) {
      const b = market.bar(k);
      bars.push({ t: b.t, o: b.o, h: b.h, l: b.l, c: b.c });
    }
    return { id, symbol: r.symbol, bar_ms: market.barMs, bars };
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
      const r = programRecords.decode(cur)!;
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
      const writes: Write[] = [{ op: 'set', key: K.rec(id), value: programRecords.encode(next) }];
      writes.push(running ? { op: 'index', key: K.running(id), member: id, score: now } : { op: 'unindex', key: K.running(id), member: id });
      const leased = running && (lease === undefined || lease === this.owner);
      if (leased) writes.push({ op: 'set', key: K.lease(id), value: this.owner, ttlMs: this.opts.leaseMs });
      return { writes, result: { rec: next, previous: r.state, leased } };
    });
    const level = rec.state === 'running' || reason === move ? 'info' : 'warn';
    const from = rec.state === 'running' ? `; processes bars after ${rec.from_bar}` : '';
    await this.journal.add({
      program: id,
      writes: [this.logWrite(id, level, rec.state, `${previous} -> ${rec.state}${reason !== move ? ` (${reason})` : ''}${from}`)],
      events: [{ id: statusId(id), type: 'status', program: id, created_by: rec.created_by, t: now, state: rec.state, previous, reason: rec.reason }],
    });
    if (rec.state === 'running') await this.driver.claim(id, leased);
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
          { op: 'unindex', key: K.all(id), member: id },
          { op: 'unindex', key: K.running(id), member: id },
        ],
        result: programRecords.decode(r)!.state,
      };
    });
    await this.journal.add({ program: id, writes: [], events: [{ id: statusId(id), type: 'status', program: id, created_by: cur.created_by, t: this.opts.clock.now(), state: 'deleted', previous, reason: 'deleted' }] });
    // the alert outlives its program only as long as its queued events need it (nobody can remove it now)
    const keepMs = this.opts.alerts?.keepAfterDeleteMs ?? ALERT_KEPT_AFTER_DELETE_MS;
    await this.opts.store.update([alertKey(id)], ([a]) => ({ writes: a ? [{ op: 'set' as const, key: alertKey(id), value: a, ttlMs: keepMs }] : [], result: undefined }));
    return { id, deleted: true };
  }

  // ---- persistence --------------------------------------------------------------------------

  private liveStats(id: string, stored: ProgramStats): ProgramStats {
    return this.driver.stats(id, stored);
  }

  private logWrite(id: string, level: LogEntry['level'], code: string, message: string): Write {
    return this.driver.logWrite(id, level, code, message);
  }
}

const statusId = (program: string) => `${program}-m${randomBytes(6).toString('hex')}`;
