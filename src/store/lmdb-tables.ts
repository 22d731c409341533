import type { RootDatabase } from 'lmdb';
import type { Json } from './port.js';
import type { PreparedWrite as Prepared } from './checks.js';
import {
  countKey,
  esc,
  expiryKey,
  f64,
  indexPrefix,
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
    const raw = this.db.get(countKey(key));
    return raw === undefined ? 0 : Number(raw);
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
      const zPrefix = indexPrefix(key);
      for (const { member, score } of members) {
        void db.remove(Buffer.concat([zPrefix, f64(score), esc(member)]));
        void db.remove(scoreKey(key, member));
      }
      void db.remove(countKey(key));
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

  applyIndex(key: string, member: string, score: number): void {
    const sk = scoreKey(key, member);
    const zPrefix = indexPrefix(key);
    const memberBytes = esc(member);
    const entry = sized(Buffer.concat([zPrefix, f64(score), memberBytes]));
    const old = this.db.get(sk);
    if (old !== undefined) {
      const oldScore = Number(old);
      if (oldScore === score) return;
      void this.db.remove(Buffer.concat([zPrefix, f64(oldScore), memberBytes]));
    } else {
      void this.db.put(countKey(key), String(this.readCount(key) + 1));
    }
    void this.db.put(entry, '');
    void this.db.put(sk, String(score));
  }

  applyUnindex(key: string, member: string): boolean {
    const sk = scoreKey(key, member);
    const old = this.db.get(sk);
    if (old === undefined) return false;
    void this.db.remove(Buffer.concat([indexPrefix(key), f64(Number(old)), esc(member)]));
    void this.db.remove(sk);
    const count = this.readCount(key) - 1;
    if (count > 0) void this.db.put(countKey(key), String(count));
    else void this.db.remove(countKey(key));
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
    }
  }
}
