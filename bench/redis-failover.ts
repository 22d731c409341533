/**
 * The unavailability window of a Sentinel failover as the hub's Store sees it: two Store instances
 * (two processes' connections) credit continuously through the Sentinels with REDIS_MIN_REPLICAS=1;
 * the primary is killed with -9, the Sentinels (down-after-milliseconds BENCH_DOWN_AFTER_MS, default
 * 1000) promote the replica, the old primary is restarted (it comes back as a replica). Per store:
 * the time from the first store_unavailable to the first acknowledged credit after it, and the
 * credits acknowledged and lost. Everything (one primary, one replica, three Sentinels) is started
 * here on free loopback ports. Prints one JSON object.
 *
 * Usage: node dist/bench/redis-failover.js
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { AppError } from '../src/errors.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/port.js';
import { freePort, ping, redisServer, run, sleep, stopAll, tempDirFor } from './redis-servers.js';

const DOWN_AFTER_MS = Number(process.env.BENCH_DOWN_AFTER_MS ?? 1000);
const NAME = 'bench';
const primary = await redisServer();
const replica = await redisServer(['--replicaof', '127.0.0.1', String(primary.port)]);
const probe = new Redis({ port: primary.port, host: '127.0.0.1' });
while (!/slave0:.*state=online/.test(await probe.info('replication'))) await sleep(50);
probe.disconnect();
const sentinels: number[] = [];
for (let i = 0; i < 3; i++) {
  const port = await freePort();
  const dir = tempDirFor('sentinel');
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(conf, `port ${port}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor ${NAME} 127.0.0.1 ${primary.port} 2\nsentinel down-after-milliseconds ${NAME} ${DOWN_AFTER_MS}\nsentinel failover-timeout ${NAME} 10000\n`);
  run('redis-sentinel', [conf]);
  sentinels.push(port);
}
for (const p of sentinels) await ping(p);
const s0 = new Redis({ port: sentinels[0]!, host: '127.0.0.1' });
for (;;) {
  const flat = (await s0.call('SENTINEL', 'MASTER', NAME)) as string[];
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) m.set(flat[i]!, flat[i + 1]!);
  if (Number(m.get('num-other-sentinels')) >= 2 && Number(m.get('num-slaves')) >= 1) break;
  await sleep(100);
}

const cfg = {
  DATA_DIR: '/nonexistent',
  REDIS_PREFIX: 'bench:',
  REDIS_SENTINELS: sentinels.map((port) => ({ host: '127.0.0.1', port })),
  REDIS_SENTINEL_NAME: NAME,
  REDIS_MIN_REPLICAS: 1,
  REDIS_OP_TIMEOUT_MS: 1000,
};
const stores = [await openStore(cfg), await openStore(cfg)];
let stop = false;
const acknowledged: string[] = [];
const windows: number[] = [];
const writer = async (store: Store, name: string) => {
  let firstFail: number | undefined;
  for (let i = 0; !stop; i++) {
    const id = `${name}-${i}`;
    for (;;) {
      try {
        await store.update([`idem:${id}`, 'balance'], ([seen, bal]) =>
          seen !== undefined ? { writes: [], result: null } : { writes: [{ op: 'set', key: `idem:${id}`, value: true }, { op: 'set', key: 'balance', value: ((bal as number | undefined) ?? 0) + 1 }], result: null },
        );
        if (firstFail !== undefined) {
          windows.push(performance.now() - firstFail);
          firstFail = undefined;
        }
        acknowledged.push(id);
        break;
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'store_unavailable')) throw err;
        firstFail ??= performance.now();
        await sleep(20);
      }
    }
  }
};
const writers = stores.map((s, i) => writer(s, `s${i}`));
await sleep(1000);
const killedAt = performance.now();
primary.child.kill('SIGKILL');
let promotedMs = 0;
for (;;) {
  const addr = (await s0.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME)) as [string, string];
  if (Number(addr[1]) !== primary.port) {
    promotedMs = performance.now() - killedAt;
    break;
  }
  await sleep(20);
}
// the old primary back on its data: the Sentinels make it a replica, so WAIT 1 can be met again
await redisServer([], { port: primary.port, dir: primary.dir });
while (windows.length < stores.length) await sleep(50);
await sleep(500);
stop = true;
await Promise.all(writers);
let lost = 0;
for (const id of acknowledged) if ((await stores[0]!.get(`idem:${id}`)) === undefined) lost++;
const balance = (await stores[0]!.get('balance')) as number;
for (const s of stores) await s.close();
s0.disconnect();
await stopAll();
console.log(
  JSON.stringify({
    bench: 'redis-failover',
    down_after_ms: DOWN_AFTER_MS,
    promoted_after_kill_ms: Math.round(promotedMs),
    unavailable_window_ms: windows.map((w) => Math.round(w)),
    acknowledged: acknowledged.length,
    lost,
    doubled: balance - (acknowledged.length - lost),
  }),
);
void replica;
