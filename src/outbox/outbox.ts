import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Store, Write } from '../store/port.js';
import { conflict, notFound } from '../errors.js';
import { raceAbort } from './attempt.js';
import { Holds } from './holds.js';
import { partsCount, partsRange } from './parts.js';
import {
  OUTBOX_CREATED,
  OUTBOX_DUE,
  OUTBOX_PARTS,
  STAT_DELIVERED,
  STAT_FAILED,
  backoffDelay,
  errorText,
  legacyPartition,
  outboxCreatedKey,
  outboxDueKey,
  outboxHeldKey,
  outboxKey,
  parseRecord,
  recordJson,
  type Deliver,
  type OutboxDestination,
  type OutboxHold,
  type OutboxItem,
  type OutboxLogger,
  type OutboxPart,
  type OutboxPending,
  type OutboxRecord,
  type OutboxStats,
} from './records.js';

/** The delivery loop of the outbox (see records.ts for the store layout and the guarantees). */

export interface OutboxOptions {
  store: Store;
  clock: Clock;
  /** One deliverer per destination. Give one Outbox per process all the deliverers it should run. */
  deliver: Record<string, Deliver>;
  /** Backoff bounds: the first retry waits retryMinMs, later ones double, capped at retryMaxMs. */
  retryMinMs: number;
  retryMaxMs: number;
  /** Longest sleep between scans when nothing is due sooner (default 1000). */
  pollMs?: number;
  /** How long a claim holds an item against other processes (default 30000). */
  leaseMs?: number;
  /** An attempt is aborted and counted as failed after this long (default 80% of leaseMs). */
  attemptTimeoutMs?: number;
  /** Deliveries in flight at once in this process (default 8). */
  concurrency?: number;
  /** On stop, how long in-flight deliveries may still finish before they are aborted (default 1000). */
  stopGraceMs?: number;
  logger?: OutboxLogger;
  /** Jitter source in [0, 1) (tests may fix it). */
  random?: () => number;
  /** How often items held by a process without this peer are taken back (default 30000; always at start). */
  releaseEveryMs?: number;
}

/** What a claim gives: the item to deliver, or the destination it was held for. */
type Claimed = { rec: OutboxRecord; token: string } | { held: string };

/** The in-flight map's name of an item: its record key. */
const ref = (id: string, p: number) => outboxKey(id, p);

interface InFlight {
  controller: AbortController;
  done: Promise<void>;
}

export class Outbox {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly deliver: Record<string, Deliver>;
  private readonly retryMinMs: number;
  private readonly retryMaxMs: number;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly concurrency: number;
  private readonly stopGraceMs: number;
  private readonly logger: OutboxLogger | undefined;
  private readonly random: () => number;
  private readonly releaseEveryMs: number;
  private readonly holds: Holds;
  private lastRelease = -Infinity;

  private started = false;
  private stopping = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private readonly inflight = new Map<string, InFlight>();

  constructor(opts: OutboxOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.deliver = { ...opts.deliver };
    this.retryMinMs = Math.max(1, opts.retryMinMs);
    this.retryMaxMs = Math.max(this.retryMinMs, opts.retryMaxMs);
    this.pollMs = Math.max(1, opts.pollMs ?? 1000);
    this.leaseMs = Math.max(10, opts.leaseMs ?? 30_000);
    this.attemptTimeoutMs = Math.max(1, Math.min(opts.attemptTimeoutMs ?? Math.floor(this.leaseMs * 0.8), this.leaseMs));
    this.concurrency = Math.max(1, opts.concurrency ?? 8);
    this.stopGraceMs = Math.max(0, opts.stopGraceMs ?? 1000);
    this.logger = opts.logger;
    this.random = opts.random ?? Math.random;
    this.releaseEveryMs = Math.max(1, opts.releaseEveryMs ?? 30_000);
    this.holds = new Holds(this.store, this.clock, this.deliver, this.logger, (id, dueAt) => this.adopt(id, dueAt));
  }

  /** Deliverers of more destinations (a service built later); before start, one per destination. */
  addDeliverers(more: Record<string, Deliver>): void {
    if (this.started) throw new Error('deliverers are added before the outbox starts');
    for (const [dest, deliver] of Object.entries(more)) {
      if (Object.hasOwn(this.deliver, dest)) throw new Error(`destination "${dest}" already has a deliverer`);
      this.deliver[dest] = deliver;
    }
  }

  /** Starts the background loop (idempotent). */
  start(): void {
    if (this.started && !this.stopping) return;
    this.started = true;
    this.stopping = false;
    this.lastRelease = -Infinity; // the first scan takes back what other processes held
    this.schedule(0);
    void this.holds.tell().catch((err) => this.logger?.warn({ err }, 'outbox hold count failed'));
  }

  /** Look for due items now (e.g. right after an enqueue). A no-op when not started. */
  kick(): void {
    if (!this.started || this.stopping) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  /**
   * Stops the loop. In-flight deliveries get stopGraceMs to finish; the rest are aborted and
   * rescheduled (their peers may still have received them: the next delivery repeats the id).
   * Resolves when every attempt has settled. The store must still be open.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running) await this.running;
    const pending = () => Promise.allSettled([...this.inflight.values()].map((f) => f.done));
    if (this.inflight.size > 0 && this.stopGraceMs > 0) {
      let graceTimer: NodeJS.Timeout | undefined;
      await Promise.race([pending(), new Promise<void>((r) => (graceTimer = setTimeout(r, this.stopGraceMs)))]);
      clearTimeout(graceTimer);
    }
    for (const f of this.inflight.values()) f.controller.abort(new Error('outbox stopping'));
    await pending();
    this.started = false;
  }

  /** Deliveries in flight in this process. */
  get inFlight(): number {
    return this.inflight.size;
  }

  async stats(): Promise<OutboxStats> {
    const [pending, delivered, failed, oldest, holds] = await Promise.all([
      partsCount(this.store, outboxCreatedKey),
      this.store.get(STAT_DELIVERED),
      this.store.get(STAT_FAILED),
      partsRange(this.store, outboxCreatedKey, { limit: 1 }),
      this.holding(),
    ]);
    const held = holds.reduce((n, h) => n + h.items, 0);
    const stats: OutboxStats = { pending, held, delivered: Number(delivered ?? 0), failedAttempts: Number(failed ?? 0) };
    if (oldest[0]) stats.oldestPendingAt = oldest[0].score;
    return stats;
  }

  /** The destinations this process keeps items for (peer not configured) and how many each. */
  holding(): Promise<OutboxHold[]> {
    return this.holds.holding();
  }

  /** One line for /readyz: "ok", or what is kept and why. */
  readiness(): Promise<string> {
    return this.holds.readiness();
  }

  /** Pending items, oldest first (optionally of one destination), at most `limit`. */
  async pending(dest?: string, limit = 100): Promise<OutboxPending[]> {
    const out: OutboxPending[] = [];
    const now = this.clock.now();
    const page = dest === undefined ? limit : Math.max(100, limit);
    for (let offset = 0; out.length < limit; offset += page) {
      const entries = await partsRange(this.store, outboxCreatedKey, { offset, limit: page });
      if (entries.length === 0) break;
      const values = await this.store.getMany(entries.map((e) => outboxKey(e.member, e.part)));
      for (const [i, value] of values.entries()) {
        const rec = parseRecord(value);
        if (!rec || (dest !== undefined && rec.dest !== dest)) continue;
        const { claim, ...rest } = rec;
        const part = entries[i]!.part;
        out.push({ ...rest, ...(part === undefined ? {} : { partition: part }), inFlight: claim !== undefined && rec.due > now });
        if (out.length >= limit) break;
      }
      if (entries.length < page) break;
    }
    return out;
  }

  /**
   * Pending items counted by destination (every destination with a deliverer here, and any other an
   * item names), read from the oldest `scan` pending items.
   */
  async destinations(scan = 10_000): Promise<OutboxDestination[]> {
    const now = this.clock.now();
    const by = new Map<string, OutboxDestination>();
    const of = (dest: string) => {
      let d = by.get(dest);
      if (!d) by.set(dest, (d = { dest, pending: 0, in_flight: 0, retrying: 0, held: 0, oldest_at: null }));
      return d;
    };
    for (const dest of Object.keys(this.deliver)) of(dest);
    for (let offset = 0; offset < scan; offset += 500) {
      const entries = await partsRange(this.store, outboxCreatedKey, { offset, limit: Math.min(500, scan - offset) });
      if (entries.length === 0) break;
      const values = await this.store.getMany(entries.map((e) => outboxKey(e.member, e.part)));
      for (const rec of values.map(parseRecord)) {
        if (!rec) continue;
        const d = of(rec.dest);
        d.pending++;
        if (rec.claim !== undefined && rec.due > now) d.in_flight++;
        else if (rec.attempts > 0) d.retrying++;
        d.oldest_at = d.oldest_at === null ? rec.createdAt : Math.min(d.oldest_at, rec.createdAt);
      }
      if (entries.length < 500) break;
    }
    for (const d of by.values()) d.held = await partsCount(this.store, (part) => outboxHeldKey(d.dest, part));
    return [...by.values()].sort((a, b) => a.dest.localeCompare(b.dest));
  }

  /** The ids of the items kept for `dest` (its peer not configured), oldest first, at most `limit`. */
  async held(dest: string, limit = 100): Promise<string[]> {
    return (await partsRange(this.store, (part) => outboxHeldKey(dest, part), { limit })).map((e) => e.member);
  }

  /**
   * Makes a waiting item due now (the console's retry of a held delivery): out of its destination's
   * held index, into `outbox:due` at this instant, and the loop is kicked. 404 `unknown_delivery`
   * when no such item is pending, 409 `delivery_in_flight` while a process is delivering it.
   */
  async retryNow(id: string): Promise<OutboxPending> {
    const values = await this.store.getMany(OUTBOX_PARTS.map((part) => outboxKey(id, part)));
    let p = OUTBOX_PARTS.find((part, i) => part !== undefined && values[i] !== undefined);
    if (p === undefined && values[0] !== undefined && (await this.adopt(id))) p = legacyPartition(id);
    if (p === undefined) throw notFound('unknown_delivery', `no pending delivery ${id}`);
    const key = outboxKey(id, p);
    const part = p;
    const rec = await this.store.update([key], ([current]) => {
      const found = parseRecord(current);
      if (!found) throw notFound('unknown_delivery', `no pending delivery ${id}`);
      const now = this.clock.now();
      if (found.claim !== undefined && found.due > now) throw conflict('delivery_in_flight', `delivery ${id} is being attempted now`);
      const { claim: _claim, ...rest } = found;
      const next: OutboxRecord = { ...rest, due: now };
      return {
        writes: [
          { op: 'set', key, value: recordJson(next) },
          { op: 'unindex', key: outboxHeldKey(found.dest, part), member: id },
          { op: 'index', key: outboxDueKey(part), member: id, score: now },
        ],
        result: next,
      };
    });
    this.kick();
    return { ...rec, partition: part, inFlight: false };
  }

  /**
   * Moves an item of the global layout (records.ts), as it is, into the partition of its record key:
   * one update of that key's aggregate and its partition's keys; then drops its global index entries
   * (each its own key). `dueAt` sets when it is due (default: as its record says; an unreadable one
   * is parked at the longest backoff). Returns whether the item is now in its partition.
   */
  private async adopt(id: string, dueAt?: number): Promise<boolean> {
    const legacy = outboxKey(id);
    const p = legacyPartition(id);
    const key = outboxKey(id, p);
    const { there, dest } = await this.store.update([legacy, key], ([old, cur]) => {
      if (old === undefined) return { writes: [], result: { there: cur !== undefined, dest: parseRecord(cur)?.dest } };
      const rec = parseRecord(old);
      const writes: Write[] = [{ op: 'del', key: legacy }];
      // an item of the same id already in the partition (enqueued again since) is the one kept
      if (cur === undefined) {
        const now = this.clock.now();
        writes.push(
          { op: 'set', key, value: old },
          { op: 'index', key: outboxDueKey(p), member: id, score: dueAt ?? (rec ? rec.due : now + this.retryMaxMs) },
          { op: 'index', key: outboxCreatedKey(p), member: id, score: rec?.createdAt ?? now },
        );
      }
      return { writes, result: { there: true, dest: rec?.dest ?? parseRecord(cur)?.dest } };
    });
    await Promise.all([OUTBOX_DUE, OUTBOX_CREATED, ...(dest === undefined ? [] : [outboxHeldKey(dest)])].map((k) => this.store.unindex(k, id)));
    if (there) this.logger?.debug({ id, partition: p }, 'outbox moved an item of the global layout into its partition');
    return there;
  }

  // ---------------------------------------------------------------------------------------------

  private schedule(delayMs: number): void {
    if (this.stopping) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tick();
    }, Math.max(0, delayMs));
    this.timer.unref();
  }

  private tick(): void {
    if (this.stopping) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.again = false;
    this.running = (async () => {
      let started = 0;
      try {
        started = await this.pass();
      } catch (err) {
        this.logger?.warn({ err }, 'outbox scan failed');
      }
      let next = this.pollMs;
      if (this.again) next = 0;
      else if (this.inflight.size < this.concurrency) {
        try {
          const [first] = await partsRange(this.store, outboxDueKey, { limit: 1 });
          if (first) next = Math.min(this.pollMs, Math.max(0, first.score - this.clock.now()));
          // Something is due but was not ours to take (in flight here, or just claimed elsewhere):
          // do not spin on it; its owner settles it, and a settled delivery kicks the loop.
          if (next === 0 && started === 0) next = this.pollMs;
        } catch {
          // keep pollMs
        }
      }
      this.running = undefined;
      this.schedule(next);
    })();
  }

  /** One scan: claim due items up to the free concurrency and start their deliveries. */
  private async pass(): Promise<number> {
    if (this.clock.now() - this.lastRelease >= this.releaseEveryMs) {
      this.lastRelease = this.clock.now();
      await this.holds.release();
    }
    const free = this.concurrency - this.inflight.size;
    if (free <= 0) return 0;
    const due = await partsRange(this.store, outboxDueKey, { max: this.clock.now(), limit: free + this.inflight.size });
    let started = 0;
    let held = 0;
    for (const entry of due) {
      if (this.stopping || started >= free) break;
      const p = entry.part ?? legacyPartition(entry.member);
      if (this.inflight.has(ref(entry.member, p))) continue;
      if (entry.part === undefined && !(await this.adopt(entry.member))) continue;
      const claimed = await this.claim(entry.member, p);
      if (!claimed) continue;
      if ('held' in claimed) {
        held += 1;
        await this.holds.tell(claimed.held);
        continue;
      }
      started += 1;
      this.launch(claimed.rec, claimed.token, p);
    }
    if (due.length >= free + this.inflight.size && started + held > 0) this.again = true;
    return started + held;
  }

  /** Atomically takes an item of partition p for one attempt, or returns undefined when it is not ours to take. */
  private claim(id: string, p: number): Promise<Claimed | undefined> {
    const key = outboxKey(id, p);
    const token = randomUUID();
    return this.store.update<Claimed | undefined>([key], ([current]) => {
      const now = this.clock.now();
      if (current === undefined) {
        // A stale index entry without a record: clean it up.
        return {
          writes: [
            { op: 'unindex', key: outboxDueKey(p), member: id },
            { op: 'unindex', key: outboxCreatedKey(p), member: id },
          ],
          result: undefined,
        };
      }
      const rec = parseRecord(current);
      if (!rec) {
        // Unreadable record: park it at the longest backoff rather than spin on it.
        return { writes: [{ op: 'index', key: outboxDueKey(p), member: id, score: now + this.retryMaxMs }], result: undefined };
      }
      if (rec.due > now) return { writes: [], result: undefined }; // claimed or rescheduled by someone else
      if (this.holds.isHeld(rec.dest)) {
        // peer not configured here: keep the item, out of the due index, without an attempt
        return { writes: this.holds.holdWrites(id, rec.dest, rec.createdAt, p), result: { held: rec.dest } };
      }
      const claimed: OutboxRecord = { ...rec, attempts: rec.attempts + 1, lastAttemptAt: now, due: now + this.leaseMs, claim: token };
      return {
        writes: [
          { op: 'set', key, value: recordJson(claimed) },
          { op: 'index', key: outboxDueKey(p), member: id, score: claimed.due },
        ],
        result: { rec: claimed, token },
      };
    });
  }

  private launch(rec: OutboxRecord, token: string, p: number): void {
    const controller = new AbortController();
    const item: OutboxItem = { id: rec.id, dest: rec.dest, payload: rec.payload, createdAt: rec.createdAt };
    const done = (async () => {
      const timer = setTimeout(
        () => controller.abort(new Error(`delivery took longer than ${this.attemptTimeoutMs} ms`)),
        this.attemptTimeoutMs,
      );
      timer.unref();
      try {
        const deliver = this.deliver[rec.dest];
        if (!deliver) throw new Error(`no deliverer for dest "${rec.dest}"`);
        if (!(await this.stillClaimed(rec.id, token, p))) {
          clearTimeout(timer);
          this.logger?.warn({ id: rec.id, dest: rec.dest }, 'outbox claim lost before delivery; not delivered here');
          return;
        }
        await raceAbort(deliver(item, controller.signal), controller.signal);
        clearTimeout(timer);
        await this.settleSuccess(rec, token, p);
      } catch (err) {
        clearTimeout(timer);
        await this.settleFailure(rec, token, err, p);
      }
    })()
      .catch((err) => this.logger?.error({ err, id: rec.id }, 'outbox bookkeeping failed; the lease will expire'))
      .finally(() => {
        this.inflight.delete(ref(rec.id, p));
        this.kick();
      });
    this.inflight.set(ref(rec.id, p), { controller, done });
  }

  /**
   * The fence before a peer is called: the claim is read back from the store. A claim written on a
   * Redis primary that failed over before a replica had it (REDIS_MIN_REPLICAS=0) is gone from the
   * promoted one, which another process may already have claimed the item on; this process then
   * leaves the item to it instead of delivering it a second time.
   */
  private async stillClaimed(id: string, token: string, p: number): Promise<boolean> {
    const cur = parseRecord(await this.store.get(outboxKey(id, p)));
    return cur?.claim === token;
  }

  private async settleSuccess(rec: OutboxRecord, token: string, p: number): Promise<void> {
    const key = outboxKey(rec.id, p);
    const deleted = await this.store.update([key], ([current]) => {
      const cur = parseRecord(current);
      if (!cur || cur.claim !== token) return { writes: [], result: false }; // re-enqueued or re-claimed meanwhile
      return {
        writes: [
          { op: 'del', key },
          { op: 'unindex', key: outboxDueKey(p), member: rec.id },
          { op: 'unindex', key: outboxCreatedKey(p), member: rec.id },
          { op: 'unindex', key: outboxHeldKey(rec.dest, p), member: rec.id },
        ],
        result: true,
      };
    });
    if (deleted) await this.store.incr(STAT_DELIVERED);
    this.logger?.debug({ id: rec.id, dest: rec.dest, attempts: rec.attempts, deleted }, 'outbox delivered');
  }

  private async settleFailure(rec: OutboxRecord, token: string, err: unknown, p: number): Promise<void> {
    const key = outboxKey(rec.id, p);
    const lastError = errorText(err);
    const delay = backoffDelay(rec.attempts, this.retryMinMs, this.retryMaxMs, this.random);
    const rescheduled = await this.store.update([key], ([current]) => {
      const cur = parseRecord(current);
      if (!cur || cur.claim !== token) return { writes: [], result: false };
      const { claim: _claim, ...rest } = cur;
      const next: OutboxRecord = { ...rest, due: this.clock.now() + delay, lastError, lastDelayMs: delay };
      return {
        writes: [
          { op: 'set', key, value: recordJson(next) },
          { op: 'index', key: outboxDueKey(p), member: rec.id, score: next.due },
        ],
        result: true,
      };
    });
    if (rescheduled) await this.store.incr(STAT_FAILED);
    this.logger?.warn(
      { id: rec.id, dest: rec.dest, attempts: rec.attempts, retryInMs: delay, error: lastError },
      'outbox delivery failed',
    );
  }
}

