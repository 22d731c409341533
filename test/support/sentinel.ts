import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/**
 * Redis processes of a test's own, on free loopback ports with temporary directories (never the
 * shared Redis on 6379): a single redis-server, or a Sentinel set-up (one primary, one replica,
 * three Sentinels) from Debian's redis-server and redis-sentinel. Killed and removed by stop().
 * Without the binaries the tests skip loudly, or fail with REQUIRE_REDIS=1.
 */

export const REDIS_SERVER = '/usr/bin/redis-server';
export const REDIS_SENTINEL = '/usr/bin/redis-sentinel';

export function redisBinariesOrSkip(): boolean {
  const missing = [REDIS_SERVER, REDIS_SENTINEL].filter((b) => !existsSync(b));
  if (missing.length === 0) return true;
  const why = `${missing.join(', ')} missing`;
  if (process.env.REQUIRE_REDIS === '1') throw new Error(`${why} and REQUIRE_REDIS=1`);
  console.warn(`\n${'!'.repeat(72)}\n!! SKIPPING SENTINEL TESTS: ${why} (apt-get install redis-server redis-sentinel).\n${'!'.repeat(72)}\n`);
  return false;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitPing(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await c.ping();
      return;
    } catch (err) {
      if (Date.now() > until) throw new Error(`nothing answers on 127.0.0.1:${port}: ${(err as Error).message}`);
    } finally {
      c.disconnect();
    }
    await sleep(50);
  }
}

export interface RedisServerProcess {
  port: number;
  url: string;
  dir: string;
  child: ChildProcess;
  /** Kills the process with `signal` (SIGKILL by default) and waits for its exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and directory (same arguments). */
  restart(): Promise<void>;
  /** A plain client to it (disconnected by the caller). */
  client(): Redis;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

/** Starts a redis-server; `appendonly` defaults to yes (everysec); `args` are added as given. */
export async function startRedisServer(opts: { appendonly?: boolean; args?: string[]; dir?: string; port?: number } = {}): Promise<RedisServerProcess> {
  const port = opts.port ?? (await freePort());
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'maru-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', opts.appendonly === false ? 'no' : 'yes', '--appendfsync', 'everysec', '--protected-mode', 'no', ...(opts.args ?? [])];
  const launch = () => spawn(REDIS_SERVER, args, { stdio: 'ignore' });
  const proc: RedisServerProcess = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    child: launch(),
    kill: async (signal = 'SIGKILL') => {
      const c = proc.child;
      if (c.exitCode === null && c.signalCode === null && c.pid) process.kill(c.pid, signal);
      await exited(c);
    },
    restart: async () => {
      proc.child = launch();
      await waitPing(port);
    },
    client: () => {
      const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, connectTimeout: 1000 });
      c.on('error', () => undefined);
      return c;
    },
  };
  await waitPing(port);
  return proc;
}

export interface SentinelSetup {
  name: string;
  primary: RedisServerProcess;
  replica: RedisServerProcess;
  sentinels: { port: number; child: ChildProcess }[];
  /** REDIS_SENTINELS for a hub. */
  sentinelList: string;
  /** The address the Sentinels give as the primary now. */
  currentPrimary(): Promise<string | undefined>;
  /** Waits until the Sentinels name another primary than `old` (host:port). */
  waitFailover(old: string, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

/** What one Sentinel says of the primary: its address, and whether a failover is in progress. */
async function sentinelView(port: number, name: string): Promise<{ addr: string; failingOver: boolean } | undefined> {
  const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    const flat = (await c.call('SENTINEL', 'MASTER', name)) as string[];
    const m = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) m.set(flat[i]!, flat[i + 1]!);
    return { addr: `${m.get('ip')}:${m.get('port')}`, failingOver: /failover_in_progress|promoted/.test(m.get('flags') ?? '') };
  } catch {
    return undefined;
  } finally {
    c.disconnect();
  }
}

/** Whether the server at `addr` says it is a primary. */
async function isPrimary(addr: string): Promise<boolean> {
  const [host, port] = addr.split(':');
  const c = new Redis({ host, port: Number(port), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return /role:master/.test(await c.info('replication'));
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

/**
 * One primary, one replica and three Sentinels (quorum 2, down-after 1 s) on free loopback ports.
 * `primaryArgs` go to both servers (e.g. min-replicas-to-write).
 */
export async function startSentinelSetup(opts: { name?: string; serverArgs?: string[]; downAfterMs?: number } = {}): Promise<SentinelSetup> {
  const name = opts.name ?? 'maru-test';
  const primary = await startRedisServer({ args: opts.serverArgs });
  const replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(primary.port), ...(opts.serverArgs ?? [])] });
  // the replica is online before the Sentinels look
  const until = Date.now() + 10_000;
  const pc = primary.client();
  while (!/slave0:.*state=online/.test(await pc.info('replication'))) {
    if (Date.now() > until) throw new Error('the replica did not come online');
    await sleep(50);
  }
  pc.disconnect();
  const sentinels: { port: number; child: ChildProcess; dir: string }[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'maru-sentinel-'));
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        'protected-mode no',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${name} ${opts.downAfterMs ?? 1000}`,
        `sentinel failover-timeout ${name} 10000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    const child = spawn(REDIS_SENTINEL, [conf], { stdio: 'ignore' });
    sentinels.push({ port, child, dir });
  }
  for (const s of sentinels) await waitPing(s.port);
  const ask = async (): Promise<string | undefined> => {
    for (const s of sentinels) {
      const c = new Redis({ host: '127.0.0.1', port: s.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
      c.on('error', () => undefined);
      try {
        await c.connect();
        const addr = (await c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string] | null;
        if (addr) return `${addr[0]}:${addr[1]}`;
      } catch {
        // the next Sentinel
      } finally {
        c.disconnect();
      }
    }
    return undefined;
  };
  // the Sentinels know each other and the replica before a test relies on a failover
  const ready = Date.now() + 15_000;
  for (;;) {
    const c = new Redis({ host: '127.0.0.1', port: sentinels[0]!.port, maxRetriesPerRequest: 0 });
    c.on('error', () => undefined);
    const master = new Map<string, string>();
    try {
      const flat = (await c.call('SENTINEL', 'MASTER', name)) as string[];
      for (let i = 0; i + 1 < flat.length; i += 2) master.set(flat[i]!, flat[i + 1]!);
    } finally {
      c.disconnect();
    }
    if (Number(master.get('num-other-sentinels')) >= 2 && Number(master.get('num-slaves')) >= 1) break;
    if (Date.now() > ready) throw new Error('the Sentinels did not discover each other and the replica');
    await sleep(100);
  }
  return {
    name,
    primary,
    replica,
    sentinels,
    sentinelList: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
    currentPrimary: ask,
    // done, not only begun: every Sentinel names the same new primary, none has a failover in
    // progress, and the promoted server says it is a primary (bringing the old one back while a
    // failover can still be aborted would let it win back and resync the new one from itself)
    waitFailover: async (old, timeoutMs = 30_000) => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const views = await Promise.all(sentinels.map((s) => sentinelView(s.port, name)));
        const now = views[0]?.addr;
        if (now && now !== old && views.every((v) => v?.addr === now && !v.failingOver) && (await isPrimary(now))) return now;
        if (Date.now() > end) throw new Error(`no failover away from ${old} within ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    stop: async () => {
      for (const s of sentinels) {
        if (s.child.exitCode === null && s.child.signalCode === null && s.child.pid) process.kill(s.child.pid, 'SIGKILL');
        await exited(s.child);
        rmSync(s.dir, { recursive: true, force: true });
      }
      for (const r of [primary, replica]) {
        await r.kill();
        rmSync(r.dir, { recursive: true, force: true });
      }
    },
  };
}

/** Runs the built hub and waits for it to exit (a refusal at start): its exit code and its output. */
export function runHubUntilExit(main: string, env: Record<string, string>, timeoutMs = 20_000): { code: number | null; output: string } {
  const r = spawnSync(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    encoding: 'utf8',
    timeout: timeoutMs,
  });
  return { code: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}
