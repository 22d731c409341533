import type { Cluster, Redis } from 'ioredis';
import type { RedisStore } from './redis.js';

/**
 * Moving from one Redis primary to a Redis Cluster (docs/deploy.md): copies the Store keys of one
 * prefix on the single server (`<prefix>v:<key>`, `l:`, `z:`) into the cluster layout
 * (`<prefix>{<tag>}v:<key>`, the tag of the key's partition: the target Store's own vk/lk/zk), values,
 * lists and sorted indexes as they are, each with its remaining TTL.
 *
 * - Idempotent: each key is written on the target in one MULTI (DEL, then its content, then its
 *   TTL), so copying a key again gives the same key; running the copy again gives the same target.
 * - Resumable: the SCAN cursor of the source is kept on the target after every batch
 *   (`<prefix>migrate:state`, a key outside the Store's layout); a copy that stopped resumes there
 *   (a key copied twice is copied the same). A finished copy run again starts from the beginning.
 * - count (dry run): what a copy would take, by kind and by service, and what it leaves (the write
 *   fence, the trading queue's jobs, anything else under the prefix), writing nothing.
 * - verify: every Store key of the source is on the target with the same content and a TTL within
 *   TTL_SLACK_MS of the source's (or none when the source has none).
 *
 * The hubs are stopped during the copy (a write after a key was copied is not copied; verify finds it).
 */

export type MigrationMode = 'count' | 'copy' | 'verify';

export interface MigrationOptions {
  /** The single Redis (connected). */
  source: Redis;
  /** Its Store prefix. */
  sourcePrefix: string;
  /** The target Store on the cluster (its prefix is the target prefix). */
  target: RedisStore;
  targetPrefix: string;
  /** Describes the source in the kept state (no password). */
  sourceName: string;
  /** Keys per SCAN batch; default 500. */
  batch?: number;
  /** Called after each batch (progress). */
  onBatch?: (report: MigrationReport) => void;
  /** Stop after this many batches (a copy interrupted on purpose: tests of the resumption). */
  maxBatches?: number;
}

export interface MigrationReport {
  mode: MigrationMode;
  /** Store keys seen, by kind. */
  keys: { v: number; l: number; z: number };
  /** Store keys by service (the key's first `:` field). */
  services: Record<string, number>;
  /** Keys under the prefix that are not Store keys, left as they are. */
  skipped: { fence: number; queue: number; other: number };
  /** copy: keys written; count: keys already on the target. */
  written: number;
  present: number;
  /** Keys that expired between the scan and their read. */
  gone: number;
  /** verify: keys whose copy differs or is missing, and up to 20 of them. */
  differ: number;
  examples: string[];
  /** copy: resumed from a kept cursor; finished (false when stopped by maxBatches). */
  resumed: boolean;
  done: boolean;
}

/** A TTL on the target may differ from the source's by the time between the copy's read and write. */
export const TTL_SLACK_MS = 5000;
/** Elements read or written per command for a list or an index. */
const CHUNK = 1000;

interface KeptState {
  source: string;
  sourcePrefix: string;
  cursor: string;
  done: boolean;
  at: number;
}

type Space = 'v' | 'l' | 'z';
const REDIS_TYPE: Record<Space, string> = { v: 'string', l: 'list', z: 'zset' };

/** The glob matching the keys of `prefix` (its glob characters escaped). */
const globOf = (prefix: string) => `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;

/** What a source key is: a Store key (kind and Store key), or skipped (why). */
function classify(redisKey: string, prefix: string): { space: Space; key: string } | { skip: 'fence' | 'queue' | 'other' } {
  const rest = redisKey.slice(prefix.length);
  if (rest === 'fence') return { skip: 'fence' };
  if (rest.startsWith('bull:')) return { skip: 'queue' };
  const m = /^([vlz]):(.+)$/s.exec(rest);
  if (!m) return { skip: 'other' };
  return { space: m[1] as Space, key: m[2]! };
}

/** A key's content: a string, a list, or an index as [member, score, member, score, ...]. */
type Content = { type: 'string'; value: string } | { type: 'list'; items: string[] } | { type: 'zset'; pairs: string[] } | { type: 'none' };

async function readContent(r: Redis | Cluster, key: string, type: string): Promise<Content> {
  if (type === 'string') {
    const value = await r.get(key);
    return value === null ? { type: 'none' } : { type: 'string', value };
  }
  if (type === 'list') {
    const items: string[] = [];
    for (let at = 0; ; at += CHUNK) {
      const part = await r.lrange(key, at, at + CHUNK - 1);
      items.push(...part);
      if (part.length < CHUNK) break;
    }
    return { type: 'list', items };
  }
  if (type === 'zset') {
    const pairs: string[] = [];
    for (let at = 0; ; at += CHUNK) {
      const part = await r.zrange(key, at, at + CHUNK - 1, 'WITHSCORES');
      pairs.push(...part);
      if (part.length < CHUNK * 2) break;
    }
    return { type: 'zset', pairs };
  }
  return { type: 'none' };
}

/** One key on the target: DEL, its content, its TTL, in one MULTI (one key, one slot). */
async function writeContent(c: Cluster, key: string, content: Content, pttl: number): Promise<void> {
  const m = c.multi();
  m.del(key);
  if (content.type === 'string') {
    if (pttl > 0) m.set(key, content.value, 'PX', pttl);
    else m.set(key, content.value);
  } else if (content.type === 'list') {
    for (let at = 0; at < content.items.length; at += CHUNK) m.rpush(key, ...content.items.slice(at, at + CHUNK));
  } else if (content.type === 'zset') {
    for (let at = 0; at < content.pairs.length; at += CHUNK * 2) {
      const args: string[] = [];
      const part = content.pairs.slice(at, at + CHUNK * 2);
      for (let i = 0; i < part.length; i += 2) args.push(part[i + 1]!, part[i]!);
      m.zadd(key, ...args);
    }
  }
  if (content.type !== 'string' && content.type !== 'none' && pttl > 0) m.pexpire(key, pttl);
  const out = await m.exec();
  const failed = out?.find(([err]) => err);
  if (!out || failed) throw new Error(`writing ${key} on the cluster failed: ${failed?.[0]?.message ?? 'transaction aborted'}`);
}

const same = (a: Content, b: Content) => JSON.stringify(a) === JSON.stringify(b);

/** Runs one mode over every key of the source prefix. */
export async function migrate(mode: MigrationMode, opts: MigrationOptions): Promise<MigrationReport> {
  const { source, sourcePrefix, target, targetPrefix } = opts;
  const cluster = target.commands as Cluster;
  const batch = opts.batch ?? 500;
  const stateKey = `${targetPrefix}migrate:state`;
  const report: MigrationReport = {
    mode, keys: { v: 0, l: 0, z: 0 }, services: {}, skipped: { fence: 0, queue: 0, other: 0 },
    written: 0, present: 0, gone: 0, differ: 0, examples: [], resumed: false, done: false,
  };
  const note = (why: string) => {
    report.differ++;
    if (report.examples.length < 20) report.examples.push(why);
  };
  let cursor = '0';
  if (mode === 'copy') {
    const raw = await cluster.get(stateKey);
    const kept = raw === null ? undefined : (JSON.parse(raw) as KeptState);
    if (kept && !kept.done && kept.source === opts.sourceName && kept.sourcePrefix === sourcePrefix && kept.cursor !== '0') {
      cursor = kept.cursor;
      report.resumed = true;
    }
  }
  const keep = (c: string, done: boolean) =>
    cluster.set(stateKey, JSON.stringify({ source: opts.sourceName, sourcePrefix, cursor: c, done, at: Date.now() } satisfies KeptState));
  let batches = 0;
  do {
    const [next, found] = await source.scan(cursor, 'MATCH', globOf(sourcePrefix), 'COUNT', batch);
    for (const redisKey of found) {
      const what = classify(redisKey, sourcePrefix);
      if ('skip' in what) {
        report.skipped[what.skip]++;
        continue;
      }
      const [[, type], [, pttl]] = (await source.multi().type(redisKey).pttl(redisKey).exec()) as [[null, string], [null, number]];
      if (type === 'none' || pttl === -2) {
        report.gone++;
        continue;
      }
      if (type !== REDIS_TYPE[what.space]) {
        report.skipped.other++;
        continue;
      }
      report.keys[what.space]++;
      const service = what.key.split(':')[0]!;
      report.services[service] = (report.services[service] ?? 0) + 1;
      const to = what.space === 'v' ? target.vk(what.key) : what.space === 'l' ? target.lk(what.key) : target.zk(what.key);
      if (mode === 'count') {
        if ((await cluster.exists(to)) === 1) report.present++;
        continue;
      }
      const content = await readContent(source, redisKey, type);
      if (content.type === 'none') {
        report.gone++;
        continue;
      }
      if (mode === 'copy') {
        await writeContent(cluster, to, content, pttl);
        report.written++;
        continue;
      }
      const [copy, copyTtl] = await Promise.all([cluster.type(to).then((t) => readContent(cluster, to, t)), cluster.pttl(to)]);
      if (copy.type === 'none') note(`missing: ${what.space}:${what.key}`);
      else if (!same(content, copy)) note(`content differs: ${what.space}:${what.key}`);
      else if ((pttl < 0) !== (copyTtl < 0) || (pttl > 0 && Math.abs(pttl - copyTtl) > TTL_SLACK_MS)) note(`ttl differs (${pttl} ms, copy ${copyTtl} ms): ${what.space}:${what.key}`);
    }
    cursor = next;
    batches++;
    if (mode === 'copy') await keep(cursor, cursor === '0');
    opts.onBatch?.(report);
    if (opts.maxBatches !== undefined && batches >= opts.maxBatches && cursor !== '0') return report;
  } while (cursor !== '0');
  report.done = true;
  return report;
}
