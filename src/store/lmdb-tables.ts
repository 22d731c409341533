import type { RootDatabase } from 'lmdb';
import type { Json } from './port.js';
import type { PreparedWrite as Prepared } from './checks.js';
import {
  EMPTY,
  countKey,
  expiryKey,
  indexEntryKey,
  listMetaKey,
  listPrefix,
  prefixEnd,
  scoreKey,
  sized,
  u64,
  unesc,
  valueKey,
} from './lmdb-keys.js';

/**
 * The LMDB adapter's records on the key layout of lmdb-keys.ts: values with their expiry, capped
 * lists, ordered indexes with their counts. Reads outside a transaction see the latest committed
 * snapshot, inside one the transaction; writes only run inside a write transaction.
 */

export interface Envelope {
  value: Json;
  expiresAt: number | undefined;
}

/** The value of every index entry: empty, one buffer for all (lmdb-js takes bytes as they are). */
const ENTRY = EMPTY as unknown as string;

export const isLive = (env: Envelope | undefined, now: number): env is Envelope =>
  env !== undefined && (env.expiresAt === undefined || env.expiresAt > now);

export class LmdbTables {
  constructor(private readonly db: RootDatabase<string, Buffer>) {}

  // ---- reads (outside a transaction: the latest committed snapshot; inside: the transaction) ----

  readEnvelope(key: string): Envelope | undefined {
    const raw = this.db.get(valueKey(key));
    if (raw === undefined) return undefined;
    const env = JSON.parse(raw) as [Json, number?];
    return { value: env[0], expiresAt: env[1] };
  }

  readValue(key: string, now: number): Json | undefined {
    const env = this.readEnvelope(key);
    return isLive(env, now) ? env.value : undefined;
  }

  readListBounds(key: string): [number, number] {
    const raw = this.db.get(listMetaKey(key));
    return raw === undefined ? [0, 0] : (JSON.parse(raw) as [number, number]);
  }

  readCount(key: string): number {
    const held = this.counts?.get(key);
    if (held !== undefined) return held;
    const raw = this.db.get(countKey(key));
    return raw === undefined ? 0 : Number(raw);
  }

  /**
   * The index counts an update changes, held while its writes are applied and written once at the
   * end (applyAll): a batch that adds 512 entries to one index reads and writes its count once.
   */
  private counts: Map<string, number> | undefined;

  private setCount(key: string, n: number): void {
    if (this.counts) this.counts.set(key, n);
    else if (n > 0) void this.db.put(countKey(key), String(n));
    else void this.db.remove(countKey(key));
  }

  /** Applies an update's writes in order (inside its transaction), with its index counts written once. */
  applyAll(writes: Iterable<Prepared>, now: number): void {
    const counts = (this.counts = new Map());
    try {
      for (const w of writes) this.apply(w, now);
    } finally {
      this.counts = undefined;
    }
    // reached only when every write applied: a throw aborts the transaction, counts and all
    for (const [key, n] of counts) this.setCount(key, n);
  }

  // ---- writes (only inside a transaction) ----

  /**
   * Writes a value without reading the old one: an expiry entry of an earlier TTL may stay behind,
   * and the sweep deletes a value only when its own expiry matches the entry.
   */
  writeValue(key: string, json: string, expiresAt: number | undefined): void {
    if (expiresAt === undefined) {
      void this.db.put(valueKey(key), `[${json}]`);
    } else {
      void this.db.put(valueKey(key), `[${json},${expiresAt}]`);
      void this.db.put(expiryKey(expiresAt, key), '');
    }
  }

  removeAll(key: string, now: number): boolean {
    const db = this.db;
    let existed = false;
    const env = this.readEnvelope(key);
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
      for (const { member, score } of members) {
        void db.remove(indexEntryKey(key, score, member));
        void db.remove(scoreKey(key, member));
      }
      this.setCount(key, 0);
    }
    return existed;
  }

  applyPush(key: string, json: string, cap: number): number {
    let [head, tail] = this.readListBounds(key);
    const prefix = listPrefix(key);
    void this.db.put(sized(Buffer.concat([prefix, u64(tail)])), json);
    tail += 1;
    while (tail - head > cap) {
      void this.db.remove(Buffer.concat([prefix, u64(head)]));
      head += 1;
    }
    void this.db.put(listMetaKey(key), `[${head},${tail}]`);
    return tail - head;
  }

  /** Puts unless the key is there; whether it put (lmdb-js answers so inside a transaction; its types say void). */
  private putIfAbsent(key: Buffer, value: string): boolean {
    const wrote = this.db.putSync(key, value, { noOverwrite: true }) as unknown;
    if (typeof wrote !== 'boolean') throw new Error('lmdb: a put without overwrite did not say whether it wrote');
    return wrote;
  }

  /**
   * A new member (the usual case) costs two puts: its score record is put only if absent, which also
   * tells whether the member was there; a member already there is read and moved if its score changed.
   */
  applyIndex(key: string, member: string, score: number): void {
    const sk = scoreKey(key, member);
    const text = String(score);
    if (this.putIfAbsent(sk, text)) {
      void this.db.put(indexEntryKey(key, score, member), ENTRY);
      this.setCount(key, this.readCount(key) + 1);
      return;
    }
    const oldScore = Number(this.db.get(sk));
    if (oldScore === score) return;
    void this.db.remove(indexEntryKey(key, oldScore, member));
    void this.db.put(indexEntryKey(key, score, member), ENTRY);
    void this.db.put(sk, text);
  }

  applyUnindex(key: string, member: string): boolean {
    const sk = scoreKey(key, member);
    const old = this.db.get(sk);
    if (old === undefined) return false;
    void this.db.remove(indexEntryKey(key, Number(old), member));
    void this.db.remove(sk);
    this.setCount(key, this.readCount(key) - 1);
    return true;
  }

  applyIncr(key: string, by: number, now: number): number {
    const env = this.readEnvelope(key);
    const alive = isLive(env, now);
    const cur = alive ? env.value : 0;
    if (typeof cur !== 'number' || !Number.isSafeInteger(cur)) throw new TypeError(`value at ${key} is not an integer`);
    const next = cur + by;
    if (!Number.isSafeInteger(next)) throw new RangeError('counter overflow');
    this.writeValue(key, String(next), alive ? env.expiresAt : undefined);
    return next;
  }

  apply(w: Prepared, now: number): void {
    switch (w.op) {
      case 'set':
        return this.writeValue(w.key, w.json, w.ttlMs === undefined ? undefined : now + w.ttlMs);
      case 'del':
        this.removeAll(w.key, now);
        return;
      case 'push':
        this.applyPush(w.key, w.json, w.cap);
        return;
      case 'index':
        return this.applyIndex(w.key, w.member, w.score);
      case 'unindex':
        this.applyUnindex(w.key, w.member);
        return;
      case 'incr':
        this.applyIncr(w.key, w.by, now);
        return;
      case 'publish':
        // published by the adapter once the commit is on disk
        return;
    }
  }
}
