/**
 * The Store port: the only way services keep shared state.
 *
 * Two adapters implement it (LMDB, embedded and durable, one process; Redis through ioredis, shared
 * by any number of hub processes) and both pass the same contract suite (test/store/contract.ts).
 *
 * Keys are plain strings chosen by services ("reward:member:m_1"); the adapter adds its own
 * namespace. Values are JSON-serialisable data. Lists are capped and ordered by insertion; indexes
 * are ordered by a numeric score, ties broken by member (byte order). One key can name a value, a
 * list and an index at once, independently; `del` removes all three.
 *
 * Every key belongs to an aggregate and lives in one of a fixed number of partitions (partition.ts,
 * docs/partitions.md): an atomic update stays inside one partition (on a Redis Cluster, always; with
 * the partition check on, inside one aggregate, on both adapters). Channels are placed by the same
 * rule: `bus:{#17}` lives in partition 17, `console` in the partition of its name (on a cluster every
 * channel is a sharded one, its publisher and subscribers on one master).
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface SetOptions {
  /** Time to live in milliseconds; the key reads as absent afterwards. */
  ttlMs?: number;
  /** Only write when the key is absent (or expired). */
  ifAbsent?: boolean;
}

export interface RangeOptions {
  /** Inclusive score bounds; default all. */
  min?: number;
  max?: number;
  /** Highest score first. */
  reverse?: boolean;
  /** At most this many entries (after offset). */
  limit?: number;
  offset?: number;
}

export interface IndexEntry {
  member: string;
  score: number;
}

/** One write inside an atomic update. Applied in order, all or nothing. */
export type Write =
  | { op: 'set'; key: string; value: Json; ttlMs?: number }
  | { op: 'del'; key: string }
  /** Append to a capped list; the oldest entries beyond `cap` are dropped. */
  | { op: 'push'; key: string; value: Json; cap: number }
  /** Add or move a member of an ordered index (the score may be a drawn number: see DrawOptions). */
  | { op: 'index'; key: string; member: string; score: number | Drawn }
  | { op: 'unindex'; key: string; member: string }
  /**
   * Add `by` to the integer value at `key` (absent counts as 0; a TTL is kept) without reading it
   * in the update: concurrent updates that only count on a key never conflict over it (the Redis
   * adapter retries nothing for it). A value that is not an integer fails the whole update.
   */
  | { op: 'incr'; key: string; by: number }
  /**
   * Publish `message` on the channel `key` once the update's writes land, in the same atomic step
   * (only an update that commits publishes). A channel is placed by the same rule as a key: on a
   * cluster it must be in the update's partition (a partition-tagged channel, `bus:{#17}`: see
   * partition.ts). Placeholders of drawn numbers are not filled in.
   */
  | { op: 'publish'; key: string; message: string };

export interface UpdatePlan<R> {
  writes: Write[];
  result: R;
}

/**
 * A placeholder for a number drawn by the update (see DrawOptions): `drawn(i)` stands for the number
 * drawn from the i-th counter of `draw`, `drawn(i, width)` for it written with at least `width`
 * digits (zero-padded after any sign, as printf's %0*d).
 */
export type Drawn = `\u0000#${number}\u0000` | `\u0000#${number}.${number}\u0000`;

export function drawn(i: number, width?: number): Drawn {
  if (!Number.isSafeInteger(i) || i < 0) throw new RangeError('drawn: the index must be a non-negative integer');
  if (width === undefined) return `\u0000#${i}\u0000`;
  if (!Number.isSafeInteger(width) || width < 1 || width > 20) throw new RangeError('drawn: the width must be an integer from 1 to 20');
  return `\u0000#${i}.${width}\u0000`;
}

/**
 * Numbers drawn inside the commit of an update, for numbering in commit order without gaps.
 *
 * Each key of `draw` names a counter: when the writes land, its integer value is raised by one
 * (absent counts as 0; a TTL is kept) and the new value is the number drawn; a key listed twice
 * draws two consecutive numbers. The counters are not read by the update, so concurrent updates
 * drawing from one never conflict over it (the Redis adapter retries nothing for it), no two get
 * the same number, and only an update that commits draws one: the numbers follow the commit order
 * without gaps. A counter that is not an integer fails the whole update, nothing written.
 *
 * The draws happen before the writes, which use the numbers through placeholders (`drawn(i)`):
 * inside a key, an index member or any string of a value (object keys included) a placeholder is
 * replaced by the number's digits; a string of a value that is exactly `drawn(i)` (no width)
 * becomes the number itself, and so does an index score given as a placeholder. A placeholder
 * naming no counter of `draw` fails the update; in an update without `draw` it is plain text.
 */
export interface DrawOptions {
  draw: string[];
}

/** What an update with DrawOptions resolves to: fn's result and the numbers drawn, in `draw` order. */
export interface Drawing<R> {
  result: R;
  drawn: number[];
}

/**
 * The body of an atomic read-modify-write. It receives the current values of the keys it asked for
 * (undefined when absent), in the same order, and returns the writes to apply and a result.
 * It must be synchronous and free of side effects: an adapter may call it more than once when a
 * concurrent writer changed one of the keys in between (optimistic concurrency). Throwing aborts
 * the update with nothing written, and the error reaches the caller unchanged.
 */
export type UpdateFn<R> = (current: (Json | undefined)[]) => UpdatePlan<R>;

export type Unsubscribe = () => Promise<void>;

/** What the store is, as the operator console shows it (Store.describe). */
export interface StoreState {
  kind: string;
  /** `embedded` for LMDB; for Redis the server's replication role (`master`, `slave`). */
  role: string;
  /** Replicas the server reports online (LMDB: 0). */
  replicas: number;
  /** Replicas a write waits for before it is acknowledged (REDIS_MIN_REPLICAS; LMDB: 0). */
  min_replicas: number;
  /** How an acknowledged write survives a crash, in words. */
  durability: string;
  /** Where it is (a directory, a Redis address) and what else the adapter reads of it. */
  details: Record<string, string>;
}

export interface Store {
  /** 'lmdb' or 'redis': for logs, /readyz and metrics. */
  readonly kind: string;

  get<T extends Json = Json>(key: string): Promise<T | undefined>;
  getMany<T extends Json = Json>(keys: string[]): Promise<(T | undefined)[]>;
  /** Returns false only when ifAbsent was given and the key already existed. */
  set(key: string, value: Json, opts?: SetOptions): Promise<boolean>;
  /** Removes the key's value, list and index; returns whether any of them existed. */
  del(key: string): Promise<boolean>;

  /**
   * Atomic multi-key read-modify-write: the values read for `keys` are still current when the
   * writes land, and no other writer sees a partial result. Writes may touch keys not in `keys`.
   */
  update<R>(keys: string[], fn: UpdateFn<R>): Promise<R>;
  /** The same, drawing a number from each counter of `opts.draw` inside the commit (DrawOptions). */
  update<R>(keys: string[], fn: UpdateFn<R>, opts: DrawOptions): Promise<Drawing<R>>;

  /**
   * Atomic counter on the key's value (a missing key counts as 0; a TTL is kept). Returns the new
   * value; rejects when `by` or the stored value is not an integer.
   */
  incr(key: string, by?: number): Promise<number>;

  /** Append to a capped list; returns the new length. */
  push(key: string, value: Json, cap: number): Promise<number>;
  /** Entries from `start` to `stop` inclusive (negative counts from the end), oldest first. */
  range<T extends Json = Json>(key: string, start?: number, stop?: number): Promise<T[]>;
  length(key: string): Promise<number>;

  /** Ordered index. */
  index(key: string, member: string, score: number): Promise<void>;
  unindex(key: string, member: string): Promise<boolean>;
  indexRange(key: string, opts?: RangeOptions): Promise<IndexEntry[]>;
  indexScore(key: string, member: string): Promise<number | undefined>;
  indexCount(key: string): Promise<number>;

  /** Pub/sub: with Redis it reaches every process sharing the server; with LMDB this process only. */
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe>;

  /** What the store is now (role, replicas, durability), for the operator console; optional for test stores. */
  describe?(): Promise<StoreState>;

  /** Resolves when the backing store answers; throws otherwise. */
  ping(): Promise<void>;
  /** Waits for pending writes, then releases connections and files. */
  close(): Promise<void>;
}

/** The partition rule of the keyspace (partition.ts), for services naming per-partition keys. */
export { PARTITIONS, PartitionError, aggregateOf, partitionKey, partitionKeyFor, partitionKeys, partitionOf } from './partition.js';
/** A per-partition index read as one (merged.ts). */
export { across, mergedIndexCount, mergedIndexRange, mergedIndexScan, newestAcross, summedIndexCount } from './merged.js';
