import { mkdirSync } from 'node:fs';
import { ABORT, open, type RootDatabase } from 'lmdb';
import type { DrawOptions, Drawing, IndexEntry, Json, RangeOptions, SetOptions, Store, StoreState, Unsubscribe, UpdateFn } from './port.js';
import {
  checkCap,
  checkInt,
  checkKey,
  checkScore,
  checkTtl,
  checkDraw,
  checkPlan,
  encodeJson,
  fillWrite,
  type PreparedWrite,
  prepareWrite as prepare,
  touchedKeys,
} from './checks.js';
import { checkUpdateKeys, partitionCheckFromEnv } from './partition.js';
import { LocalPubSub } from './local-pubsub.js';
import { LmdbTables } from './lmdb-tables.js';
import {
  TAG_EXPIRY,
  f64,
  indexPrefix,
  listPrefix,
  prefixEnd,
  readF64,
  readU64,
  scoreKey,
  u64,
  unesc,
  valueKey,
} from './lmdb-keys.js';

/**
 * The embedded Store: one LMDB environment on disk, used by a single hub process (key layout in
 * lmdb-keys.ts, pub/sub in-process: local-pubsub.ts).
 *
 * Group commit: every write runs as a child transaction (all or nothing) of the batch that lmdb-js
 * gathers from one event turn, so the writes of many requests share one LMDB transaction and one
 * flush to disk; each resolves only once the flush of its own batch is done, so an acknowledged
 * write survives a crash. Reads are synchronous against the latest committed snapshot.
 */

export interface LmdbStoreOptions {
  path: string;
  /** Period of the sweep that deletes expired keys; default 60 s. */
  sweepIntervalMs?: number;
  /**
   * Refuse an update that spans aggregates (PartitionError), as a Redis Cluster would refuse one that
   * spans partitions (partition.ts); default STORE_PARTITION_CHECK=1 in the environment.
   */
  partitionCheck?: boolean;
}

const SWEEP_BATCH = 500;

export async function openLmdbStore(opts: LmdbStoreOptions): Promise<LmdbStore> {
  mkdirSync(opts.path, { recursive: true });
  return new LmdbStore(
    open<string, Buffer>({ path: opts.path, keyEncoding: 'binary', encoding: 'string' }),
    opts.sweepIntervalMs ?? 60_000,
    opts.path,
    opts.partitionCheck ?? partitionCheckFromEnv(),
  );
}

export class LmdbStore implements Store {
  readonly kind = 'lmdb';
  private closed = false;
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly pubsub = new LocalPubSub();
  private readonly t: LmdbTables;
  private readonly sweepTimer: NodeJS.Timeout;
  private sweeping: Promise<number> | undefined;

  constructor(
    private readonly db: RootDatabase<string, Buffer>,
    sweepIntervalMs: number,
    private readonly path = '',
    private readonly partitionCheck = false,
  ) {
    this.t = new LmdbTables(db);
    this.sweepTimer = setInterval(() => {
      if (!this.closed) this.sweepExpired().catch(() => undefined);
    }, sweepIntervalMs);
    this.sweepTimer.unref();
  }

  /** Embedded, one process, each acknowledged write flushed to disk with its batch. */
  async describe(): Promise<StoreState> {
    this.live();
    return {
      kind: this.kind,
      role: 'embedded',
      replicas: 0,
      min_replicas: 0,
      durability: 'each acknowledged write is flushed to disk with its commit batch (survives a crash of the process or the machine)',
      details: { path: this.path },
    };
  }

  private live(): void {
    if (this.closed) throw new Error('store is closed');
  }

  /**
   * Runs `body` in a child transaction of the current batch. A throw inside aborts it (nothing is
   * written) and the same error object reaches the caller. Resolves once the batch is on disk.
   */
  private txn<T>(body: (now: number) => T): Promise<T> {
    this.live();
    const run = (async () => {
      let failure: { error: unknown } | undefined;
      let result: T | undefined;
      const committed = this.db.childTransaction(() => {
        try {
          result = body(Date.now());
          return undefined;
        } catch (error) {
          failure = { error };
          return ABORT;
        }
      });
      // the flush of this very batch, taken now: db.flushed read after the commit would be the
      // flush of a later batch when one has started meanwhile
      const flushed = new Promise<void>((resolve, reject) => this.db.flushed.then(() => resolve(), reject));
      await committed;
      if (failure) throw failure.error;
      await flushed;
      return result as T;
    })();
    this.inflight.add(run);
    const done = () => this.inflight.delete(run);
    run.then(done, done);
    return run;
  }

  // ---- expiry sweep ----

  private sweepOnce(): Promise<{ scanned: number; deleted: number }> {
    return this.txn((now) => {
      const start = Buffer.from([TAG_EXPIRY]);
      const end = Buffer.concat([start, u64(now + 1)]);
      const found: Buffer[] = [];
      for (const k of this.db.getKeys({ start, end, limit: SWEEP_BATCH })) found.push(Buffer.from(k));
      let deleted = 0;
      for (const k of found) {
        const at = readU64(k, 1);
        const key = unesc(k.subarray(9));
        const env = this.t.readEnvelope(key);
        // an entry left by an earlier TTL of a rewritten value deletes nothing
        if (env && env.expiresAt === at) {
          void this.db.remove(valueKey(key));
          deleted += 1;
        }
        void this.db.remove(k);
      }
      return { scanned: found.length, deleted };
    });
  }

  /** Deletes every expired value now; returns how many were deleted. */
  sweepExpired(): Promise<number> {
    this.sweeping ??= (async () => {
      let total = 0;
      try {
        for (;;) {
          const { scanned, deleted } = await this.sweepOnce();
          total += deleted;
          if (scanned < SWEEP_BATCH) return total;
        }
      } finally {
        this.sweeping = undefined;
      }
    })();
    return this.sweeping;
  }

  // ---- the Store port ----

  async get<T extends Json = Json>(key: string): Promise<T | undefined> {
    this.live();
    return this.t.readValue(checkKey(key), Date.now()) as T | undefined;
  }

  async getMany<T extends Json = Json>(keys: string[]): Promise<(T | undefined)[]> {
    this.live();
    const now = Date.now();
    return keys.map((k) => this.t.readValue(checkKey(k), now) as T | undefined);
  }

  async set(key: string, value: Json, opts?: SetOptions): Promise<boolean> {
    checkKey(key);
    const json = encodeJson(value);
    const ttlMs = checkTtl(opts?.ttlMs);
    const ifAbsent = opts?.ifAbsent === true;
    return this.txn((now) => {
      if (ifAbsent && this.t.readValue(key, now) !== undefined) return false;
      this.t.writeValue(key, json, ttlMs === undefined ? undefined : now + ttlMs);
      return true;
    });
  }

  async del(key: string): Promise<boolean> {
    checkKey(key);
    return this.txn((now) => this.t.removeAll(key, now));
  }

  update<R>(keys: string[], fn: UpdateFn<R>): Promise<R>;
  update<R>(keys: string[], fn: UpdateFn<R>, opts: DrawOptions): Promise<Drawing<R>>;
  async update<R>(keys: string[], fn: UpdateFn<R>, opts?: DrawOptions): Promise<R | Drawing<R>> {
    keys.forEach((k) => checkKey(k));
    const draw = checkDraw(opts);
    const published: { key: string; message: string }[] = [];
    const out = await this.txn((now) => {
      const plan = checkPlan(fn(keys.map((k) => this.t.readValue(k, now))));
      const drawing = plan.writes.map((w) => (draw === undefined ? prepare(w) : prepare(w, draw.length)));
      if (this.partitionCheck) checkUpdateKeys(touchedKeys(keys, draw, plan.writes), 'aggregate');
      for (const w of drawing) if (w.op === 'publish') published.push(w);
      if (draw === undefined) {
        this.t.applyAll(drawing as PreparedWrite[], now);
        return plan.result;
      }
      // the draws come first, in this transaction: a failing write below takes them back with it
      const drawn = draw.map((k) => this.t.applyIncr(k, 1, now));
      this.t.applyAll(drawing.map((w) => fillWrite(w, drawn)), now);
      return { result: plan.result, drawn };
    });
    for (const p of published) this.pubsub.publish(p.key, p.message);
    return out;
  }

  async incr(key: string, by = 1): Promise<number> {
    checkKey(key);
    checkInt(by, 'by');
    return this.txn((now) => this.t.applyIncr(key, by, now));
  }

  async push(key: string, value: Json, cap: number): Promise<number> {
    checkKey(key);
    const json = encodeJson(value);
    checkCap(cap);
    return this.txn(() => this.t.applyPush(key, json, cap));
  }

  async range<T extends Json = Json>(key: string, start = 0, stop = -1): Promise<T[]> {
    this.live();
    checkKey(key);
    checkInt(start, 'start');
    checkInt(stop, 'stop');
    const [head, tail] = this.t.readListBounds(key);
    const len = tail - head;
    const from = start < 0 ? Math.max(len + start, 0) : start;
    const to = stop < 0 ? len + stop : Math.min(stop, len - 1);
    if (from > to || from >= len) return [];
    const prefix = listPrefix(key);
    const out: T[] = [];
    for (const { value } of this.db.getRange({ start: Buffer.concat([prefix, u64(head + from)]), end: Buffer.concat([prefix, u64(head + to + 1)]) })) {
      out.push(JSON.parse(value) as T);
    }
    return out;
  }

  async length(key: string): Promise<number> {
    this.live();
    const [head, tail] = this.t.readListBounds(checkKey(key));
    return tail - head;
  }

  async index(key: string, member: string, score: number): Promise<void> {
    checkKey(key);
    checkKey(member, 'member');
    checkScore(score);
    await this.txn(() => this.t.applyIndex(key, member, score));
  }

  async unindex(key: string, member: string): Promise<boolean> {
    checkKey(key);
    checkKey(member, 'member');
    return this.txn(() => this.t.applyUnindex(key, member));
  }

  async indexRange(key: string, opts: RangeOptions = {}): Promise<IndexEntry[]> {
    this.live();
    checkKey(key);
    const { min, max, reverse = false } = opts;
    if (min !== undefined) checkScore(min);
    if (max !== undefined) checkScore(max);
    const offset = opts.offset === undefined ? 0 : checkInt(opts.offset, 'offset');
    const limit = opts.limit === undefined ? undefined : checkInt(opts.limit, 'limit');
    if (offset < 0) throw new RangeError('offset must not be negative');
    if (limit !== undefined && limit < 0) throw new RangeError('limit must not be negative');
    if (limit === 0 || (min !== undefined && max !== undefined && min > max)) return [];
    const prefix = indexPrefix(key);
    const low = min === undefined ? prefix : Buffer.concat([prefix, f64(min)]);
    // 0xff never occurs in UTF-8, so it sorts above every member of the max score
    const high = max === undefined ? prefixEnd(prefix) : Buffer.concat([prefix, f64(max), Buffer.from([0xff])]);
    const range = reverse ? { start: high, end: low, reverse: true, inclusiveEnd: true, offset, limit } : { start: low, end: high, offset, limit };
    const out: IndexEntry[] = [];
    for (const k of this.db.getKeys(range)) {
      out.push({ member: unesc(k.subarray(prefix.length + 8)), score: readF64(k, prefix.length) });
    }
    return out;
  }

  async indexScore(key: string, member: string): Promise<number | undefined> {
    this.live();
    const raw = this.db.get(scoreKey(checkKey(key), checkKey(member, 'member')));
    return raw === undefined ? undefined : Number(raw);
  }

  async indexCount(key: string): Promise<number> {
    this.live();
    return this.t.readCount(checkKey(key));
  }

  async publish(channel: string, message: string): Promise<void> {
    this.live();
    this.pubsub.publish(checkKey(channel, 'channel'), message);
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe> {
    this.live();
    return this.pubsub.subscribe(checkKey(channel, 'channel'), handler);
  }

  async ping(): Promise<void> {
    this.live();
    this.db.get(valueKey(''));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweepTimer);
    this.pubsub.clear();
    await Promise.allSettled([...this.inflight]);
    await this.db.flushed;
    await this.db.close();
  }
}
