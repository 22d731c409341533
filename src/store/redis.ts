import type { Cluster } from 'ioredis';
import type { DrawOptions, Drawing, IndexEntry, Json, RangeOptions, SetOptions, Store, StoreState, Unsubscribe, UpdateFn, UpdatePlan } from './port.js';
import { parseInfo } from './redis-startup.js';
import { checkCap, checkInt, checkDraw, checkKey, checkPlan, checkScore, checkTtl, encodeJson, touchedKeys } from './checks.js';
import { checkUpdateKeys, keySlot, partitionCheckFromEnv, partitionOf, partitionTag, PartitionError, type PartitionCheck } from './partition.js';
import { APPLY_LUA, applyCall, prepareApply, type RedisKeys } from './redis-apply.js';
import { RedisPubSub } from './redis-pubsub.js';
import { describeTarget, isCluster, redisConnection, type RedisClient, type RedisTarget } from './redis-connection.js';
import { bounded, storeUnavailable, waitReplicas } from './redis-unavailable.js';

/**
 * The shared Store: Redis through ioredis, for any number of hub processes.
 *
 * Key layout on one Redis (every key and channel starts with `prefix`; unchanged since before the
 * partitioned keyspace, so existing data stays readable and no migration is needed):
 *   `${prefix}v:${key}`  value, a JSON string (PX for a TTL)
 *   `${prefix}l:${key}`  capped list of JSON strings (RPUSH + LTRIM)
 *   `${prefix}z:${key}`  ordered index (sorted set; ties ordered by member natively)
 *   `${prefix}${channel}` pub/sub channel (redis-pubsub.ts)
 *
 * On a Redis Cluster (REDIS_CLUSTER_NODES) every Redis key of a Store key carries the hash tag of
 * the key's partition (partition.ts), so a key's value, list and index, and every key of one
 * aggregate, share a slot: `${prefix}{${tag}}v:${key}`, `...l:`, `...z:`; a channel is
 * `${prefix}{${tag}}c:${channel}` in the partition of its name (sharded pub/sub).
 * An update whose keys span partitions is refused (PartitionError) before Redis would (CROSSSLOT);
 * with REDIS_MIN_REPLICAS the WAIT goes to the master that took the write.
 *
 * update() is optimistic: MGET the keys, run fn, then one Lua script (redis-apply.ts) applies the
 * writes only if every key still holds exactly the string that was read (or is still absent);
 * otherwise re-read and re-run fn after a short jittered pause. Within one instance, updates sharing
 * a read key are queued locally, so conflicts only arise between processes. An `incr` write is not
 * a read, so counting never conflicts; nor does drawing a number: the script raises the counter and
 * fills the number into the keys, members and values of the writes (see redis-apply.ts).
 */

export interface RedisStoreOptions {
  /** A redis:// URL (or `target` for Sentinel). */
  url?: string;
  target?: RedisTarget;
  prefix: string;
  /** Replicas that must acknowledge every write (WAIT) before it is acknowledged; default 0. */
  minReplicas?: number | undefined;
  /** How long WAIT waits for them, ms; default 1000. */
  waitTimeoutMs?: number | undefined;
  /** Longest one Store operation waits on Redis before store_unavailable, ms; default 3000. */
  opTimeoutMs?: number | undefined;
  /** Attempts of an update() under contention before it gives up; default 100. */
  maxUpdateAttempts?: number;
  /** Refuse an update spanning aggregates (partition.ts); default STORE_PARTITION_CHECK=1 in the environment. */
  partitionCheck?: boolean;
}

export interface RedisStoreStats {
  /** update() calls that committed. */
  updates: number;
  /** Extra attempts caused by a concurrent writer. */
  retries: number;
}

const PING_TIMEOUT_MS = 2000;
const CONNECT_TIMEOUT_MS = 2000;
const QUIT_TIMEOUT_MS = 2000;
const MAX_BACKOFF_MS = 50;

const parse = <T>(raw: string | null): T | undefined => (raw === null ? undefined : (JSON.parse(raw) as T));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

async function quit(conn: RedisClient): Promise<void> {
  try {
    await withTimeout(conn.quit(), QUIT_TIMEOUT_MS, 'quit timed out');
  } catch {
    conn.disconnect();
  }
}

export async function openRedisStore(opts: RedisStoreOptions): Promise<RedisStore> {
  const { prefix } = opts;
  if (typeof prefix !== 'string' || prefix.length === 0) throw new TypeError('prefix must be a non-empty string');
  const target = opts.target ?? { url: opts.url };
  if (target.cluster?.length && /[{}]/.test(prefix)) throw new TypeError('on a Redis Cluster the prefix must not hold { or } (the partition hash tag follows it)');
  const opTimeoutMs = opts.opTimeoutMs ?? 3000;
  // a command alone may take most of the operation's budget; the operation as a whole is bounded by op()
  const commandTimeoutMs = Math.max(50, opTimeoutMs - 100);
  const store = new RedisStore(
    redisConnection(target, 'command', { commandTimeoutMs, extra: { enableAutoPipelining: true } }),
    redisConnection(target, 'subscriber'),
    prefix,
    opts.maxUpdateAttempts ?? 100,
    { minReplicas: opts.minReplicas ?? 0, waitTimeoutMs: opts.waitTimeoutMs ?? 1000, opTimeoutMs },
    opts.partitionCheck ?? partitionCheckFromEnv(),
  );
  await store.connect(describeTarget(target));
  return store;
}

export class RedisStore implements Store, RedisKeys {
  readonly kind = 'redis';
  private closed = false;
  private lastError: Error | undefined;
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly counts: RedisStoreStats = { updates: 0, retries: 0 };
  private readonly pubsub: RedisPubSub;
  /** Per read key, the last queued update of this instance that reads it (FIFO per key). */
  private readonly keyTails = new Map<string, Promise<void>>();

  /** On a Redis Cluster: the partitioned layout. */
  readonly cluster: boolean;
  private readonly check: PartitionCheck;

  constructor(
    private readonly cmd: RedisClient,
    private readonly sub: RedisClient,
    private readonly prefix: string,
    private readonly maxAttempts: number,
    private readonly durability: { minReplicas: number; waitTimeoutMs: number; opTimeoutMs: number } = { minReplicas: 0, waitTimeoutMs: 1000, opTimeoutMs: 3000 },
    partitionCheck = false,
  ) {
    this.cluster = isCluster(cmd);
    this.check = partitionCheck ? 'aggregate' : this.cluster ? 'partition' : 'off';
    const onError = (err: Error) => {
      this.lastError = err;
    };
    cmd.on('error', onError);
    sub.on('error', onError);
    cmd.on('ready', () => {
      this.lastError = undefined;
    });
    cmd.defineCommand('maruApply', { lua: APPLY_LUA });
    this.pubsub = new RedisPubSub(sub, () => this.closed, (p) => this.track(p), this.cluster);
    if (this.cluster) {
      // the command connection met a MOVED (a slot moved): the subscriber follows at once
      (cmd as Cluster).on('refresh', () => {
        if (!this.closed) (sub as Cluster).refreshSlotsCache();
      });
    }
  }

  /** Where the server is (describeTarget), once connected. */
  private where = '';

  /** Connects both connections and checks the server answers (openRedisStore calls it). */
  async connect(where: string): Promise<void> {
    this.where = where;
    try {
      await withTimeout(Promise.all([this.cmd.connect(), this.sub.connect()]), CONNECT_TIMEOUT_MS * 2, 'redis connect timed out');
      await this.ping();
      if (this.cluster) await withTimeout(this.clusterReady(), CONNECT_TIMEOUT_MS * 2, 'the cluster did not give its slots in time');
    } catch (err) {
      this.cmd.disconnect();
      this.sub.disconnect();
      throw new Error(`cannot reach redis at ${where}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** The client knows which master serves each slot (a cluster's slots, read at connect). */
  private async clusterReady(): Promise<void> {
    const c = this.cmd as Cluster;
    while (c.slots.length < 16384 || c.slots.some((s) => s === undefined)) await sleep(20);
  }

  head(space: 'v' | 'l' | 'z', placement: string): string {
    return this.cluster ? `${this.prefix}{${partitionTag(partitionOf(placement))}}${space}:` : `${this.prefix}${space}:`;
  }
  vk(key: string): string {
    return this.head('v', checkKey(key)) + key;
  }
  lk(key: string): string {
    return this.head('l', checkKey(key)) + key;
  }
  zk(key: string): string {
    return this.head('z', checkKey(key)) + key;
  }
  /**
   * A Store channel's Redis channel: on a cluster every channel is a sharded one (SPUBLISH,
   * SSUBSCRIBE) in the partition of its name, so its publisher and its subscribers meet on one
   * master, in order (a plain PUBLISH reaches the other nodes later, across the cluster bus).
   */
  channel(name: string): { name: string; sharded: boolean } {
    checkKey(name, 'channel');
    if (this.cluster) return { name: `${this.prefix}{${partitionTag(partitionOf(name))}}c:${name}`, sharded: true };
    return { name: `${this.prefix}${name}`, sharded: false };
  }

  /**
   * The server's replication role and replicas online (INFO replication), its persistence (CONFIG
   * GET appendonly appendfsync, or INFO persistence where CONFIG is renamed away) and the replicas
   * each write waits for (REDIS_MIN_REPLICAS).
   */
  async describe(): Promise<StoreState> {
    if (this.cluster) return this.describeCluster();
    return this.op(async () => {
      const replication = parseInfo(await (this.cmd as import('ioredis').Redis).info('replication'));
      let replicas = 0;
      for (const [k, v] of replication) if (/^slave\d+$/.test(k) && /state=online/.test(v)) replicas++;
      let appendonly: string | undefined;
      let appendfsync: string | undefined;
      try {
        const flat = (await this.cmd.call('CONFIG', 'GET', 'appendonly', 'appendfsync')) as string[];
        for (let i = 0; i + 1 < flat.length; i += 2) {
          if (flat[i] === 'appendonly') appendonly = String(flat[i + 1]);
          if (flat[i] === 'appendfsync') appendfsync = String(flat[i + 1]);
        }
      } catch {
        const enabled = parseInfo(await this.cmd.info('persistence')).get('aof_enabled');
        appendonly = enabled === undefined ? undefined : enabled === '1' ? 'yes' : 'no';
      }
      const { minReplicas } = this.durability;
      const aof =
        appendonly === 'yes'
          ? `AOF on (appendfsync ${appendfsync ?? 'unknown'})`
          : appendonly === 'no'
            ? 'AOF off: a crash of Redis loses acknowledged writes'
            : 'the server does not say whether AOF is on';
      const wait = minReplicas > 0 ? `; each write waits for ${minReplicas} replica(s)` : '';
      const details: Record<string, string> = { address: this.where, prefix: this.prefix };
      if (appendonly !== undefined) details.appendonly = appendonly;
      if (appendfsync !== undefined) details.appendfsync = appendfsync;
      return { kind: this.kind, role: replication.get('role') ?? 'unknown', replicas, min_replicas: minReplicas, durability: aof + wait, details };
    });
  }

  /**
   * A cluster as the console shows it: role `cluster`, the fewest replicas any master has online,
   * each master's address and AOF setting.
   */
  private describeCluster(): Promise<StoreState> {
    return this.op(async () => {
      const masters = (this.cmd as Cluster).nodes('master');
      const details: Record<string, string> = { address: this.where, prefix: this.prefix, masters: String(masters.length) };
      let fewest = Number.POSITIVE_INFINITY;
      let aofOff = 0;
      for (const m of masters) {
        const replication = parseInfo(await m.info('replication'));
        let online = 0;
        for (const [k, v] of replication) if (/^slave\d+$/.test(k) && /state=online/.test(v)) online++;
        fewest = Math.min(fewest, online);
        const aof = parseInfo(await m.info('persistence')).get('aof_enabled');
        if (aof !== '1') aofOff++;
        details[`master ${m.options.host}:${m.options.port}`] = `${online} replica(s), AOF ${aof === '1' ? 'on' : 'off'}`;
      }
      const { minReplicas } = this.durability;
      const aof = aofOff === 0 ? 'AOF on every master' : `AOF off on ${aofOff} master(s): a crash of one loses acknowledged writes`;
      const wait = minReplicas > 0 ? `; each write waits for ${minReplicas} replica(s) of its master` : '';
      return { kind: this.kind, role: 'cluster', replicas: Number.isFinite(fewest) ? fewest : 0, min_replicas: minReplicas, durability: aof + wait, details };
    });
  }

  /** The command connection (start-up checks read the server's settings through it). */
  get commands(): RedisClient {
    return this.cmd;
  }

  stats(): RedisStoreStats {
    return { ...this.counts };
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    const done = () => this.inflight.delete(p);
    p.then(done, done);
    return p;
  }

  /**
   * Runs one operation, tracked so that close() waits for it, within REDIS_OP_TIMEOUT_MS; Redis out
   * of reach (or too few replicas for a write) is store_unavailable (redis-unavailable.ts).
   */
  private op<T>(body: () => Promise<T>): Promise<T> {
    try {
      if (this.closed) throw new Error('store is closed');
      return this.track(bounded(body(), this.durability.opTimeoutMs));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Updates of this instance that read a common key run one after the other (FIFO per key), so
   * optimistic retries only come from other processes; updates on disjoint keys run in parallel.
   */
  private async withKeys<T>(keys: string[], body: () => Promise<T>): Promise<T> {
    const unique = [...new Set(keys)];
    const before = new Set<Promise<void>>();
    for (const k of unique) {
      const tail = this.keyTails.get(k);
      if (tail) before.add(tail);
    }
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    for (const k of unique) this.keyTails.set(k, mine);
    try {
      if (before.size > 0) await Promise.all(before);
      return await body();
    } finally {
      release();
      for (const k of unique) if (this.keyTails.get(k) === mine) this.keyTails.delete(k);
    }
  }

  private async runUpdate<R>(keys: string[], fn: UpdateFn<R>, draw: string[] | undefined): Promise<R | Drawing<R>> {
    const readKeys = keys.map((k) => this.vk(k));
    const drawKeys = draw?.map((k) => this.vk(k));
    // the keys read and drawn from, before they are read (on a cluster Redis would refuse the MGET)
    checkUpdateKeys([...keys, ...(draw ?? [])], this.check);
    for (let attempt = 1; ; attempt++) {
      const raws = readKeys.length > 0 ? await this.cmd.mget(...readKeys) : [];
      let plan: UpdatePlan<R>;
      let partition: number | undefined;
      try {
        plan = checkPlan(fn(raws.map((r) => parse<Json>(r))));
        partition = checkUpdateKeys(touchedKeys(keys, draw, plan.writes), this.check);
      } catch (err) {
        if (err instanceof PartitionError) throw err;
        // a refusal is an answer read from the state: give it only once replicas hold that state
        await this.confirmed(keys[0]);
        throw err;
      }
      const draws = drawKeys?.length;
      const prepared = plan.writes.map((w) => prepareApply(w, this, draws));
      if (prepared.length === 0 && !draws) {
        await this.confirmed(keys[0]);
        this.counts.updates++;
        return draws === undefined ? plan.result : { result: plan.result, drawn: [] };
      }
      const call = applyCall(readKeys, raws, drawKeys ?? [], prepared);
      const applied = await this.cmd.maruApply(...call);
      if (applied !== 0) {
        await this.replicated(undefined, partition === undefined ? undefined : call[1]);
        this.counts.updates++;
        return draws === undefined ? plan.result : { result: plan.result, drawn: applied.slice(1) };
      }
      if (attempt >= this.maxAttempts) {
        throw new Error(`update gave up after ${attempt} attempts: keys kept changing (${keys.join(', ')})`);
      }
      this.counts.retries++;
      await sleep(Math.random() * Math.min(2 ** (attempt - 1), MAX_BACKOFF_MS));
    }
  }

  /**
   * With REDIS_MIN_REPLICAS > 0, a write is acknowledged only once that many replicas hold it (WAIT
   * on the command connection covers every write it sent before); fewer is store_unavailable. On a
   * cluster the WAIT goes to the master serving `redisKey`'s slot: the connection the write went on.
   */
  private async replicated<T>(value?: T, redisKey?: string): Promise<T> {
    const { minReplicas, waitTimeoutMs } = this.durability;
    if (minReplicas > 0) await waitReplicas(this.cluster ? this.masterOf(redisKey) : (this.cmd as import('ioredis').Redis), minReplicas, waitTimeoutMs);
    return value as T;
  }

  /** The cluster's connection to the master serving `redisKey`'s slot. */
  private masterOf(redisKey: string | undefined): import('ioredis').Redis {
    if (redisKey === undefined) throw new Error('a write on a cluster names the key it went to');
    const c = this.cmd as Cluster;
    const node = c.slots[keySlot(redisKey)]?.[0];
    const master = node === undefined ? undefined : c.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === node);
    if (!master) throw storeUnavailable(`no master serves the slot of ${redisKey} now`);
    return master;
  }

  /**
   * With REDIS_MIN_REPLICAS > 0, an update that writes nothing still answers from what it read
   * ("exists", a replayed answer, a refusal), and that state may hold a write that was answered
   * store_unavailable because no replica acknowledged it, which a failover would drop. A fence
   * write after the read, then WAIT: replicas acknowledge the replication stream in order, so
   * holding the fence means holding everything the read saw. On a cluster the fence is the one of
   * the partition read (`key`, a Store key), on its master.
   */
  private async confirmed(key: string | undefined): Promise<void> {
    if (this.durability.minReplicas === 0) return;
    const fence = this.cluster ? `${this.head('v', key ?? '')}fence` : `${this.prefix}fence`;
    await this.cmd.incr(fence);
    await this.replicated(undefined, fence);
  }

  // ---- the Store port ----

  get<T extends Json = Json>(key: string): Promise<T | undefined> {
    return this.op(async () => parse<T>(await this.cmd.get(this.vk(key))));
  }

  getMany<T extends Json = Json>(keys: string[]): Promise<(T | undefined)[]> {
    return this.op(async () => {
      if (keys.length === 0) return [];
      const full = keys.map((k) => this.vk(k));
      if (!this.cluster) return (await this.cmd.mget(...full)).map((r) => parse<T>(r));
      // one MGET per slot, sent together
      const bySlot = new Map<number, number[]>();
      full.forEach((k, i) => {
        const slot = keySlot(k);
        const at = bySlot.get(slot);
        if (at) at.push(i);
        else bySlot.set(slot, [i]);
      });
      const out: (T | undefined)[] = new Array(keys.length);
      await Promise.all(
        [...bySlot.values()].map(async (idx) => {
          const raws = await this.cmd.mget(...idx.map((i) => full[i]!));
          idx.forEach((i, j) => (out[i] = parse<T>(raws[j] ?? null)));
        }),
      );
      return out;
    });
  }

  set(key: string, value: Json, opts?: SetOptions): Promise<boolean> {
    return this.op(async () => {
      const args: (string | number)[] = [this.vk(key), encodeJson(value)];
      const ttl = checkTtl(opts?.ttlMs);
      if (ttl !== undefined) args.push('PX', ttl);
      if (opts?.ifAbsent === true) args.push('NX');
      return this.replicated((await this.cmd.call('SET', ...args)) === 'OK', args[0] as string);
    });
  }

  del(key: string): Promise<boolean> {
    return this.op(async () => this.replicated((await this.cmd.del(this.vk(key), this.lk(key), this.zk(key))) > 0, this.vk(key)));
  }

  update<R>(keys: string[], fn: UpdateFn<R>): Promise<R>;
  update<R>(keys: string[], fn: UpdateFn<R>, opts: DrawOptions): Promise<Drawing<R>>;
  update<R>(keys: string[], fn: UpdateFn<R>, opts?: DrawOptions): Promise<R | Drawing<R>> {
    return this.op(async () => {
      keys.forEach((k) => checkKey(k));
      const draw = checkDraw(opts);
      return this.withKeys(keys, () => this.runUpdate(keys, fn, draw));
    });
  }

  incr(key: string, by = 1): Promise<number> {
    return this.op(async () => this.replicated(await this.cmd.incrby(this.vk(key), checkInt(by, 'by')), this.vk(key)));
  }

  push(key: string, value: Json, cap: number): Promise<number> {
    return this.op(async () => {
      const json = encodeJson(value);
      checkCap(cap);
      const res = await this.cmd.multi().rpush(this.lk(key), json).ltrim(this.lk(key), -cap, -1).exec();
      const pushed = res?.[0];
      if (!pushed) throw new Error('push transaction aborted');
      if (pushed[0]) throw pushed[0];
      return this.replicated(Math.min(pushed[1] as number, cap), this.lk(key));
    });
  }

  range<T extends Json = Json>(key: string, start = 0, stop = -1): Promise<T[]> {
    return this.op(async () => {
      checkInt(start, 'start');
      checkInt(stop, 'stop');
      const raws = await this.cmd.lrange(this.lk(key), start, stop);
      return raws.map((r) => JSON.parse(r) as T);
    });
  }

  length(key: string): Promise<number> {
    return this.op(async () => this.cmd.llen(this.lk(key)));
  }

  index(key: string, member: string, score: number): Promise<void> {
    return this.op(async () => {
      await this.cmd.zadd(this.zk(key), String(checkScore(score)), checkKey(member, 'member'));
      await this.replicated(undefined, this.zk(key));
    });
  }

  unindex(key: string, member: string): Promise<boolean> {
    return this.op(async () => this.replicated((await this.cmd.zrem(this.zk(key), checkKey(member, 'member'))) > 0, this.zk(key)));
  }

  indexRange(key: string, opts: RangeOptions = {}): Promise<IndexEntry[]> {
    return this.op(async () => {
      const { min, max, reverse = false } = opts;
      const lo = min === undefined ? '-inf' : String(checkScore(min));
      const hi = max === undefined ? '+inf' : String(checkScore(max));
      const offset = opts.offset === undefined ? 0 : checkInt(opts.offset, 'offset');
      const limit = opts.limit === undefined ? undefined : checkInt(opts.limit, 'limit');
      if (offset < 0) throw new RangeError('offset must not be negative');
      if (limit !== undefined && limit < 0) throw new RangeError('limit must not be negative');
      if (limit === 0 || (min !== undefined && max !== undefined && min > max)) return [];
      const args: (string | number)[] = reverse ? [this.zk(key), hi, lo, 'WITHSCORES'] : [this.zk(key), lo, hi, 'WITHSCORES'];
      if (offset > 0 || limit !== undefined) args.push('LIMIT', offset, limit ?? -1);
      const flat = (await this.cmd.call(reverse ? 'ZREVRANGEBYSCORE' : 'ZRANGEBYSCORE', ...args)) as string[];
      const out: IndexEntry[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) out.push({ member: flat[i]!, score: Number(flat[i + 1]) });
      return out;
    });
  }

  indexScore(key: string, member: string): Promise<number | undefined> {
    return this.op(async () => {
      const raw = await this.cmd.zscore(this.zk(key), checkKey(member, 'member'));
      return raw === null ? undefined : Number(raw);
    });
  }

  indexCount(key: string): Promise<number> {
    return this.op(async () => this.cmd.zcard(this.zk(key)));
  }

  publish(channel: string, message: string): Promise<void> {
    return this.op(async () => {
      const ch = this.channel(channel);
      if (ch.sharded) await this.cmd.call('SPUBLISH', ch.name, message);
      else await this.cmd.publish(ch.name, message);
    });
  }

  subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe> {
    return this.op(async () => {
      const ch = this.channel(channel);
      return this.pubsub.subscribe(ch.name, handler, ch.sharded);
    });
  }

  async ping(): Promise<void> {
    if (this.closed) throw new Error('store is closed');
    try {
      const pinged: Promise<unknown> = this.cluster ? Promise.all((this.cmd as Cluster).nodes('master').map((n) => n.ping())) : this.cmd.ping();
      await withTimeout(pinged, PING_TIMEOUT_MS, 'redis did not answer PING in time');
    } catch (err) {
      const cause = this.lastError ? ` (last connection error: ${this.lastError.message})` : '';
      throw new Error(`redis unavailable: ${(err as Error).message}${cause}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.inflight]);
    this.pubsub.clear();
    await Promise.all([quit(this.cmd), quit(this.sub)]);
  }
}
