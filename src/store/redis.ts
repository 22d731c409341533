import { Redis, type RedisOptions } from 'ioredis';
import type {
  IndexEntry,
  Json,
  RangeOptions,
  SetOptions,
  Store,
  Unsubscribe,
  UpdateFn,
  Write,
} from './port.js';
import { checkCap, checkInt, checkKey, checkScore, checkTtl, encodeJson, prepareWrite } from './checks.js';

/**
 * The shared Store: Redis through ioredis, for any number of hub processes.
 *
 * Key layout (every key and channel starts with `prefix`):
 *   `${prefix}v:${key}`  value, a JSON string (PX for a TTL)
 *   `${prefix}l:${key}`  capped list of JSON strings (RPUSH + LTRIM)
 *   `${prefix}z:${key}`  ordered index (sorted set; ties ordered by member natively)
 *   `${prefix}${channel}` pub/sub channel
 *
 * update() is optimistic: MGET the keys, run fn, then one Lua script applies the writes only if
 * every key still holds exactly the string that was read (or is still absent); otherwise re-read
 * and re-run fn after a short jittered pause. Within one instance, updates sharing a read key are
 * queued locally, so conflicts only arise between processes.
 */

export interface RedisStoreOptions {
  url: string;
  prefix: string;
  /** Attempts of an update() under contention before it gives up; default 100. */
  maxUpdateAttempts?: number;
}

export interface RedisStoreStats {
  /** update() calls that committed. */
  updates: number;
  /** Extra attempts caused by a concurrent writer. */
  retries: number;
}

export interface RedisStore extends Store {
  stats(): RedisStoreStats;
}

const PING_TIMEOUT_MS = 2000;
const CONNECT_TIMEOUT_MS = 2000;
const QUIT_TIMEOUT_MS = 2000;
const MAX_BACKOFF_MS = 50;

/**
 * KEYS[1..n]: the value keys fn read. ARGV[1] = n; ARGV[1+i] = '0' when key i was absent, or '1'
 * followed by the exact string read. Then the writes, in order, as an opcode and its arguments;
 * the keys each write touches follow the read keys in KEYS, in the same order:
 *   s value px   (1 key; px '' for no TTL)       SET
 *   d            (3 keys: value, list, index)     DEL
 *   p value -cap (1 key)                          RPUSH + LTRIM
 *   z score member (1 key)                        ZADD
 *   u member     (1 key)                          ZREM
 *   i by         (1 key)                          INCRBY (the key is not read: no conflict over it)
 * Returns 1 when applied, 0 when a read key changed (nothing written). Lua does not roll back, so
 * every INCRBY target is checked (an integer or absent) before anything is written.
 */
const APPLY_LUA = `
local n = tonumber(ARGV[1])
for i = 1, n do
  local cur = redis.call('GET', KEYS[i])
  local want = ARGV[1 + i]
  if cur == false then
    if want ~= '0' then return 0 end
  elseif string.byte(want, 1) ~= 49 or string.sub(want, 2) ~= cur then
    return 0
  end
end
local last = #ARGV
local k = n + 1
local a = n + 2
while a <= last do
  local op = ARGV[a]
  if op == 'i' then
    local cur = redis.call('GET', KEYS[k])
    if cur ~= false and not string.match(cur, '^%-?%d+$') then
      return redis.error_reply('value at ' .. KEYS[k] .. ' is not an integer')
    end
    k = k + 1
    a = a + 2
  elseif op == 's' or op == 'p' or op == 'z' then
    k = k + 1
    a = a + 3
  elseif op == 'd' then
    k = k + 3
    a = a + 1
  else
    k = k + 1
    a = a + 2
  end
end
k = n + 1
a = n + 2
while a <= last do
  local op = ARGV[a]
  if op == 's' then
    if ARGV[a + 2] == '' then
      redis.call('SET', KEYS[k], ARGV[a + 1])
    else
      redis.call('SET', KEYS[k], ARGV[a + 1], 'PX', ARGV[a + 2])
    end
    k = k + 1
    a = a + 3
  elseif op == 'd' then
    redis.call('DEL', KEYS[k], KEYS[k + 1], KEYS[k + 2])
    k = k + 3
    a = a + 1
  elseif op == 'p' then
    redis.call('RPUSH', KEYS[k], ARGV[a + 1])
    redis.call('LTRIM', KEYS[k], ARGV[a + 2], -1)
    k = k + 1
    a = a + 3
  elseif op == 'z' then
    redis.call('ZADD', KEYS[k], ARGV[a + 1], ARGV[a + 2])
    k = k + 1
    a = a + 3
  elseif op == 'u' then
    redis.call('ZREM', KEYS[k], ARGV[a + 1])
    k = k + 1
    a = a + 2
  elseif op == 'i' then
    redis.call('INCRBY', KEYS[k], ARGV[a + 1])
    k = k + 1
    a = a + 2
  else
    return redis.error_reply('unknown op ' .. tostring(op))
  end
end
return 1
`;

interface ApplyCommand {
  maruApply(numKeys: number, ...args: string[]): Promise<number>;
}

const parse = <T>(raw: string | null): T | undefined =>
  raw === null ? undefined : (JSON.parse(raw) as T);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export async function openRedisStore(opts: RedisStoreOptions): Promise<RedisStore> {
  const { prefix } = opts;
  if (typeof prefix !== 'string' || prefix.length === 0) throw new TypeError('prefix must be a non-empty string');
  const maxAttempts = opts.maxUpdateAttempts ?? 100;

  const options: RedisOptions = {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 2,
    retryStrategy: (times) => Math.min(times * 100, 2000),
  };
  const cmd = new Redis(opts.url, { ...options, enableAutoPipelining: true });
  const sub = new Redis(opts.url, options);
  let lastError: Error | undefined;
  const onError = (err: Error) => {
    lastError = err;
  };
  cmd.on('error', onError);
  sub.on('error', onError);
  cmd.on('ready', () => {
    lastError = undefined;
  });
  cmd.defineCommand('maruApply', { lua: APPLY_LUA });
  const apply = cmd as unknown as ApplyCommand;

  const vk = (key: string) => `${prefix}v:${checkKey(key)}`;
  const lk = (key: string) => `${prefix}l:${checkKey(key)}`;
  const zk = (key: string) => `${prefix}z:${checkKey(key)}`;
  const ck = (channel: string) => `${prefix}${checkKey(channel, 'channel')}`;

  let closed = false;
  const live = () => {
    if (closed) throw new Error('store is closed');
  };
  const inflight = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>): Promise<T> => {
    inflight.add(p);
    const done = () => inflight.delete(p);
    p.then(done, done);
    return p;
  };
  const stats: RedisStoreStats = { updates: 0, retries: 0 };

  // ---- pub/sub: one subscriber connection, handlers grouped by channel ----

  type Sub = { handler: (message: string) => void };
  const channels = new Map<string, Set<Sub>>();
  let subChain: Promise<unknown> = Promise.resolve();
  const serial = <T>(job: () => Promise<T>): Promise<T> => {
    const next = subChain.then(job);
    subChain = next.catch(() => undefined);
    return next;
  };
  sub.on('message', (channel: string, message: string) => {
    const subs = channels.get(channel);
    if (!subs) return;
    for (const s of [...subs]) {
      try {
        s.handler(message);
      } catch {
        // one faulty handler must not stop delivery to the others
      }
    }
  });

  const ping = async (): Promise<void> => {
    live();
    try {
      await withTimeout(cmd.ping(), PING_TIMEOUT_MS, 'redis did not answer PING in time');
    } catch (err) {
      const cause = lastError ? ` (last connection error: ${lastError.message})` : '';
      throw new Error(`redis unavailable: ${(err as Error).message}${cause}`, { cause: err });
    }
  };

  const quit = async (conn: Redis) => {
    try {
      await withTimeout(conn.quit(), QUIT_TIMEOUT_MS, 'quit timed out');
    } catch {
      conn.disconnect();
    }
  };

  try {
    await withTimeout(
      Promise.all([cmd.connect(), sub.connect()]),
      CONNECT_TIMEOUT_MS * 2,
      'redis connect timed out',
    );
    await ping();
  } catch (err) {
    cmd.disconnect();
    sub.disconnect();
    throw new Error(`cannot reach redis at ${redactUrl(opts.url)}: ${(err as Error).message}`, { cause: err });
  }

  type Prepared = { keys: string[]; args: string[] };
  const prepare = (write: Write): Prepared => {
    const w = prepareWrite(write);
    switch (w.op) {
      case 'set':
        return { keys: [vk(w.key)], args: ['s', w.json, w.ttlMs === undefined ? '' : String(w.ttlMs)] };
      case 'del':
        return { keys: [vk(w.key), lk(w.key), zk(w.key)], args: ['d'] };
      case 'push':
        return { keys: [lk(w.key)], args: ['p', w.json, String(-w.cap)] };
      case 'index':
        return { keys: [zk(w.key)], args: ['z', String(w.score), w.member] };
      case 'unindex':
        return { keys: [zk(w.key)], args: ['u', w.member] };
      case 'incr':
        return { keys: [vk(w.key)], args: ['i', String(w.by)] };
    }
  };

  /**
   * Updates of this instance that read a common key run one after the other (FIFO per key), so
   * optimistic retries only come from other processes; updates on disjoint keys run in parallel.
   */
  const keyTails = new Map<string, Promise<void>>();
  const withKeys = async <T>(keys: string[], body: () => Promise<T>): Promise<T> => {
    const unique = [...new Set(keys)];
    const before = new Set<Promise<void>>();
    for (const k of unique) {
      const tail = keyTails.get(k);
      if (tail) before.add(tail);
    }
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    for (const k of unique) keyTails.set(k, mine);
    try {
      if (before.size > 0) await Promise.all(before);
      return await body();
    } finally {
      release();
      for (const k of unique) if (keyTails.get(k) === mine) keyTails.delete(k);
    }
  };

  const runUpdate = async <R>(keys: string[], fn: UpdateFn<R>): Promise<R> => {
    const readKeys = keys.map(vk);
    for (let attempt = 1; ; attempt++) {
      const raws = readKeys.length > 0 ? await cmd.mget(...readKeys) : [];
      const plan = fn(raws.map((r) => parse<Json>(r)));
      if (!plan || !Array.isArray(plan.writes)) throw new TypeError('update fn must return { writes, result }');
      const prepared = plan.writes.map(prepare);
      if (prepared.length === 0) {
        stats.updates++;
        return plan.result;
      }
      const allKeys = [...readKeys];
      const args = [String(readKeys.length), ...raws.map((r) => (r === null ? '0' : `1${r}`))];
      for (const p of prepared) {
        allKeys.push(...p.keys);
        args.push(...p.args);
      }
      const ok = await apply.maruApply(allKeys.length, ...allKeys, ...args);
      if (ok === 1) {
        stats.updates++;
        return plan.result;
      }
      if (attempt >= maxAttempts) {
        throw new Error(`update gave up after ${attempt} attempts: keys kept changing (${keys.join(', ')})`);
      }
      stats.retries++;
      await sleep(Math.random() * Math.min(2 ** (attempt - 1), MAX_BACKOFF_MS));
    }
  };

  /** Runs one operation, tracked so that close() waits for it. */
  const op = <T>(body: () => Promise<T>): Promise<T> => {
    try {
      live();
      return track(body());
    } catch (err) {
      return Promise.reject(err);
    }
  };

  const store: RedisStore = {
    kind: 'redis',

    get<T extends Json = Json>(key: string): Promise<T | undefined> {
      return op(async () => parse<T>(await cmd.get(vk(key))));
    },

    getMany<T extends Json = Json>(keys: string[]): Promise<(T | undefined)[]> {
      return op(async () => {
        if (keys.length === 0) return [];
        const raws = await cmd.mget(...keys.map(vk));
        return raws.map((r) => parse<T>(r));
      });
    },

    set(key: string, value: Json, opts?: SetOptions): Promise<boolean> {
      return op(async () => {
        const args: (string | number)[] = [vk(key), encodeJson(value)];
        const ttl = checkTtl(opts?.ttlMs);
        if (ttl !== undefined) args.push('PX', ttl);
        if (opts?.ifAbsent === true) args.push('NX');
        return (await cmd.call('SET', ...args)) === 'OK';
      });
    },

    del(key: string): Promise<boolean> {
      return op(async () => (await cmd.del(vk(key), lk(key), zk(key))) > 0);
    },

    update<R>(keys: string[], fn: UpdateFn<R>): Promise<R> {
      return op(async () => {
        keys.forEach((k) => checkKey(k));
        return withKeys(keys, () => runUpdate(keys, fn));
      });
    },

    incr(key: string, by = 1): Promise<number> {
      return op(async () => cmd.incrby(vk(key), checkInt(by, 'by')));
    },

    push(key: string, value: Json, cap: number): Promise<number> {
      return op(async () => {
        const json = encodeJson(value);
        checkCap(cap);
        const res = await cmd.multi().rpush(lk(key), json).ltrim(lk(key), -cap, -1).exec();
        const pushed = res?.[0];
        if (!pushed) throw new Error('push transaction aborted');
        if (pushed[0]) throw pushed[0];
        return Math.min(pushed[1] as number, cap);
      });
    },

    range<T extends Json = Json>(key: string, start = 0, stop = -1): Promise<T[]> {
      return op(async () => {
        checkInt(start, 'start');
        checkInt(stop, 'stop');
        const raws = await cmd.lrange(lk(key), start, stop);
        return raws.map((r) => JSON.parse(r) as T);
      });
    },

    length(key: string): Promise<number> {
      return op(async () => cmd.llen(lk(key)));
    },

    index(key: string, member: string, score: number): Promise<void> {
      return op(async () => {
        await cmd.zadd(zk(key), String(checkScore(score)), checkKey(member, 'member'));
      });
    },

    unindex(key: string, member: string): Promise<boolean> {
      return op(async () => (await cmd.zrem(zk(key), checkKey(member, 'member'))) > 0);
    },

    indexRange(key: string, opts: RangeOptions = {}): Promise<IndexEntry[]> {
      return op(async () => {
        const { min, max, reverse = false } = opts;
        const lo = min === undefined ? '-inf' : String(checkScore(min));
        const hi = max === undefined ? '+inf' : String(checkScore(max));
        const offset = opts.offset === undefined ? 0 : checkInt(opts.offset, 'offset');
        const limit = opts.limit === undefined ? undefined : checkInt(opts.limit, 'limit');
        if (offset < 0) throw new RangeError('offset must not be negative');
        if (limit !== undefined && limit < 0) throw new RangeError('limit must not be negative');
        if (limit === 0 || (min !== undefined && max !== undefined && min > max)) return [];
        const args: (string | number)[] = reverse
          ? [zk(key), hi, lo, 'WITHSCORES']
          : [zk(key), lo, hi, 'WITHSCORES'];
        if (offset > 0 || limit !== undefined) args.push('LIMIT', offset, limit ?? -1);
        const flat = (await cmd.call(reverse ? 'ZREVRANGEBYSCORE' : 'ZRANGEBYSCORE', ...args)) as string[];
        const out: IndexEntry[] = [];
        for (let i = 0; i + 1 < flat.length; i += 2) {
          out.push({ member: flat[i]!, score: Number(flat[i + 1]) });
        }
        return out;
      });
    },

    indexScore(key: string, member: string): Promise<number | undefined> {
      return op(async () => {
        const raw = await cmd.zscore(zk(key), checkKey(member, 'member'));
        return raw === null ? undefined : Number(raw);
      });
    },

    indexCount(key: string): Promise<number> {
      return op(async () => cmd.zcard(zk(key)));
    },

    publish(channel: string, message: string): Promise<void> {
      return op(async () => {
        await cmd.publish(ck(channel), message);
      });
    },

    subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe> {
      return op(async () => {
        const ch = ck(channel);
        const entry: Sub = { handler };
        await serial(async () => {
          live();
          const existing = channels.get(ch);
          if (existing) {
            existing.add(entry);
            return;
          }
          channels.set(ch, new Set<Sub>([entry]));
          try {
            await sub.subscribe(ch);
          } catch (err) {
            channels.delete(ch);
            throw err;
          }
        });
        let done = false;
        return () => {
          if (done) return Promise.resolve();
          done = true;
          return track(
            serial(async () => {
              const subs = channels.get(ch);
              if (!subs || !subs.delete(entry) || subs.size > 0) return;
              channels.delete(ch);
              if (!closed) await sub.unsubscribe(ch).catch(() => undefined);
            }),
          );
        };
      });
    },

    ping,

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...inflight]);
      channels.clear();
      await Promise.all([quit(cmd), quit(sub)]);
    },

    stats: () => ({ ...stats }),
  };
  return store;
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(invalid url)';
  }
}
