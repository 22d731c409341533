import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { REDIS_SERVER } from './sentinel.js';

/**
 * A Redis Cluster of a test's own: 3 masters and 3 replicas from Debian's redis-server on free
 * loopback ports (`--cluster-enabled yes --appendonly yes`, a temporary directory each), joined with
 * `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`; ready once every node says
 * `cluster_state:ok` and every replica is in sync. stop() kills the processes and removes the
 * directories. Without the binaries the tests skip loudly, or fail with REQUIRE_REDIS=1.
 */

export const REDIS_CLI = '/usr/bin/redis-cli';

export function clusterBinariesOrSkip(): boolean {
  const missing = [REDIS_SERVER, REDIS_CLI].filter((b) => !existsSync(b));
  if (missing.length === 0) return true;
  const why = `${missing.join(', ')} missing`;
  if (process.env.REQUIRE_REDIS === '1') throw new Error(`${why} and REQUIRE_REDIS=1`);
  console.warn(`\n${'!'.repeat(72)}\n!! SKIPPING REDIS CLUSTER TESTS: ${why} (apt-get install redis-server).\n${'!'.repeat(72)}\n`);
  return false;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A free port whose cluster bus port (port + 10000) is free too. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await listenable(port)) && (await listenable(port + 10_000))) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
  throw new Error('no free pair of ports for a cluster node');
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

export interface ClusterNode {
  port: number;
  dir: string;
  child: ChildProcess;
  /** A plain (non-cluster) client to this node; disconnect it after use. */
  client(): Redis;
  kill(signal?: NodeJS.Signals): Promise<void>;
  restart(): Promise<void>;
}

export interface RedisClusterSetup {
  nodes: ClusterNode[];
  /** REDIS_CLUSTER_NODES for a hub: every node, host:port comma-separated. */
  seeds: string;
  /** The nodes that are masters now. */
  masters(): Promise<ClusterNode[]>;
  /** The node serving `slot` as master now. */
  masterOfSlot(slot: number): Promise<ClusterNode>;
  /** The node replicating `master` now. */
  replicaOf(master: ClusterNode): Promise<ClusterNode>;
  /**
   * Moves `count` slots (at most all it serves) from the master serving slot 0 to another master
   * with `redis-cli --cluster reshard`, as an operator would while the hubs run; slot 0 upwards go.
   */
  reshardFromFirst(count: number): Promise<{ from: number; to: number; moved: number }>;
  /** Waits until every live node says cluster_state:ok. */
  waitOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

async function nodeClient(port: number): Promise<Redis> {
  const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

async function waitPing(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const c = await nodeClient(port);
      try {
        await c.ping();
        return;
      } finally {
        c.disconnect();
      }
    } catch (err) {
      if (Date.now() > until) throw new Error(`nothing answers on 127.0.0.1:${port}: ${(err as Error).message}`);
    }
    await sleep(50);
  }
}

async function info(port: number, section: string): Promise<string | undefined> {
  try {
    const c = await nodeClient(port);
    try {
      return section === 'cluster' ? String(await c.call('CLUSTER', 'INFO')) : await c.info(section);
    } finally {
      c.disconnect();
    }
  } catch {
    return undefined;
  }
}

/**
 * Starts the cluster. `args` go to every server (e.g. `--appendonly no` for a refusal test);
 * `masters` defaults to 3 and `replicas` (per master) to 1.
 */
export async function startRedisCluster(opts: { args?: string[]; masters?: number; replicas?: number; nodeTimeoutMs?: number } = {}): Promise<RedisClusterSetup> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 1;
  const taken = new Set<number>();
  const nodes: ClusterNode[] = [];
  const stop = async () => {
    for (const n of nodes) {
      await n.kill();
      rmSync(n.dir, { recursive: true, force: true });
    }
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const port = await freeClusterPort(taken);
      const dir = mkdtempSync(join(tmpdir(), 'maru-cluster-'));
      const args = [
        '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--protected-mode', 'no',
        '--appendonly', 'yes', '--appendfsync', 'everysec',
        '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'),
        '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 2000),
        ...(opts.args ?? []),
      ];
      const launch = () => spawn(REDIS_SERVER, args, { stdio: 'ignore' });
      const node: ClusterNode = {
        port,
        dir,
        child: launch(),
        client: () => {
          const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, connectTimeout: 1000 });
          c.on('error', () => undefined);
          return c;
        },
        kill: async (signal = 'SIGKILL') => {
          const c = node.child;
          if (c.exitCode === null && c.signalCode === null && c.pid) process.kill(c.pid, signal);
          await exited(c);
        },
        restart: async () => {
          node.child = launch();
          await waitPing(port);
        },
      };
      nodes.push(node);
    }
    for (const n of nodes) await waitPing(n.port);
    const created = spawnSync(
      REDIS_CLI,
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    const setup: RedisClusterSetup = {
      nodes,
      seeds: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
      masters: async () => {
        const out: ClusterNode[] = [];
        for (const n of nodes) if (/role:master/.test((await info(n.port, 'replication')) ?? '')) out.push(n);
        return out;
      },
      masterOfSlot: async (slot) => {
        for (const n of nodes) {
          if (n.child.exitCode !== null || n.child.signalCode !== null) continue;
          const c = await nodeClient(n.port).catch(() => undefined);
          if (!c) continue;
          try {
            const slots = (await c.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, string]][];
            const range = slots.find(([lo, hi]) => slot >= lo && slot <= hi);
            if (!range) throw new Error(`no master serves slot ${slot}`);
            return nodes.find((x) => x.port === Number(range[2][1]))!;
          } finally {
            c.disconnect();
          }
        }
        throw new Error('no live cluster node answers');
      },
      replicaOf: async (master) => {
        const m = /slave0:ip=[^,]+,port=(\d+)/.exec((await info(master.port, 'replication')) ?? '');
        if (!m) throw new Error(`no replica of ${master.port}`);
        return nodes.find((x) => x.port === Number(m[1]))!;
      },
      reshardFromFirst: async (count) => {
        const ids = await Promise.all(
          (await setup.masters()).map(async (m) => {
            const c = await nodeClient(m.port);
            try {
              return { port: m.port, id: String(await c.call('CLUSTER', 'MYID')), slots: (await c.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][] };
            } finally {
              c.disconnect();
            }
          }),
        );
        const owner = ids.find((m) => m.slots.some(([lo, , node]) => lo === 0 && node[1] === m.port))!;
        const target = ids.find((m) => m !== owner)!;
        const served = owner.slots.filter(([, , node]) => node[1] === owner.port).reduce((n, [lo, hi]) => n + hi - lo + 1, 0);
        const moved = Math.min(count, served);
        const out = spawnSync(
          REDIS_CLI,
          ['--cluster', 'reshard', `127.0.0.1:${owner.port}`, '--cluster-from', owner.id, '--cluster-to', target.id, '--cluster-slots', String(moved), '--cluster-yes'],
          { encoding: 'utf8', timeout: 120_000 },
        );
        if (out.status !== 0) throw new Error(`redis-cli --cluster reshard failed: ${out.stdout}${out.stderr}`);
        return { from: owner.port, to: target.port, moved };
      },
      waitOk: async (timeoutMs = 30_000) => {
        const until = Date.now() + timeoutMs;
        for (;;) {
          const live = nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
          const states = await Promise.all(live.map((n) => info(n.port, 'cluster')));
          if (states.every((s) => s !== undefined && /cluster_state:ok/.test(s))) return;
          if (Date.now() > until) throw new Error(`the cluster did not reach cluster_state:ok within ${timeoutMs} ms`);
          await sleep(100);
        }
      },
      stop,
    };
    await setup.waitOk();
    // every replica in sync with its master before a test relies on a replica
    const until = Date.now() + 30_000;
    for (;;) {
      const roles = await Promise.all(nodes.map((n) => info(n.port, 'replication')));
      const online = roles.filter((r) => r && /role:slave/.test(r) && /master_link_status:up/.test(r)).length;
      if (online >= masters * replicas) break;
      if (Date.now() > until) throw new Error('the cluster replicas did not come in sync');
      await sleep(100);
    }
    return setup;
  } catch (err) {
    await stop();
    throw err;
  }
}
