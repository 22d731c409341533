import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** Where the Redis tests run: REDIS_TEST_URL, else the local default. */
export const REDIS_TEST_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

export interface RedisProbe {
  url: string;
  available: boolean;
}

let probe: Promise<RedisProbe> | undefined;

async function pingOnce(url: string): Promise<void> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
  } finally {
    client.disconnect();
  }
}

/**
 * Probes the test Redis once per test file. When it does not answer: with REQUIRE_REDIS=1 this
 * throws (the suite fails); otherwise it warns loudly and reports `available: false` so the Redis
 * tests skip.
 */
export function redisOrSkip(): Promise<RedisProbe> {
  probe ??= (async () => {
    const url = REDIS_TEST_URL;
    try {
      await pingOnce(url);
      return { url, available: true };
    } catch (err) {
      const why = `Redis at ${url} is not reachable (${(err as Error).message})`;
      if (process.env.REQUIRE_REDIS === '1') {
        throw new Error(`${why} and REQUIRE_REDIS=1`);
      }
      console.warn(
        `\n${'!'.repeat(72)}\n!! SKIPPING REDIS TESTS: ${why}.\n` +
          `!! Start redis-server or set REDIS_TEST_URL; set REQUIRE_REDIS=1 to make this fatal.\n` +
          `${'!'.repeat(72)}\n`,
      );
      return { url, available: false };
    }
  })();
  return probe;
}

/** A key prefix no other test run uses. */
export function uniquePrefix(name: string): string {
  return `test:${name}:${randomBytes(6).toString('hex')}:`;
}

const globEscape = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** Deletes every key under `prefix` (SCAN + UNLINK); returns how many were deleted. */
export async function deletePrefix(url: string, prefix: string): Promise<number> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1500 });
  client.on('error', () => undefined);
  let deleted = 0;
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${globEscape(prefix)}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await client.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
  return deleted;
}
