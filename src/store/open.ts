import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { openLmdbStore } from './lmdb.js';
import type { Store } from './port.js';
import { openRedisStore } from './redis.js';
import type { Cluster, Redis } from 'ioredis';
import { describeTarget, redisTarget, type SentinelAddress } from './redis-connection.js';
import { checkCluster, checkRedisServer, checkSentinels, StartupRefusal } from './redis-startup.js';

export interface StoreConfig {
  DATA_DIR: string;
  REDIS_URL?: string | undefined;
  REDIS_PREFIX: string;
  REDIS_SENTINELS?: SentinelAddress[] | undefined;
  REDIS_SENTINEL_NAME?: string | undefined;
  REDIS_CLUSTER_NODES?: SentinelAddress[] | undefined;
  REDIS_MIN_REPLICAS?: number | undefined;
  REDIS_WAIT_TIMEOUT_MS?: number | undefined;
  REDIS_OP_TIMEOUT_MS?: number | undefined;
  REDIS_DURABILITY?: 'none' | undefined;
  /** Refuse updates spanning aggregates (partition.ts), on either adapter. */
  STORE_PARTITION_CHECK?: boolean | undefined;
}

/**
 * The Store the configuration asks for: Redis when REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES is set, else LMDB
 * under DATA_DIR. A Redis is checked first (redis-startup.ts): a StartupRefusal names the setting
 * to change; `warn` hears what is said at every start (REDIS_DURABILITY=none).
 */
export async function openStore(cfg: StoreConfig, warn: (message: string) => void = () => undefined): Promise<Store> {
  const target = redisTarget(cfg);
  if (target) {
    if (target.sentinels) await checkSentinels(target);
    const minReplicas = cfg.REDIS_MIN_REPLICAS ?? 0;
    let store;
    try {
      store = await openRedisStore({
        target,
        prefix: cfg.REDIS_PREFIX,
        minReplicas,
        waitTimeoutMs: cfg.REDIS_WAIT_TIMEOUT_MS,
        opTimeoutMs: cfg.REDIS_OP_TIMEOUT_MS,
        partitionCheck: cfg.STORE_PARTITION_CHECK,
      });
    } catch (err) {
      const setting = target.cluster ? 'REDIS_CLUSTER_NODES' : target.sentinels ? 'REDIS_SENTINELS' : 'REDIS_URL';
      throw new StartupRefusal(setting, `${setting}: cannot reach Redis at ${describeTarget(target)}: ${(err as Error).message}`);
    }
    try {
      const opts = { minReplicas, durability: cfg.REDIS_DURABILITY };
      const report = target.cluster
        ? await checkCluster(store.commands as Cluster, target, opts)
        : await checkRedisServer(store.commands as Redis, target, opts);
      for (const w of report.warnings) warn(w);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }
  const path = join(cfg.DATA_DIR, 'store');
  await mkdir(path, { recursive: true });
  return openLmdbStore({ path, partitionCheck: cfg.STORE_PARTITION_CHECK });
}
