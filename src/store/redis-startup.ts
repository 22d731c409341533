import { Redis, type Cluster } from 'ioredis';
import { describeTarget, type RedisTarget } from './redis-connection.js';

/**
 * What the hub checks at start about the Redis it is given, before it answers anyone:
 * - the Sentinels (REDIS_SENTINELS) answer, know the master (REDIS_SENTINEL_NAME) and see it up;
 * - the server it reaches is a primary with at least REDIS_MIN_REPLICAS replicas online;
 * - the server keeps acknowledged writes across a crash (AOF), unless REDIS_DURABILITY=none;
 * - on a Redis Cluster (REDIS_CLUSTER_NODES): every slot is served, every node keeps AOF and every
 *   master has REDIS_MIN_REPLICAS replicas online; a cluster node given as REDIS_URL is refused.
 * A failed check is a StartupRefusal: main.ts prints its message (which names the setting) and
 * exits with code 2.
 */

export class StartupRefusal extends Error {
  constructor(
    /** The setting the operator has to change. */
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'StartupRefusal';
  }
}

export interface RedisStartupReport {
  role: string;
  replicasOnline: number;
  appendonly: boolean | undefined;
  appendfsync: string | undefined;
  /** Said at every start (e.g. REDIS_DURABILITY=none on a Redis without AOF). */
  warnings: string[];
}

const PROBE_TIMEOUT_MS = 1500;

/** key:value lines of an INFO section. */
export function parseInfo(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  return out;
}

function pairs(flat: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (Array.isArray(flat)) for (let i = 0; i + 1 < flat.length; i += 2) out.set(String(flat[i]), String(flat[i + 1]));
  return out;
}

/**
 * Asks every Sentinel about the master. Refuses when none answers (REDIS_SENTINELS), when those
 * that answer do not know the name (REDIS_SENTINEL_NAME), or when they see no primary up.
 */
export async function checkSentinels(target: RedisTarget): Promise<void> {
  const name = target.name ?? '';
  const answers = await Promise.all(
    (target.sentinels ?? []).map(async ({ host, port }) => {
      const c = new Redis({ host, port, lazyConnect: true, connectTimeout: PROBE_TIMEOUT_MS, commandTimeout: PROBE_TIMEOUT_MS, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => undefined);
      try {
        await c.connect();
        return { ok: true as const, master: pairs(await c.call('SENTINEL', 'MASTER', name)) };
      } catch (err) {
        const msg = (err as Error).message;
        return /no such master/i.test(msg) ? { ok: true as const, master: undefined } : { ok: false as const, error: `${host}:${port}: ${msg}` };
      } finally {
        c.disconnect();
      }
    }),
  );
  const answered = answers.filter((a) => a.ok);
  if (answered.length === 0) {
    const why = answers.map((a) => (a.ok ? '' : a.error)).join('; ');
    throw new StartupRefusal('REDIS_SENTINELS', `REDIS_SENTINELS: no Sentinel answered (${why}); check the addresses and that redis-sentinel runs there`);
  }
  const knowing = answered.filter((a) => a.master !== undefined);
  if (knowing.length === 0) {
    throw new StartupRefusal('REDIS_SENTINEL_NAME', `REDIS_SENTINEL_NAME: no Sentinel in REDIS_SENTINELS monitors a master named "${name}"`);
  }
  const up = knowing.some((a) => {
    const flags = (a.master!.get('flags') ?? '').split(',');
    return flags.includes('master') && !flags.some((f) => f === 's_down' || f === 'o_down' || f === 'disconnected');
  });
  if (!up) {
    const seen = knowing.map((a) => `${a.master!.get('ip')}:${a.master!.get('port')} flags ${a.master!.get('flags')}`).join('; ');
    throw new StartupRefusal('REDIS_SENTINELS', `REDIS_SENTINELS: the Sentinels see no primary up for "${name}" (${seen}); start the primary or wait for the failover to finish`);
  }
}

/**
 * Reads the server's replication and persistence. `conn` is a connected command connection (to the
 * primary, through the Sentinels when they are used).
 */
export async function checkRedisServer(
  conn: Redis,
  target: RedisTarget,
  opts: { minReplicas: number; durability: 'none' | undefined },
): Promise<RedisStartupReport> {
  const where = describeTarget(target);
  if (parseInfo(await conn.info('cluster')).get('cluster_enabled') === '1') {
    const setting = target.sentinels?.length ? 'REDIS_SENTINELS' : 'REDIS_URL';
    throw new StartupRefusal(
      'REDIS_CLUSTER_NODES',
      `${setting}: ${where} is a Redis Cluster node; set REDIS_CLUSTER_NODES=host:port,... (the cluster's nodes) instead, so the hub speaks the cluster protocol and partitions its keys`,
    );
  }
  const replication = parseInfo(await conn.info('replication'));
  const role = replication.get('role') ?? 'unknown';
  if (role !== 'master') {
    const setting = target.sentinels?.length ? 'REDIS_SENTINELS' : 'REDIS_URL';
    throw new StartupRefusal(setting, `${setting}: ${where} is a ${role}, not a primary; point the hub at the primary (or at its Sentinels)`);
  }
  let replicasOnline = 0;
  for (const [k, v] of replication) if (/^slave\d+$/.test(k) && /state=online/.test(v)) replicasOnline++;
  if (opts.minReplicas > replicasOnline) {
    throw new StartupRefusal(
      'REDIS_MIN_REPLICAS',
      `REDIS_MIN_REPLICAS=${opts.minReplicas} but ${where} has ${replicasOnline} replica(s) online; add replicas or lower REDIS_MIN_REPLICAS`,
    );
  }

  let appendonly: boolean | undefined;
  let appendfsync: string | undefined;
  try {
    const cfg = pairs(await conn.call('CONFIG', 'GET', 'appendonly', 'appendfsync'));
    appendonly = cfg.get('appendonly') === 'yes';
    appendfsync = cfg.get('appendfsync');
  } catch {
    // CONFIG renamed away (rename-command): INFO persistence still tells whether AOF is on
    const persistence = parseInfo(await conn.info('persistence'));
    const enabled = persistence.get('aof_enabled');
    appendonly = enabled === undefined ? undefined : enabled === '1';
  }

  const warnings: string[] = [];
  if (appendonly !== true) {
    const state = appendonly === undefined ? 'does not say whether AOF is on' : 'runs with appendonly no';
    if (opts.durability !== 'none') {
      throw new StartupRefusal(
        'REDIS_DURABILITY',
        `${where} ${state}: a crash of it loses acknowledged writes. Set appendonly yes (appendfsync everysec or always) on the server, ` +
          `or REDIS_DURABILITY=none to accept that loss (tests and throwaway set-ups only)`,
      );
    }
    warnings.push(`REDIS_DURABILITY=none: ${where} ${state}; a crash of Redis loses acknowledged writes (wallets, escrow, accounts, check-ins)`);
  } else if (appendfsync === 'no') {
    warnings.push(`${where} has appendfsync no: the operating system decides when the AOF reaches the disk; a machine crash loses recent writes`);
  }
  if (opts.minReplicas === 0 && replicasOnline === 0 && opts.durability !== 'none') {
    warnings.push(`${where} has no replica: losing its machine loses everything (docs/deploy.md)`);
  }
  return { role, replicasOnline, appendonly, appendfsync, warnings };
}

/**
 * The checks of a Redis Cluster, through the connected cluster client: the cluster serves every
 * slot (cluster_state:ok, 16384 slots assigned: else REDIS_CLUSTER_NODES), each node keeps AOF
 * (else REDIS_DURABILITY, unless it is none) and each master has REDIS_MIN_REPLICAS replicas online
 * (else REDIS_MIN_REPLICAS: its writes and their WAIT go to that master).
 */
export async function checkCluster(
  cluster: Cluster,
  target: RedisTarget,
  opts: { minReplicas: number; durability: 'none' | undefined },
): Promise<RedisStartupReport> {
  const where = describeTarget(target);
  const first = cluster.nodes('master')[0];
  if (!first) throw new StartupRefusal('REDIS_CLUSTER_NODES', `REDIS_CLUSTER_NODES: ${where} gave no master`);
  const state = parseInfo(String(await first.call('CLUSTER', 'INFO')));
  const assigned = Number(state.get('cluster_slots_assigned') ?? 0);
  if (state.get('cluster_state') !== 'ok' || assigned < 16384) {
    throw new StartupRefusal(
      'REDIS_CLUSTER_NODES',
      `REDIS_CLUSTER_NODES: the cluster at ${where} is not serving every slot (cluster_state ${state.get('cluster_state') ?? '?'}, ${assigned} of 16384 slots assigned, ` +
        `${state.get('cluster_slots_fail') ?? '?'} failing); assign the uncovered slots (redis-cli --cluster fix) or wait for the failover to finish`,
    );
  }
  // every node the cluster knows (CLUSTER NODES), masters and replicas, each asked on its own
  const nodes: { addr: string; master: boolean }[] = [];
  for (const line of String(await first.call('CLUSTER', 'NODES')).split('\n')) {
    const [, address, flags] = line.split(' ');
    if (!address || !flags || /fail|handshake|noaddr/.test(flags)) continue;
    nodes.push({ addr: address.split('@')[0]!, master: flags.split(',').includes('master') });
  }
  const warnings: string[] = [];
  let fewest = Number.POSITIVE_INFINITY;
  const aofOff: string[] = [];
  let anyFsyncNo = false;
  for (const node of nodes) {
    const i = node.addr.lastIndexOf(':');
    const probe = new Redis({
      host: node.addr.slice(0, i),
      port: Number(node.addr.slice(i + 1)),
      ...(cluster.options.redisOptions?.password ? { password: cluster.options.redisOptions.password, username: cluster.options.redisOptions.username } : {}),
      lazyConnect: true,
      connectTimeout: PROBE_TIMEOUT_MS,
      commandTimeout: PROBE_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      if (node.master) {
        const replication = parseInfo(await probe.info('replication'));
        let online = 0;
        for (const [k, v] of replication) if (/^slave\d+$/.test(k) && /state=online/.test(v)) online++;
        fewest = Math.min(fewest, online);
        if (opts.minReplicas > online) {
          throw new StartupRefusal(
            'REDIS_MIN_REPLICAS',
            `REDIS_MIN_REPLICAS=${opts.minReplicas} but the cluster master ${node.addr} has ${online} replica(s) online; add replicas to every master or lower REDIS_MIN_REPLICAS`,
          );
        }
      }
      if (parseInfo(await probe.info('persistence')).get('aof_enabled') !== '1') aofOff.push(node.addr);
      try {
        if (pairs(await probe.call('CONFIG', 'GET', 'appendfsync')).get('appendfsync') === 'no') anyFsyncNo = true;
      } catch {
        // CONFIG renamed away: INFO persistence said whether AOF is on
      }
    } catch (err) {
      if (err instanceof StartupRefusal) throw err;
      throw new StartupRefusal('REDIS_CLUSTER_NODES', `REDIS_CLUSTER_NODES: the cluster node ${node.addr} does not answer (${(err as Error).message})`);
    } finally {
      probe.disconnect();
    }
  }
  if (aofOff.length > 0) {
    const state = `has nodes running with appendonly no (${aofOff.join(', ')})`;
    if (opts.durability !== 'none') {
      throw new StartupRefusal(
        'REDIS_DURABILITY',
        `the cluster at ${where} ${state}: a crash of one loses acknowledged writes. Set appendonly yes (appendfsync everysec or always) on every node, ` +
          `or REDIS_DURABILITY=none to accept that loss (tests and throwaway set-ups only)`,
      );
    }
    warnings.push(`REDIS_DURABILITY=none: the cluster at ${where} ${state}; a crash of one loses acknowledged writes (wallets, escrow, accounts, check-ins)`);
  } else if (anyFsyncNo) {
    warnings.push(`the cluster at ${where} has nodes with appendfsync no: the operating system decides when the AOF reaches the disk; a machine crash loses recent writes`);
  }
  if (opts.minReplicas === 0 && fewest === 0 && opts.durability !== 'none') {
    warnings.push(`the cluster at ${where} has a master without a replica: losing its machine loses its partitions (docs/deploy.md)`);
  }
  return { role: 'cluster', replicasOnline: Number.isFinite(fewest) ? fewest : 0, appendonly: aofOff.length === 0, appendfsync: undefined, warnings };
}
