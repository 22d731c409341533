import { mkdirSync } from 'node:fs';
import { ABORT, open, type RootDatabase } from 'lmdb';
import type {
  IndexEntry,
  Json,
  RangeOptions,
  SetOptions,
  Store,
  Unsubscribe,
  UpdateFn,
} from './port.js';
import {
  checkCap,
  checkInt,
  checkKey,
  checkScore,
  checkTtl,
  encodeJson,
  prepareWrite as prepare,
  type PreparedWrite as Prepared,
} from './checks.js';

/**
 * The embedded Store: one LMDB environment on disk, used by a single hub process.
 *
 * Every write runs in an LMDB child transaction (all or nothing, serialised with every other write)
 * and resolves only once the commit is flushed to disk, so an acknowledged write survives a crash.
 * Reads are synchronous against the latest committed snapshot.
 *
 * Key layout (binary keys, byte-ordered). `esc(s)` is the UTF-8 of s with bytes 0x00 and 0x01
 * escaped as 0x01 0x01 and 0x01 0x02, which keeps byte order and frees 0x00 as a terminator.
 *   'v' esc(key)                              -> value envelope: JSON `[value]` or `[value, expiresAt]`
 *   'e' u64(expiresAt) esc(key)               -> '' (expiry queue for the sweep)
 *   'm' esc(key)                              -> list bounds JSON `[head, tail]` (entries head..tail-1)
 *   'l' esc(key) 00 u64(seq)                  -> list entry JSON
 *   'z' esc(key) 00 f64(score) esc(member)    -> '' (ordered index entry)
 *   's' esc(key) 00 esc(member)               -> score of the member
 *   'c' esc(key)                              -> number of members in the index
 * u64 is big-endian; f64 is the IEEE double with its bits arranged to sort bytewise.
 */

export interface LmdbStoreOptions {
  path: string;
  /** Period of the sweep that deletes expired keys; default 60 s. */
  sweepIntervalMs?: number;
}

export interface LmdbStore extends Store {
  /** Deletes every expired value now; returns how many were deleted. */
  sweepExpired(): Promise<number>;
}

const TAG_VALUE = 0x76;
const TAG_EXPIRY = 0x65;
const TAG_LIST_META = 0x6d;
const TAG_LIST = 0x6c;
const TAG_INDEX = 0x7a;
const TAG_SCORE = 0x73;
const TAG_COUNT = 0x63;

/** lmdb-js refuses keys longer than this many bytes. */
const MAX_KEY_BYTES = 1978;
const SWEEP_BATCH = 500;

const TERMINATOR = Buffer.from([0]);

function esc(s: string): Buffer {
  const raw = Buffer.from(s, 'utf8');
  if (raw.indexOf(0) < 0 && raw.indexOf(1) < 0) return raw;
  const out = Buffer.allocUnsafe(raw.length * 2);
  let n = 0;
  for (const b of raw) {
    if (b <= 1) {
      out[n++] = 1;
      out[n++] = b + 1;
    } else {
      out[n++] = b;
    }
  }
  return out.subarray(0, n);
}

function unesc(buf: Uint8Array): string {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.indexOf(1) < 0) return b.toString('utf8');
  const out = Buffer.allocUnsafe(b.length);
  let n = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c === 1) {
      out[n++] = b[++i]! - 1;
    } else {
      out[n++] = c;
    }
  }
  return out.toString('utf8', 0, n);
}

function u64(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(Math.floor(n / 0x1_0000_0000), 0);
  b.writeUInt32BE(n >>> 0, 4);
  return b;
}

function readU64(b: Uint8Array, at: number): number {
  const v = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return v.readUInt32BE(at) * 0x1_0000_0000 + v.readUInt32BE(at + 4);
}

function f64(score: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeDoubleBE(score === 0 ? 0 : score);
  if (b[0]! & 0x80) {
    for (let i = 0; i < 8; i++) b[i] = ~b[i]! & 0xff;
  } else {
    b[0] = b[0]! | 0x80;
  }
  return b;
}

function readF64(src: Uint8Array, at: number): number {
  const b = Buffer.from(src.subarray(at, at + 8));
  if (b[0]! & 0x80) {
    b[0] = b[0]! & 0x7f;
  } else {
    for (let i = 0; i < 8; i++) b[i] = ~b[i]! & 0xff;
  }
  return b.readDoubleBE(0);
}

function sized(key: Buffer): Buffer {
  if (key.length > MAX_KEY_BYTES) {
    throw new RangeError(`key too long for LMDB (${key.length} > ${MAX_KEY_BYTES} bytes)`);
  }
  return key;
}

const tagged = (tag: number, ...parts: Buffer[]): Buffer =>
  sized(Buffer.concat([Buffer.from([tag]), ...parts]));

const valueKey = (key: string) => tagged(TAG_VALUE, esc(key));
const expiryKey = (at: number, key: string) => tagged(TAG_EXPIRY, u64(at), esc(key));
const listMetaKey = (key: string) => tagged(TAG_LIST_META, esc(key));
const listPrefix = (key: string) => tagged(TAG_LIST, esc(key), TERMINATOR);
const indexPrefix = (key: string) => tagged(TAG_INDEX, esc(key), TERMINATOR);
const scoreKey = (key: string, member: string) =>
  tagged(TAG_SCORE, esc(key), TERMINATOR, esc(member));
const countKey = (key: string) => tagged(TAG_COUNT, esc(key));

/** The smallest key above every key that starts with `prefix` (whose last byte is 0x00). */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1] = 1;
  return end;
}

interface Envelope {
  value: Json;
  expiresAt: number | undefined;
}

export async function openLmdbStore(opts: LmdbStoreOptions): Promise<LmdbStore> {
  mkdirSync(opts.path, { recursive: true });
  const db: RootDatabase<string, Buffer> = open<string, Buffer>({
    path: opts.path,
    keyEncoding: 'binary',
    encoding: 'string',
  });

  let closed = false;
  const inflight = new Set<Promise<unknown>>();
  const channels = new Map<string, Set<{ handler: (message: string) => void }>>();

  const live = () => {
    if (closed) throw new Error('store is closed');
  };

  // ---- reads (outside a transaction: the latest committed snapshot; inside: the transaction) ----

  const readEnvelope = (key: string): Envelope | undefined => {
    const raw = db.get(valueKey(key));
    if (raw === undefined) return undefined;
    const env = JSON.parse(raw) as [Json, number?];
    return { value: env[0], expiresAt: env[1] };
  };

  const isLive = (env: Envelope | undefined, now: number): env is Envelope =>
    env !== undefined && (env.expiresAt === undefined || env.expiresAt > now);

  const readValue = (key: string, now: number): Json | undefined => {
    const env = readEnvelope(key);
    return isLive(env, now) ? env.value : undefined;
  };

  const readListBounds = (key: string): [number, number] => {
    const raw = db.get(listMetaKey(key));
    return raw === undefined ? [0, 0] : (JSON.parse(raw) as [number, number]);
  };

  // ---- writes (only inside txn) ----

  /**
   * Writes a value without reading the old one: an expiry entry of an earlier TTL may stay behind,
   * and the sweep deletes a value only when its own expiry matches the entry.
   */
  const writeValue = (key: string, json: string, expiresAt: number | undefined) => {
    if (expiresAt === undefined) {
      void db.put(valueKey(key), `[${json}]`);
    } else {
      void db.put(valueKey(key), `[${json},${expiresAt}]`);
      void db.put(expiryKey(expiresAt, key), '');
    }
  };

  const removeAll = (key: string, now: number): boolean => {
    let existed = false;
    const env = readEnvelope(key);
    if (env) {
      existed = isLive(env, now);
      void db.remove(valueKey(key));
      if (env.expiresAt !== undefined) void db.remove(expiryKey(env.expiresAt, key));
    }
    const bounds = db.get(listMetaKey(key));
    if (bounds !== undefined) {
      const [head, tail] = JSON.parse(bounds) as [number, number];
      if (tail > head) existed = true;
      const prefix = listPrefix(key);
      for (let seq = head; seq < tail; seq++) void db.remove(Buffer.concat([prefix, u64(seq)]));
      void db.remove(listMetaKey(key));
    }
    const sPrefix = scoreKey(key, '');
    const members: { member: string; score: number }[] = [];
    for (const { key: k, value } of db.getRange({ start: sPrefix, end: prefixEnd(sPrefix) })) {
      members.push({ member: unesc(k.subarray(sPrefix.length)), score: Number(value) });
    }
    if (members.length > 0) {
      existed = true;
      const zPrefix = indexPrefix(key);
      for (const { member, score } of members) {
        void db.remove(Buffer.concat([zPrefix, f64(score), esc(member)]));
        void db.remove(scoreKey(key, member));
      }
      void db.remove(countKey(key));
    }
    return existed;
  };

  const applyPush = (key: string, json: string, cap: number): number => {
    let [head, tail] = readListBounds(key);
    const prefix = listPrefix(key);
    void db.put(sized(Buffer.concat([prefix, u64(tail)])), json);
    tail += 1;
    while (tail - head > cap) {
      void db.remove(Buffer.concat([prefix, u64(head)]));
      head += 1;
    }
    void db.put(listMetaKey(key), `[${head},${tail}]`);
    return tail - head;
  };

  const readCount = (key: string): number => {
    const raw = db.get(countKey(key));
    return raw === undefined ? 0 : Number(raw);
  };

  const applyIndex = (key: string, member: string, score: number) => {
    const sk = scoreKey(key, member);
    const zPrefix = indexPrefix(key);
    const memberBytes = esc(member);
    const entry = sized(Buffer.concat([zPrefix, f64(score), memberBytes]));
    const old = db.get(sk);
    if (old !== undefined) {
      const oldScore = Number(old);
      if (oldScore === score) return;
      void db.remove(Buffer.concat([zPrefix, f64(oldScore), memberBytes]));
    } else {
      void db.put(countKey(key), String(readCount(key) + 1));
    }
    void db.put(entry, '');
    void db.put(sk, String(score));
  };

  const applyUnindex = (key: string, member: string): boolean => {
    const sk = scoreKey(key, member);
    const old = db.get(sk);
    if (old === undefined) return false;
    const memberBytes = esc(member);
    void db.remove(Buffer.concat([indexPrefix(key), f64(Number(old)), memberBytes]));
    void db.remove(sk);
    const count = readCount(key) - 1;
    if (count > 0) void db.put(countKey(key), String(count));
    else void db.remove(countKey(key));
    return true;
  };

  const applyIncr = (key: string, by: number, now: number): number => {
    const env = readEnvelope(key);
    const alive = isLive(env, now);
    const cur = alive ? env.value : 0;
    if (typeof cur !== 'number' || !Number.isSafeInteger(cur)) {
      throw new TypeError(`value at ${key} is not an integer`);
    }
    const next = cur + by;
    if (!Number.isSafeInteger(next)) throw new RangeError('counter overflow');
    writeValue(key, String(next), alive ? env.expiresAt : undefined);
    return next;
  };

  const apply = (w: Prepared, now: number) => {
    switch (w.op) {
      case 'set':
        writeValue(w.key, w.json, w.ttlMs === undefined ? undefined : now + w.ttlMs);
        break;
      case 'del':
        removeAll(w.key, now);
        break;
      case 'push':
        applyPush(w.key, w.json, w.cap);
        break;
      case 'index':
        applyIndex(w.key, w.member, w.score);
        break;
      case 'unindex':
        applyUnindex(w.key, w.member);
        break;
      case 'incr':
        applyIncr(w.key, w.by, now);
        break;
    }
  };

  /**
   * Runs `body` in a child write transaction. A throw inside aborts the transaction (nothing is
   * written) and the same error object reaches the caller. Resolves once the commit is on disk.
   */
  const txn = <T>(body: (now: number) => T): Promise<T> => {
    live();
    const run = (async () => {
      let failure: { error: unknown } | undefined;
      let result: T | undefined;
      const committed = db.childTransaction(() => {
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
      const flushed = new Promise<void>((resolve, reject) => db.flushed.then(() => resolve(), reject));
      await committed;
      if (failure) throw failure.error;
      await flushed;
      return result as T;
    })();
    inflight.add(run);
    const done = () => inflight.delete(run);
    run.then(done, done);
    return run;
  };

  // ---- expiry sweep ----

  let sweeping: Promise<number> | undefined;
  const sweepOnce = (): Promise<{ scanned: number; deleted: number }> =>
    txn((now) => {
      const start = Buffer.from([TAG_EXPIRY]);
      const end = Buffer.concat([start, u64(now + 1)]);
      const found: Buffer[] = [];
      for (const k of db.getKeys({ start, end, limit: SWEEP_BATCH })) found.push(Buffer.from(k));
      let deleted = 0;
      for (const k of found) {
        const at = readU64(k, 1);
        const key = unesc(k.subarray(9));
        const env = readEnvelope(key);
        // an entry left by an earlier TTL of a rewritten value deletes nothing
        if (env && env.expiresAt === at) {
          void db.remove(valueKey(key));
          deleted += 1;
        }
        void db.remove(k);
      }
      return { scanned: found.length, deleted };
    });

  const sweepExpired = (): Promise<number> => {
    sweeping ??= (async () => {
      let total = 0;
      try {
        for (;;) {
          const { scanned, deleted } = await sweepOnce();
          total += deleted;
          if (scanned < SWEEP_BATCH) return total;
        }
      } finally {
        sweeping = undefined;
      }
    })();
    return sweeping;
  };

  const sweepTimer = setInterval(() => {
    if (!closed) sweepExpired().catch(() => undefined);
  }, opts.sweepIntervalMs ?? 60_000);
  sweepTimer.unref();

  const store: LmdbStore = {
    kind: 'lmdb',

    async get<T extends Json = Json>(key: string): Promise<T | undefined> {
      live();
      return readValue(checkKey(key), Date.now()) as T | undefined;
    },

    async getMany<T extends Json = Json>(keys: string[]): Promise<(T | undefined)[]> {
      live();
      const now = Date.now();
      return keys.map((k) => readValue(checkKey(k), now) as T | undefined);
    },

    async set(key: string, value: Json, opts?: SetOptions): Promise<boolean> {
      checkKey(key);
      const json = encodeJson(value);
      const ttlMs = checkTtl(opts?.ttlMs);
      const ifAbsent = opts?.ifAbsent === true;
      return txn((now) => {
        if (ifAbsent && readValue(key, now) !== undefined) return false;
        writeValue(key, json, ttlMs === undefined ? undefined : now + ttlMs);
        return true;
      });
    },

    async del(key: string): Promise<boolean> {
      checkKey(key);
      return txn((now) => removeAll(key, now));
    },

    async update<R>(keys: string[], fn: UpdateFn<R>): Promise<R> {
      keys.forEach((k) => checkKey(k));
      return txn((now) => {
        const current = keys.map((k) => readValue(k, now));
        const plan = fn(current);
        if (!plan || !Array.isArray(plan.writes)) throw new TypeError('update fn must return { writes, result }');
        const prepared = plan.writes.map(prepare);
        for (const w of prepared) apply(w, now);
        return plan.result;
      });
    },

    async incr(key: string, by = 1): Promise<number> {
      checkKey(key);
      checkInt(by, 'by');
      return txn((now) => applyIncr(key, by, now));
    },

    async push(key: string, value: Json, cap: number): Promise<number> {
      checkKey(key);
      const json = encodeJson(value);
      checkCap(cap);
      return txn(() => applyPush(key, json, cap));
    },

    async range<T extends Json = Json>(key: string, start = 0, stop = -1): Promise<T[]> {
      live();
      checkKey(key);
      checkInt(start, 'start');
      checkInt(stop, 'stop');
      const [head, tail] = readListBounds(key);
      const len = tail - head;
      const from = start < 0 ? Math.max(len + start, 0) : start;
      const to = stop < 0 ? len + stop : Math.min(stop, len - 1);
      if (from > to || from >= len) return [];
      const prefix = listPrefix(key);
      const out: T[] = [];
      for (const { value } of db.getRange({
        start: Buffer.concat([prefix, u64(head + from)]),
        end: Buffer.concat([prefix, u64(head + to + 1)]),
      })) {
        out.push(JSON.parse(value) as T);
      }
      return out;
    },

    async length(key: string): Promise<number> {
      live();
      const [head, tail] = readListBounds(checkKey(key));
      return tail - head;
    },

    async index(key: string, member: string, score: number): Promise<void> {
      checkKey(key);
      checkKey(member, 'member');
      checkScore(score);
      await txn(() => applyIndex(key, member, score));
    },

    async unindex(key: string, member: string): Promise<boolean> {
      checkKey(key);
      checkKey(member, 'member');
      return txn(() => applyUnindex(key, member));
    },

    async indexRange(key: string, opts: RangeOptions = {}): Promise<IndexEntry[]> {
      live();
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
      const range = reverse
        ? { start: high, end: low, reverse: true, inclusiveEnd: true, offset, limit }
        : { start: low, end: high, offset, limit };
      const out: IndexEntry[] = [];
      for (const k of db.getKeys(range)) {
        out.push({ member: unesc(k.subarray(prefix.length + 8)), score: readF64(k, prefix.length) });
      }
      return out;
    },

    async indexScore(key: string, member: string): Promise<number | undefined> {
      live();
      const raw = db.get(scoreKey(checkKey(key), checkKey(member, 'member')));
      return raw === undefined ? undefined : Number(raw);
    },

    async indexCount(key: string): Promise<number> {
      live();
      return readCount(checkKey(key));
    },

    async publish(channel: string, message: string): Promise<void> {
      live();
      checkKey(channel, 'channel');
      const subs = channels.get(channel);
      if (!subs || subs.size === 0) return;
      const snapshot = [...subs];
      queueMicrotask(() => {
        for (const sub of snapshot) {
          if (!subs.has(sub)) continue;
          try {
            sub.handler(message);
          } catch {
            // one faulty handler must not stop delivery to the others
          }
        }
      });
    },

    async subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe> {
      live();
      checkKey(channel, 'channel');
      const sub = { handler };
      let subs = channels.get(channel);
      if (!subs) {
        subs = new Set();
        channels.set(channel, subs);
      }
      subs.add(sub);
      return async () => {
        const set = channels.get(channel);
        if (!set) return;
        set.delete(sub);
        if (set.size === 0) channels.delete(channel);
      };
    },

    async ping(): Promise<void> {
      live();
      db.get(valueKey(''));
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      clearInterval(sweepTimer);
      channels.clear();
      await Promise.allSettled([...inflight]);
      await db.flushed;
      await db.close();
    },

    sweepExpired,
  };
  return store;
}
