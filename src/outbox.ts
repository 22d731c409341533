import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { Json, Store, Write } from './store/port.js';

/**
 * The durable outbox: messages to external peers, written in the same atomic store update as the
 * state change that causes them, and delivered in the background.
 *
 * Store layout (every key under the adapter's own namespace):
 * - `outbox:msg:{id}`  the message record (OutboxRecord): item + attempts, due, lastError, claim;
 * - `outbox:due`       ordered index, member = id, score = time of the next attempt (ms);
 * - `outbox:created`   ordered index, member = id, score = createdAt (listing, oldest pending);
 * - `outbox:held:{dest}` ordered index, member = id, score = createdAt: items kept for a peer that
 *                       is not configured (out of `outbox:due`, so nothing attempts them);
 * - `outbox:stat:delivered`, `outbox:stat:failed`  counters.
 *
 * Delivery is at-least-once. Each attempt first claims the record atomically (store.update on the
 * record: only when its due time has passed, moving it forward by a lease and stamping a claim
 * token), so processes sharing one Redis never deliver the same item at the same time. Success
 * deletes the record only while the claim token is still ours; failure reschedules it with
 * exponential backoff and jitter. A process that dies mid-delivery leaves a claim whose lease
 * expires, after which any process delivers the item again. Peers receive the item id as an
 * idempotency key, so a repeated delivery is harmless.
 */

export interface OutboxItem {
  /** Unique and stable: the peer's idempotency key. */
  id: string;
  /** Which deliverer handles it ('value', 'task-ledger', ...). */
  dest: string;
  payload: Json;
  /** Unix milliseconds. */
  createdAt: number;
}

/** What the store keeps for a pending item. */
export interface OutboxRecord extends OutboxItem {
  /** Attempts started so far. */
  attempts: number;
  /** Next attempt not before this instant (ms); while claimed, the end of the lease. */
  due: number;
  lastAttemptAt?: number;
  lastError?: string;
  /** The backoff chosen after the last failure (ms). */
  lastDelayMs?: number;
  /** Claim token of the delivery in flight. */
  claim?: string;
}

export interface OutboxPending extends Omit<OutboxRecord, 'claim'> {
  /** A process holds an unexpired claim on it (a delivery is in flight). */
  inFlight: boolean;
}

export interface OutboxStats {
  /** Items not yet delivered, held ones included. */
  pending: number;
  /** Of those, the items kept for a peer this process has not configured (see `held`). */
  held: number;
  delivered: number;
  failedAttempts: number;
  /** createdAt of the oldest pending item. */
  oldestPendingAt?: number;
}

/**
 * Delivers one item; resolves when the peer acknowledged it, rejects otherwise. The signal aborts
 * when the attempt runs out of time or the outbox stops; a deliverer should pass it to its I/O.
 */
export interface Deliver {
  (item: OutboxItem, signal: AbortSignal): Promise<void>;
  /**
   * Set on the deliverer of a peer that is not configured (see `notConfigured`): the outbox then
   * keeps that destination's items without attempting them, says so once in the log and at
   * /readyz, and delivers them once a process with the peer configured starts.
   */
  readonly held?: string;
}

/**
 * The deliverer of a peer that is not configured: `reason` says what is missing (it is what the log
 * line and /readyz show). Called directly it rejects with `error()`.
 */
export function notConfigured(reason: string, error: () => Error = () => new Error(reason)): Deliver {
  return Object.assign(async () => {
    throw error();
  }, { held: reason });
}

/** One destination whose items are kept because its peer is not configured. */
export interface OutboxHold {
  dest: string;
  reason: string;
  items: number;
}

export type OutboxLogger = Pick<Logger, 'warn' | 'error' | 'debug'>;

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
  /**
   * How often items held by another process (one without this peer configured) are taken back
   * into delivery (default 30000). They are always taken back at start.
   */
  releaseEveryMs?: number;
}

export const OUTBOX_DUE = 'outbox:due';
export const OUTBOX_CREATED = 'outbox:created';
const STAT_DELIVERED = 'outbox:stat:delivered';
const STAT_FAILED = 'outbox:stat:failed';

/** The index of the items kept for `dest` while its peer is not configured. */
export function outboxHeldKey(dest: string): string {
  return `outbox:held:${dest}`;
}

/** The store key of an item's record: include it in an update's read set to look before enqueuing. */
export function outboxKey(id: string): string {
  return `outbox:msg:${id}`;
}

function checkItem(item: OutboxItem): void {
  if (typeof item.id !== 'string' || item.id.length === 0 || item.id.length > 512) {
    throw new TypeError('outbox item id must be a non-empty string (at most 512 characters)');
  }
  if (typeof item.dest !== 'string' || item.dest.length === 0) throw new TypeError('outbox item needs a dest');
  if (!Number.isFinite(item.createdAt)) throw new TypeError('outbox item createdAt must be a number');
}

function recordJson(rec: OutboxRecord): Json {
  const out: { [key: string]: Json } = {
    id: rec.id,
    dest: rec.dest,
    payload: rec.payload,
    createdAt: rec.createdAt,
    attempts: rec.attempts,
    due: rec.due,
  };
  if (rec.lastAttemptAt !== undefined) out.lastAttemptAt = rec.lastAttemptAt;
  if (rec.lastError !== undefined) out.lastError = rec.lastError;
  if (rec.lastDelayMs !== undefined) out.lastDelayMs = rec.lastDelayMs;
  if (rec.claim !== undefined) out.claim = rec.claim;
  return out;
}

function parseRecord(value: Json | undefined): OutboxRecord | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { id, dest, createdAt, attempts, due } = value;
  if (typeof id !== 'string' || typeof dest !== 'string') return undefined;
  if (typeof createdAt !== 'number' || typeof attempts !== 'number' || typeof due !== 'number') return undefined;
  const rec: OutboxRecord = { id, dest, payload: value.payload ?? null, createdAt, attempts, due };
  if (typeof value.lastAttemptAt === 'number') rec.lastAttemptAt = value.lastAttemptAt;
  if (typeof value.lastError === 'string') rec.lastError = value.lastError;
  if (typeof value.lastDelayMs === 'number') rec.lastDelayMs = value.lastDelayMs;
  if (typeof value.claim === 'string') rec.claim = value.claim;
  return rec;
}

/**
 * The writes that durably enqueue an item: its record, its entry in `outbox:due` (due at
 * createdAt, i.e. at once) and in `outbox:created`. Pure; put them into the same store.update
 * plan as the state change so both land or neither.
 *
 * Enqueuing an id that is already pending replaces that record (payload, attempts reset): there
 * is still one message, so one delivery, never two. (If the earlier copy was being delivered at
 * that moment, that delivery does not delete the new copy, which is delivered once more; the
 * idempotency key makes the repeat harmless.) To keep the first copy instead, read
 * `outboxKey(item.id)` in the update and use `outboxWritesIfAbsent`. An id that was already
 * delivered is no longer in the store, so enqueuing it again sends it again (the peer dedupes).
 */
export function outboxWrites(item: OutboxItem): Write[] {
  checkItem(item);
  const rec: OutboxRecord = {
    id: item.id,
    dest: item.dest,
    payload: item.payload,
    createdAt: item.createdAt,
    attempts: 0,
    due: item.createdAt,
  };
  return [
    { op: 'set', key: outboxKey(item.id), value: recordJson(rec) },
    { op: 'index', key: OUTBOX_DUE, member: item.id, score: rec.due },
    { op: 'index', key: OUTBOX_CREATED, member: item.id, score: rec.createdAt },
  ];
}

/** outboxWrites, or nothing when `current` (the value read at outboxKey(item.id)) shows it pending. */
export function outboxWritesIfAbsent(item: OutboxItem, current: Json | undefined): Write[] {
  return current === undefined ? outboxWrites(item) : [];
}

/**
 * Backoff before retry number `attempt` (1 = after the first failure): base = min(max, min * 2^(attempt-1)),
 * then "equal jitter" (a uniform value in [base/2, base]), clamped to [min, max]. The ranges of
 * successive attempts touch but never overlap downwards, so delays never shrink.
 */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const max = Math.max(minMs, maxMs);
  const base = Math.min(max, minMs * 2 ** Math.max(0, attempt - 1));
  const delay = base / 2 + random() * (base / 2);
  return Math.max(minMs, Math.min(max, Math.round(delay)));
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}` : String(err);
  return text.slice(0, 500);
}

/** What a claim gives: the item to deliver, or the destination it was held for. */
type Claimed = { rec: OutboxRecord; token: string } | { held: string };

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
  /** Holds already reported in the log (once each). */
  private readonly told = new Set<string>();
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
    this.deliver = opts.deliver;
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
  }

  /** Starts the background loop (idempotent). */
  start(): void {
    if (this.started && !this.stopping) return;
    this.started = true;
    this.stopping = false;
    this.lastRelease = -Infinity; // the first scan takes back what other processes held
    this.schedule(0);
    void this.tellHolds().catch((err) => this.logger?.warn({ err }, 'outbox hold count failed'));
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
      this.store.indexCount(OUTBOX_CREATED),
      this.store.get(STAT_DELIVERED),
      this.store.get(STAT_FAILED),
      this.store.indexRange(OUTBOX_CREATED, { limit: 1 }),
      this.holding(),
    ]);
    const held = holds.reduce((n, h) => n + h.items, 0);
    const stats: OutboxStats = { pending, held, delivered: Number(delivered ?? 0), failedAttempts: Number(failed ?? 0) };
    if (oldest[0]) stats.oldestPendingAt = oldest[0].score;
    return stats;
  }

  /** The destinations this process keeps items for (peer not configured) and how many each. */
  async holding(): Promise<OutboxHold[]> {
    // read at each call: deliverers may be added to the map after construction
    const held = Object.entries(this.deliver).filter(([, d]) => d.held !== undefined);
    const counts = await Promise.all(held.map(([dest]) => this.store.indexCount(outboxHeldKey(dest))));
    return held.map(([dest, d], i) => ({ dest, reason: d.held!, items: counts[i]! }));
  }

  /**
   * One line for /readyz: "ok", or what is kept and why. Held items do not make the hub unready:
   * nothing is lost, and they go out once the peer is configured.
   */
  async readiness(): Promise<string> {
    const held = (await this.holding()).filter((h) => h.items > 0);
    if (held.length === 0) return 'ok';
    const total = held.reduce((n, h) => n + h.items, 0);
    return `holding ${total} ${total === 1 ? 'delivery' : 'deliveries'}: ${held.map((h) => `${h.dest} ${h.items} (${h.reason})`).join('; ')}`;
  }

  /** Pending items, oldest first (optionally of one destination), at most `limit`. */
  async pending(dest?: string, limit = 100): Promise<OutboxPending[]> {
    const out: OutboxPending[] = [];
    const now = this.clock.now();
    const page = dest === undefined ? limit : Math.max(100, limit);
    for (let offset = 0; out.length < limit; offset += page) {
      const entries = await this.store.indexRange(OUTBOX_CREATED, { offset, limit: page });
      if (entries.length === 0) break;
      const values = await this.store.getMany(entries.map((e) => outboxKey(e.member)));
      for (const value of values) {
        const rec = parseRecord(value);
        if (!rec || (dest !== undefined && rec.dest !== dest)) continue;
        const { claim, ...rest } = rec;
        out.push({ ...rest, inFlight: claim !== undefined && rec.due > now });
        if (out.length >= limit) break;
      }
      if (entries.length < page) break;
    }
    return out;
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
          const [first] = await this.store.indexRange(OUTBOX_DUE, { limit: 1 });
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
      await this.release();
    }
    const free = this.concurrency - this.inflight.size;
    if (free <= 0) return 0;
    const due = await this.store.indexRange(OUTBOX_DUE, { max: this.clock.now(), limit: free + this.inflight.size });
    let started = 0;
    let held = 0;
    for (const entry of due) {
      if (this.stopping || started >= free) break;
      if (this.inflight.has(entry.member)) continue;
      const claimed = await this.claim(entry.member);
      if (!claimed) continue;
      if ('held' in claimed) {
        held += 1;
        if (!this.told.has(claimed.held)) await this.tellHolds(claimed.held);
        continue;
      }
      started += 1;
      this.launch(claimed.rec, claimed.token);
    }
    if (due.length >= free + this.inflight.size && started + held > 0) this.again = true;
    return started + held;
  }

  /**
   * Takes back into delivery the items held (by this or another process) for destinations this
   * process can deliver to.
   */
  private async release(): Promise<void> {
    for (const [dest, deliver] of Object.entries(this.deliver)) {
      if (deliver.held !== undefined) continue;
      const key = outboxHeldKey(dest);
      for (;;) {
        const entries = await this.store.indexRange(key, { limit: 200 });
        if (entries.length === 0) break;
        const now = this.clock.now();
        await this.store.update([], () => ({
          writes: entries.flatMap((e): Write[] => [
            { op: 'unindex', key, member: e.member },
            { op: 'index', key: OUTBOX_DUE, member: e.member, score: now },
          ]),
          result: undefined,
        }));
        this.logger?.debug({ dest, items: entries.length }, 'outbox took back held items');
        if (entries.length < 200) break;
      }
    }
  }

  /** Logs, once per destination, that items are kept because its peer is not configured. */
  private async tellHolds(only?: string): Promise<void> {
    for (const h of await this.holding()) {
      if (this.told.has(h.dest) || h.items === 0 || (only !== undefined && h.dest !== only)) continue;
      this.told.add(h.dest);
      this.logger?.warn(
        { dest: h.dest, held: h.items, reason: h.reason },
        'outbox keeps the deliveries for a peer that is not configured; they go out once it is (said once)',
      );
    }
  }

  /** Atomically takes an item for one attempt, or returns undefined when it is not ours to take. */
  private claim(id: string): Promise<Claimed | undefined> {
    const key = outboxKey(id);
    const token = randomUUID();
    return this.store.update<Claimed | undefined>([key], ([current]) => {
      const now = this.clock.now();
      if (current === undefined) {
        // A stale index entry without a record: clean it up.
        return {
          writes: [
            { op: 'unindex', key: OUTBOX_DUE, member: id },
            { op: 'unindex', key: OUTBOX_CREATED, member: id },
          ],
          result: undefined,
        };
      }
      const rec = parseRecord(current);
      if (!rec) {
        // Unreadable record: park it at the longest backoff rather than spin on it.
        return { writes: [{ op: 'index', key: OUTBOX_DUE, member: id, score: now + this.retryMaxMs }], result: undefined };
      }
      if (rec.due > now) return { writes: [], result: undefined }; // claimed or rescheduled by someone else
      if (this.deliver[rec.dest]?.held !== undefined) {
        // peer not configured here: keep the item, out of the due index, without an attempt
        return {
          writes: [
            { op: 'unindex', key: OUTBOX_DUE, member: id },
            { op: 'index', key: outboxHeldKey(rec.dest), member: id, score: rec.createdAt },
          ],
          result: { held: rec.dest },
        };
      }
      const claimed: OutboxRecord = { ...rec, attempts: rec.attempts + 1, lastAttemptAt: now, due: now + this.leaseMs, claim: token };
      return {
        writes: [
          { op: 'set', key, value: recordJson(claimed) },
          { op: 'index', key: OUTBOX_DUE, member: id, score: claimed.due },
        ],
        result: { rec: claimed, token },
      };
    });
  }

  private launch(rec: OutboxRecord, token: string): void {
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
        await raceAbort(deliver(item, controller.signal), controller.signal);
        clearTimeout(timer);
        await this.settleSuccess(rec, token);
      } catch (err) {
        clearTimeout(timer);
        await this.settleFailure(rec, token, err);
      }
    })()
      .catch((err) => this.logger?.error({ err, id: rec.id }, 'outbox bookkeeping failed; the lease will expire'))
      .finally(() => {
        this.inflight.delete(rec.id);
        this.kick();
      });
    this.inflight.set(rec.id, { controller, done });
  }

  private async settleSuccess(rec: OutboxRecord, token: string): Promise<void> {
    const key = outboxKey(rec.id);
    const deleted = await this.store.update([key], ([current]) => {
      const cur = parseRecord(current);
      if (!cur || cur.claim !== token) return { writes: [], result: false }; // re-enqueued or re-claimed meanwhile
      return {
        writes: [
          { op: 'del', key },
          { op: 'unindex', key: OUTBOX_DUE, member: rec.id },
          { op: 'unindex', key: OUTBOX_CREATED, member: rec.id },
          { op: 'unindex', key: outboxHeldKey(rec.dest), member: rec.id },
        ],
        result: true,
      };
    });
    if (deleted) await this.store.incr(STAT_DELIVERED);
    this.logger?.debug({ id: rec.id, dest: rec.dest, attempts: rec.attempts, deleted }, 'outbox delivered');
  }

  private async settleFailure(rec: OutboxRecord, token: string, err: unknown): Promise<void> {
    const key = outboxKey(rec.id);
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
          { op: 'index', key: OUTBOX_DUE, member: rec.id, score: next.due },
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

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => undefined);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
