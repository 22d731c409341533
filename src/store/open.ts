import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { openLmdbStore } from './lmdb.js';
import type { Store } from './port.js';
import { openRedisStore } from './redis.js';

/** The Store the configuration asks for: Redis when REDIS_URL is set, else LMDB under DATA_DIR. */
export async function openStore(cfg: {
  DATA_DIR: string;
  REDIS_URL?: string | undefined;
  REDIS_PREFIX: string;
}): Promise<Store> {
  if (cfg.REDIS_URL) {
    return openRedisStore({ url: cfg.REDIS_URL, prefix: cfg.REDIS_PREFIX });
  }
  const path = join(cfg.DATA_DIR, 'store');
  await mkdir(path, { recursive: true });
  return openLmdbStore({ path });
}
