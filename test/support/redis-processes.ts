import { afterAll } from 'vitest';
import { startHubProcess, type HubProcess } from './process.js';
import { deletePrefix, redisOrSkip, uniquePrefix, type RedisProbe } from './redis.js';

/**
 * Hub processes sharing the test Redis, for one test file: every key prefix made with `prefix` and
 * every process started with `start` is cleaned up after the file (the processes killed with
 * SIGKILL, the prefixes' keys deleted). Call it once at the top of the file.
 */
export async function redisProcesses(): Promise<{
  redis: RedisProbe;
  /** A fresh REDIS_PREFIX, deleted after the file. */
  prefix: (name: string) => string;
  /** startHubProcess, the process killed after the file. */
  start: (env: Record<string, string>, timeoutMs?: number) => Promise<HubProcess>;
}> {
  const redis = await redisOrSkip();
  const prefixes: string[] = [];
  const started: HubProcess[] = [];
  afterAll(async () => {
    for (const p of started) await p.stop('SIGKILL');
    for (const p of prefixes) await deletePrefix(redis.url, p);
  });
  return {
    redis,
    prefix: (name) => {
      const p = uniquePrefix(name);
      prefixes.push(p);
      return p;
    },
    start: async (env, timeoutMs) => {
      const p = await startHubProcess(env, timeoutMs);
      started.push(p);
      return p;
    },
  };
}
