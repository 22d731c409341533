import type { Clock } from './clock.js';
import { AppError } from './errors.js';
import { codec, F, type Codec } from './store/codec.js';
import { partitionKeyFor, partitionKeys, type Json, type Store, type Write } from './store/port.js';

/**
 * Presence, in the manner of Centrifuge's PresenceManager: who is on a topic (a document, a show's
 * check-in, a program's stream), kept in the Store so every process sharing it (Redis) sees the
 * same set. A client is added (or renewed: the heartbeat) with `add`, leaves with `remove`, and is
 * gone `timeoutMs` after its last heartbeat; `sweep` removes the silent ones and says which left.
 *
 * Layout: one value per topic, a map of entries by client id (`key(topic)`, kept four timeouts),
 * and an index of the topics with entries per partition (`<index>:{#p}`, in the partition of the
 * topic's key, written in the same update: docs/partitions.md), scored so that a topic is due for
 * the sweep once its earliest entry expires. The sweep also reads the global index of before the
 * partitions (`<index>`) and drops a topic from it once the topic is in its partition's. The hub's own presence (hub.presence, topics declared with
 * `presence: true`) and a service's (collab's document presence) are each one PresenceManager.
 */

/** One client on a topic: the stored fields, then whatever the caller's `info` adds. */
export type PresenceEntry = {
  /** The client id (a socket, a stream, a page's presence id). */
  id: string;
  /** The identity behind it ("anon:<address>" for a client without one). */
  user: string;
  joined: number;
  /** Its last heartbeat. */
  seen: number;
  /** Its own time-out, when `add` gave one other than the manager's. */
  ttl?: number;
} & { [field: string]: Json };

export type PresenceMap = Record<string, PresenceEntry>;

export interface PresenceStats {
  /** Clients on the topic. */
  clients: number;
  /** Distinct identities among them. */
  users: number;
}

export interface PresenceOptions<E extends PresenceEntry = PresenceEntry> {
  store: Store;
  clock: Clock;
  /** Milliseconds after the last heartbeat an entry is gone (default 30 s). */
  timeoutMs?: number;
  /** The store key of a topic's entries (default `presence:<topic>`). */
  key?: (topic: string) => string;
  /** The store index of the topics with entries (default `presence:topics`), one per partition (`<index>:{#p}`). */
  index?: string;
  /** How a topic's map is read and written (default: entries with a string `user` and a numeric `seen`). */
  codec?: Codec<Record<string, E>>;
}

export interface AddOptions<E extends PresenceEntry = PresenceEntry> {
  user: string;
  /**
   * Fields the entry carries besides its own (a name, a colour): an object, or a function of the
   * client's current entry and the others on the topic (e.g. a colour nobody else has). It runs
   * inside the atomic update and may throw to refuse (nothing is written then).
   */
  info?: Record<string, Json> | ((current: E | undefined, others: E[]) => Record<string, Json>);
  /** This entry's time-out, when it differs from the manager's. */
  ttlMs?: number;
}

export interface Added<E extends PresenceEntry = PresenceEntry> {
  /** True when the client was not on the topic before (a join, not a heartbeat). */
  joined: boolean;
  entry: E;
  /** Everyone on the topic now, the client included. */
  entries: E[];
}

export interface Removed<E extends PresenceEntry = PresenceEntry> {
  entry: E;
  /** Who is still on the topic. */
  entries: E[];
}

/** What one sweep found on one topic: entries that timed out, and who is left. */
export interface Swept<E extends PresenceEntry = PresenceEntry> {
  topic: string;
  removed: E[];
  left: E[];
}

const defaultCodec = codec<PresenceMap>('presence', (r) => Object.values(r).every((p) => F.obj(p) && typeof p.user === 'string' && typeof p.seen === 'number'));

export const notYourPresence = (topic: string) => new AppError('forbidden', 'not_your_presence', `that presence entry of ${topic} belongs to someone else`);

/**
 * `E` is the entry a service keeps (collab's peers carry a name and a colour): its codec checks each
 * stored map, and its `info` supplies the fields beyond the manager's own.
 */
export class PresenceManager<E extends PresenceEntry = PresenceEntry> {
  readonly timeoutMs: number;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly keyOf: (topic: string) => string;
  private readonly index: string;
  /** The global index of before the partitions, then each partition's. */
  private readonly indexes: string[];
  private readonly codec: Codec<Record<string, E>>;

  constructor(opts: PresenceOptions<E>) {
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs < 1) throw new RangeError('timeoutMs must be positive');
    this.store = opts.store;
    this.clock = opts.clock;
    this.keyOf = opts.key ?? ((t) => `presence:${t}`);
    this.index = opts.index ?? 'presence:topics';
    this.indexes = [this.index, ...partitionKeys(this.index)];
    this.codec = opts.codec ?? (defaultCodec as Codec<Record<string, PresenceEntry>> as Codec<Record<string, E>>);
  }

  /** Adds the client to the topic, or renews its entry (the heartbeat). A client id names one user: another's is refused. */
  async add(topic: string, client: string, opts: AddOptions<E>): Promise<Added<E>> {
    if (opts.ttlMs !== undefined && !(Number.isFinite(opts.ttlMs) && opts.ttlMs >= 1)) throw new RangeError('ttlMs must be positive');
    const now = this.clock.now();
    const key = this.keyOf(topic);
    return this.store.update([key], ([cur]) => {
      // entries past their time-out stay stored until the sweep, which announces them
      const map = { ...this.codec.decode(cur) };
      const live = this.live(map, now);
      const existing = live[client];
      const others = Object.values(live).filter((p) => p.id !== client);
      const info = typeof opts.info === 'function' ? opts.info(existing, others) : (opts.info ?? {});
      if (existing && existing.user !== opts.user) throw notYourPresence(topic);
      // the caller's info supplies the fields of E beyond the manager's own
      const entry = (existing ? { ...existing, ...info, seen: now } : { id: client, user: opts.user, ...info, joined: now, seen: now }) as E;
      if (opts.ttlMs !== undefined && opts.ttlMs !== this.timeoutMs) entry.ttl = opts.ttlMs;
      else delete entry.ttl;
      map[client] = entry;
      live[client] = entry;
      const stored = Object.values(map);
      return {
        writes: [
          { op: 'set', key, value: this.codec.encode(map), ttlMs: this.keep(stored) },
          { op: 'index', key: this.indexOf(key), member: topic, score: this.due(stored) },
        ],
        result: { joined: !existing, entry, entries: Object.values(live) },
      };
    });
  }

  /**
   * Removes the client from the topic; undefined when it was not there. `allow` may throw to refuse
   * (e.g. someone else's entry); the entry then stays.
   */
  async remove(topic: string, client: string, allow?: (entry: E) => void): Promise<Removed<E> | undefined> {
    const key = this.keyOf(topic);
    const removed = await this.store.update([key], ([cur]) => {
      const map = { ...this.codec.decode(cur) };
      const entry = map[client];
      if (!entry) return { writes: [], result: undefined };
      allow?.(entry);
      delete map[client];
      const entries = Object.values(map);
      const writes: Write[] = entries.length
        ? [{ op: 'set', key, value: this.codec.encode(map), ttlMs: this.keep(entries) }]
        : [{ op: 'del', key }, { op: 'unindex', key: this.indexOf(key), member: topic }];
      return { writes, result: { entry, entries } };
    });
    if (removed && removed.entries.length === 0) await this.store.unindex(this.index, topic); // an entry of before the partitions
    return removed;
  }

  /** Who is on the topic now (entries past their time-out are not). */
  async list(topic: string): Promise<E[]> {
    const map = this.codec.decode(await this.store.get(this.keyOf(topic))) ?? {};
    return Object.values(this.live(map, this.clock.now()));
  }

  /** How many clients, and how many distinct identities, are on the topic. */
  async stats(topic: string): Promise<PresenceStats> {
    return count(await this.list(topic));
  }

  /** Removes the entries that timed out, on every topic due; returns what left each topic. */
  async sweep(): Promise<Swept<E>[]> {
    const now = this.clock.now();
    const out: Swept<E>[] = [];
    const parts = await Promise.all(this.indexes.map((k) => this.store.indexRange(k, { max: now - this.timeoutMs })));
    // due first, as one index would order them
    const due = parts.flatMap((entries, i) => entries.map((e) => ({ ...e, i })));
    due.sort((a, b) => a.score - b.score || Buffer.compare(Buffer.from(a.member), Buffer.from(b.member)) || a.i - b.i);
    {
      for (const { member: topic, i } of due) {
        const key = this.keyOf(topic);
        const index = this.indexOf(key);
        const swept = await this.store.update([key], ([cur]) => {
          const map = { ...this.codec.decode(cur) };
          const removed: E[] = [];
          for (const [id, p] of Object.entries(map)) if (this.expired(p, now)) (removed.push(p), delete map[id]);
          const left = Object.values(map);
          const writes: Write[] = left.length
            ? [{ op: 'set', key, value: this.codec.encode(map) }, { op: 'index', key: index, member: topic, score: this.due(left) }]
            : [{ op: 'del', key }, { op: 'unindex', key: index, member: topic }];
          return { writes, result: { topic, removed, left } };
        });
        // a topic of the global index: now in its partition's (or gone)
        if (i === 0) await this.store.unindex(this.index, topic);
        if (swept.removed.length && !out.some((o) => o.topic === topic)) out.push(swept);
      }
    }
    return out;
  }

  /** The index of the partition of a topic's key. */
  private indexOf(key: string): string {
    return partitionKeyFor(this.index, key);
  }

  private expired(p: PresenceEntry, now: number): boolean {
    return p.seen <= now - (p.ttl ?? this.timeoutMs);
  }

  private live(map: Record<string, E>, now: number): Record<string, E> {
    const out: Record<string, E> = {};
    for (const [id, p] of Object.entries(map)) if (!this.expired(p, now)) out[id] = p;
    return out;
  }

  /** The index score: the topic is due for the sweep (score <= now - timeout) once its first entry expires. */
  private due(entries: PresenceEntry[]): number {
    return Math.min(...entries.map((p) => p.seen + (p.ttl ?? this.timeoutMs) - this.timeoutMs));
  }

  /** How long the topic's value is kept: four of its longest time-out. */
  private keep(entries: PresenceEntry[]): number {
    return 4 * Math.max(this.timeoutMs, ...entries.map((p) => p.ttl ?? 0));
  }
}

/** Clients and distinct identities among entries. */
export function count(entries: readonly PresenceEntry[]): PresenceStats {
  return { clients: entries.length, users: new Set(entries.map((e) => e.user)).size };
}
