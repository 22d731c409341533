import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { loadConfigOrExit } from '../config.js';
import { migrate, type MigrationMode } from './migrate.js';
import { openStore } from './open.js';
import type { RedisStore } from './redis.js';
import { describeTarget } from './redis-connection.js';
import { parseInfo, StartupRefusal } from './redis-startup.js';

/**
 * Operator commands on the Store (docs/deploy.md, "Moving from one primary to a cluster"), with the
 * hub's settings (REDIS_CLUSTER_NODES, REDIS_PREFIX, REDIS_URL for the password, REDIS_MIN_REPLICAS,
 * REDIS_DURABILITY: the cluster is checked as the hub checks it at start):
 *
 *   node dist/src/store/cli.js migrate-cluster --from redis://old:6379/0 [--from-prefix maru:] [--dry-run | --verify] [--batch 500]
 *
 * copies the Store keys of the single Redis (`--from`, its prefix `--from-prefix`, default
 * REDIS_PREFIX) into the cluster layout (src/store/migrate.ts); `--dry-run` counts what it would
 * copy, writing nothing; `--verify` compares every key with its copy. The report is one JSON line on
 * stdout. Exit codes: 0 done (verify: every key the same), 1 verify found differences or the copy
 * failed, 2 a bad setting or argument (the message names it).
 */
const USAGE = 'usage: cli.js migrate-cluster --from redis://host:port[/db] [--from-prefix <prefix>] [--dry-run | --verify] [--batch <1..10000>]';

function refuse(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd !== 'migrate-cluster') refuse(cmd === undefined ? 'no command given' : `unknown command ${cmd}`);
let args;
try {
  args = parseArgs({
    args: rest,
    options: { from: { type: 'string' }, 'from-prefix': { type: 'string' }, 'dry-run': { type: 'boolean' }, verify: { type: 'boolean' }, batch: { type: 'string' } },
    strict: true,
    allowPositionals: false,
  }).values;
} catch (err) {
  refuse((err as Error).message);
}
const config = loadConfigOrExit();
if (!config.REDIS_CLUSTER_NODES?.length) refuse('REDIS_CLUSTER_NODES: the migration copies into a Redis Cluster; set REDIS_CLUSTER_NODES=host:port,... (the cluster the hubs will use)');
if (args['dry-run'] && args.verify) refuse('--dry-run and --verify: give one of the two');
const from = args.from;
if (from === undefined) refuse('--from: give the single Redis to copy from (redis://host:port/db)');
let fromUrl: URL;
try {
  fromUrl = new URL(from);
} catch {
  refuse('--from: not a URL (redis://host:port/db)');
}
if (fromUrl.protocol !== 'redis:' && fromUrl.protocol !== 'rediss:') refuse('--from: must be a redis:// or rediss:// URL');
const sourcePrefix = args['from-prefix'] ?? config.REDIS_PREFIX;
if (sourcePrefix.length === 0) refuse('--from-prefix: must not be empty (the prefix the hubs wrote with, REDIS_PREFIX on the old server)');
const batch = args.batch === undefined ? 500 : Number(args.batch);
if (!Number.isInteger(batch) || batch < 1 || batch > 10_000) refuse('--batch: an integer in 1..10000');
const mode: MigrationMode = args['dry-run'] ? 'count' : args.verify ? 'verify' : 'copy';
const sourceName = describeTarget({ url: from });

const source = new Redis(from, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 1, retryStrategy: () => null });
source.on('error', () => undefined);
try {
  await source.connect();
  if (parseInfo(await source.info('cluster')).get('cluster_enabled') === '1') {
    refuse(`--from: ${sourceName} is a Redis Cluster node; the migration copies from one Redis (the old primary)`);
  }
} catch (err) {
  source.disconnect();
  refuse(`--from: cannot reach Redis at ${sourceName}: ${(err as Error).message}`);
}
let target: RedisStore;
try {
  target = (await openStore({ ...config, STORE_PARTITION_CHECK: false, REDIS_OP_TIMEOUT_MS: Math.max(config.REDIS_OP_TIMEOUT_MS ?? 0, 30_000) })) as RedisStore;
} catch (err) {
  source.disconnect();
  if (err instanceof StartupRefusal) refuse(err.message);
  throw err;
}
let batches = 0;
try {
  const report = await migrate(mode, {
    source, sourcePrefix, target, targetPrefix: config.REDIS_PREFIX, sourceName, batch,
    onBatch: (r) => {
      if (++batches % 20 === 0) console.error(JSON.stringify({ progress: { keys: r.keys, written: r.written, differ: r.differ } }));
    },
  });
  console.log(JSON.stringify(report));
  process.exitCode = mode === 'verify' && report.differ > 0 ? 1 : 0;
} catch (err) {
  console.error(`migrate-cluster: ${(err as Error).message} (run the command again: it resumes where it stopped)`);
  process.exitCode = 1;
} finally {
  source.disconnect();
  await target.close();
}
