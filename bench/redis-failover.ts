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
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { AppError } from '../src/errors.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/port.js';

const DOWN_AFTER_MS = Number(process.env.BENCH_DOWN_AFTER_MS ?? 1000);
const NAME = 'bench';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

async function ping(port: number): Promise<void> {
  for (let tries = 0; ; tries++) {
    const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await c.ping();
      return;
    } catch (err) {
      if (tries > 200) throw err;
      await sleep(50);
    } finally {
      c.disconnect();
    }
  }
}

const children: ChildProcess[] = [];
const dirs: string[] = [];
function run(cmd: string, args: string[]): ChildProcess {
  const c = spawn(cmd, args, { stdio: 'ignore' });
  children.push(c);
  return c;
}
async function server(extra: string[], port?: number, dir?: string) {
  const p = port ?? (await freePort());
  const d = dir ?? mkdtempSync(join(tmpdir(), 'maru-bench-fo-'));
  if (!dir) dirs.push(d);
  const child = run('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--dir', d, '--save', '', '--appendonly', 'yes', ...extra]);
  await ping(p);
  return { port: p, dir: d, child };
}

const primary = await server([]);
const replica = await server(['--replicaof', '127.0.0.1', String(primary.port)]);
const probe = new Redis({ port: primary.port, host: '127.0.0.1' });
while (!/slave0:.*state=online/.test(await probe.info('replication'))) await sleep(50);
probe.disconnect();
const sentinels: number[] = [];
for (let i = 0; i < 3; i++) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'maru-bench-sentinel-'));
  dirs.push(dir);
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
await server([], primary.port, primary.dir);
while (windows.length < stores.length) await sleep(50);
await sleep(500);
stop = true;
await Promise.all(writers);
let lost = 0;
for (const id of acknowledged) if ((await stores[0]!.get(`idem:${id}`)) === undefined) lost++;
const balance = (await stores[0]!.get('balance')) as number;
for (const s of stores) await s.close();
s0.disconnect();
for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
await sleep(200);
for (const d of dirs) rmSync(d, { recursive: true, force: true });
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
