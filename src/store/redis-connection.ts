import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

/**
 * The one place the hub opens a Redis connection: the Store's command and subscriber connections,
 * the trading queue's BullMQ queue/worker/events connections and its subscriber all come from
 * `redisConnection`, so each of them speaks Sentinel when REDIS_SENTINELS is set and follows a
 * failover by itself (ioredis asks the Sentinels for the current primary on every reconnect), and
 * each is an ioredis Cluster client when REDIS_CLUSTER_NODES is set (it follows MOVED/ASK, a
 * failover and slots moving by itself; the subscriber uses sharded pub/sub, one connection per
 * master, resubscribed when slots move).
 */

export interface SentinelAddress {
  host: string;
  port: number;
}

/**
 * Where Redis is: a URL, or Sentinels and a master name, or the seed nodes of a Redis Cluster (the
 * URL then only gives the password and, without a cluster, the db).
 */
export interface RedisTarget {
  url?: string | undefined;
  sentinels?: SentinelAddress[] | undefined;
  name?: string | undefined;
  cluster?: SentinelAddress[] | undefined;
}

/** A connection the hub opens: one server (or a Sentinel-managed primary), or a whole cluster. */
export type RedisClient = Redis | Cluster;

export const isCluster = (c: RedisClient): c is Cluster => (c as { isCluster?: boolean }).isCluster === true;

/**
 * What the connection is for.
 * - `command`: the Store's commands; each command fails after `commandTimeoutMs` (503 store_unavailable).
 * - `subscriber`: pub/sub; reconnects and resubscribes by itself.
 * - `blocking`: BullMQ workers and events (blocking reads): waits for Redis, never times out a command.
 * - `queue`: BullMQ's queue commands: fail fast, the caller falls back.
 */
export type ConnectionRole = 'command' | 'subscriber' | 'blocking' | 'queue';

export const CONNECT_TIMEOUT_MS = 2000;
/** How often a cluster subscriber reads the slots (a moved slot is subscribed again on its new master), ms. */
export const SUBSCRIBER_SLOTS_REFRESH_MS = 1000;
/** Longest pause between reconnect attempts, ms. */
export const MAX_RECONNECT_DELAY_MS = 500;

/** The target the configuration names, or undefined when the hub runs on LMDB. */
export function redisTarget(cfg: {
  REDIS_URL?: string | undefined;
  REDIS_SENTINELS?: SentinelAddress[] | undefined;
  REDIS_SENTINEL_NAME?: string | undefined;
  REDIS_CLUSTER_NODES?: SentinelAddress[] | undefined;
}): RedisTarget | undefined {
  if (cfg.REDIS_CLUSTER_NODES?.length) return { url: cfg.REDIS_URL, cluster: cfg.REDIS_CLUSTER_NODES };
  if (cfg.REDIS_SENTINELS?.length) return { url: cfg.REDIS_URL, sentinels: cfg.REDIS_SENTINELS, name: cfg.REDIS_SENTINEL_NAME };
  if (cfg.REDIS_URL) return { url: cfg.REDIS_URL };
  return undefined;
}

/** The target for messages: the URL without its password, or the Sentinels and the name. */
export function describeTarget(t: RedisTarget): string {
  if (t.cluster?.length) return `Redis Cluster ${t.cluster.map((s) => `${s.host}:${s.port}`).join(',')}`;
  if (t.sentinels?.length) return `Sentinels ${t.sentinels.map((s) => `${s.host}:${s.port}`).join(',')} (master ${t.name ?? '?'})`;
  try {
    const u = new URL(t.url ?? '');
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(invalid url)';
  }
}

function credentials(url: string | undefined): Pick<RedisOptions, 'username' | 'password' | 'db'> {
  if (!url) return {};
  const u = new URL(url);
  const out: Pick<RedisOptions, 'username' | 'password' | 'db'> = {};
  if (u.username) out.username = decodeURIComponent(u.username);
  if (u.password) out.password = decodeURIComponent(u.password);
  const db = Number(u.pathname.replace(/^\//, ''));
  if (u.pathname.length > 1 && Number.isInteger(db)) out.db = db;
  return out;
}

function roleOptions(role: ConnectionRole, commandTimeoutMs: number): RedisOptions {
  const base: RedisOptions = {
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(times * 50, MAX_RECONNECT_DELAY_MS),
    // a write that reaches a primary demoted by a failover: reconnect (to the new primary) and resend
    reconnectOnError: (err) => (/^(READONLY|LOADING|MASTERDOWN)/.test(err.message) ? 2 : false),
  };
  switch (role) {
    case 'command':
      return { ...base, lazyConnect: true, maxRetriesPerRequest: 2, commandTimeout: commandTimeoutMs };
    case 'subscriber':
      return { ...base, lazyConnect: true, maxRetriesPerRequest: 2 };
    case 'blocking':
      return { ...base, maxRetriesPerRequest: null };
    case 'queue':
      return { ...base, maxRetriesPerRequest: 1 };
  }
}

/** Opens (or prepares, for `command` and `subscriber`: lazyConnect) one connection for `role`. */
export function redisConnection(target: RedisTarget, role: ConnectionRole, opts: { commandTimeoutMs?: number; extra?: RedisOptions } = {}): RedisClient {
  const options = { ...roleOptions(role, opts.commandTimeoutMs ?? 3000), ...opts.extra };
  if (target.cluster?.length) return clusterConnection(target, role, options);
  if (target.sentinels?.length) {
    return new Redis({
      ...options,
      ...credentials(target.url),
      sentinels: target.sentinels,
      name: target.name ?? 'mymaster',
      sentinelRetryStrategy: (times) => Math.min(times * 100, 1000),
      // not ioredis's failoverDetector: under load it left a hub's connection closed for good after a
      // failover ("Connection is closed." on every command for minutes; test/ha/failover-writes.test.ts)
      failoverDetector: false,
    });
  }
  if (!target.url) throw new TypeError('a Redis target needs a url or sentinels');
  return new Redis(target.url, options);
}

/**
 * A Redis Cluster client for `role`: the role's options go to every node connection; the client
 * reads and writes on masters only, retries a command while a failover or a slot move is under way
 * (CLUSTERDOWN, TRYAGAIN, MOVED/ASK) and, for the subscriber, uses sharded pub/sub.
 */
function clusterConnection(target: RedisTarget, role: ConnectionRole, options: RedisOptions): Cluster {
  // no auto-pipelining on a cluster: ioredis groups a custom command (the Store's apply script) by the
  // slot of its first argument, the key count, not of its keys, and then refuses the batch when its
  // scripts' keys lie on different masters ("same slots allocation group")
  const { lazyConnect, enableAutoPipelining: _batched, retryStrategy: _nodeRetry, ...node } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions: { ...node, ...credentials(target.url), db: 0 },
    lazyConnect: lazyConnect ?? false,
    enableAutoPipelining: false,
    scaleReads: 'master',
    maxRedirections: 16,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    retryDelayOnMoved: 0,
    slotsRefreshTimeout: CONNECT_TIMEOUT_MS,
    clusterRetryStrategy: (times) => Math.min(times * 50, MAX_RECONNECT_DELAY_MS),
    shardedSubscribers: role === 'subscriber',
    // when a slot moves, Redis drops the shard channels of that slot from its subscribers without a
    // word: the subscriber reads the slots every second and subscribes again on the new owner
    ...(role === 'subscriber' ? { slotsRefreshInterval: SUBSCRIBER_SLOTS_REFRESH_MS } : {}),
  };
  return new Cluster(target.cluster!, clusterOptions);
}
