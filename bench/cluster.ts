/**
 * The state tier on one Redis primary and on a 3-master Redis Cluster, side by side in one run
 * (docs/partitions.md, docs/deploy.md "Redis Cluster").
 *
 * For each target it starts its own servers (Debian's redis-server on free loopback ports, AOF on:
 * it never touches another Redis) and one hub process on them, then drives a mixed service workload
 * over HTTP for BENCH_MS (default 8000) with --concurrency requests in flight (default 16): document
 * saves, reward work, bookings and check-ins (one write each). Two shapes:
 *   mixed: the writes spread over 200 documents, 600 members and 20 shows;
 *   hot:   every save on one document and every booking and check-in on one show (70% of the
 *          writes on two aggregates: a partition's hot spot; reward work still spreads, as one
 *          member's daily limit would refuse the rest).
 * Measured: acknowledged writes per second; the Redis servers' CPU per write (all of them) and the
 * busiest master's, each server's idle CPU (measured for 4 s before the case) taken off; from the busiest master's share, what the deployment carries when each master
 * has a core of its own (capacity_writes_per_s = 1e6 / busiest master's µs per write: on this
 * 2-core machine the hub, not Redis, limits the measured rate); and after the mixed case the share
 * of the keys each master holds.
 *
 * Prints one JSON line per case:
 *   {"target":"primary"|"cluster","shape":"mixed"|"hot","writes_per_s":N,"errors":N,"refused":{"<kind> <status>":N},
 *    "redis_cpu_us_per_write":N,"busiest_master_cpu_us_per_write":N,"capacity_writes_per_s":N,
 *    "key_share":[..]}
 *
 * Usage: npm run build && node dist/bench/cluster.js [--ms 8000] [--concurrency 16] [--only primary|cluster]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { cpuMs } from './proc.js';
import { freePort, ping, redisServer, sleep, stopAll, tempDirFor } from './redis-servers.js';

const ROOT = join(import.meta.dirname, '..', '..');
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const MS = Number(arg('ms') ?? process.env.BENCH_MS ?? 8000);
const CONCURRENCY = Number(arg('concurrency') ?? 16);
const ONLY = arg('only');
/** How long each server's idle CPU is measured before a case, ms. */
const IDLE_MS = 4000;
const ADMIN_PASSWORD = 'bench-admin-password';

interface Target {
  name: 'primary' | 'cluster';
  env: Record<string, string>;
  /** The servers taking writes (the primary, or the masters). */
  masters: { port: number; pid: number }[];
}

async function primary(): Promise<Target> {
  const s = await redisServer();
  return { name: 'primary', env: { REDIS_URL: `redis://127.0.0.1:${s.port}` }, masters: [{ port: s.port, pid: s.child.pid! }] };
}

async function cluster(): Promise<Target> {
  const nodes: { port: number; pid: number }[] = [];
  for (let i = 0; i < 3; i++) {
    // the cluster bus listens on port + 10000: pick a port whose pair is free too
    let port = 0;
    for (;;) {
      port = await freePort();
      if (port + 10_000 < 65_536) break;
    }
    const dir = tempDirFor('cluster');
    const s = await redisServer(['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-node-timeout', '5000'], { port, dir });
    nodes.push({ port, pid: s.child.pid! });
  }
  const made = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 60_000 });
  if (made.status !== 0) throw new Error(`redis-cli --cluster create: ${made.stdout}${made.stderr}`);
  for (;;) {
    const states = await Promise.all(nodes.map((n) => withClient(n.port, (c) => c.call('CLUSTER', 'INFO') as Promise<string>)));
    if (states.every((s) => /cluster_state:ok/.test(s))) break;
    await sleep(100);
  }
  return { name: 'cluster', env: { REDIS_CLUSTER_NODES: nodes.map((n) => `127.0.0.1:${n.port}`).join(',') }, masters: nodes };
}

async function withClient<T>(port: number, f: (c: Redis) => Promise<T>): Promise<T> {
  await ping(port);
  const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  c.on('error', () => undefined);
  try {
    return await f(c);
  } finally {
    c.disconnect();
  }
}

/** Commands run so far on the target's servers, by command (INFO commandstats, summed). */
async function commandCalls(target: Target): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of target.masters) {
    const text = await withClient(m.port, (c) => c.info('commandstats'));
    for (const [, cmd, n] of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(cmd!, (out.get(cmd!) ?? 0) + Number(n));
  }
  return out;
}

async function startHub(target: Target): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', DATA_DIR: tempDirFor('hub'), TRADING_WORKERS: '1', ADMIN_PASSWORD, REDIS_PREFIX: 'bench:', TRUST_PROXY: '127.0.0.1', ...target.env },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) return { child, url };
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`the hub on ${target.name} did not start`);
}

const json = { 'content-type': 'application/json' };
async function post(url: string, path: string, body: unknown, token?: string, from?: string): Promise<{ status: number; body: any }> {
  const r = await fetch(url + path, { method: 'POST', headers: { ...json, ...(token ? { authorization: `Bearer ${token}` } : {}), ...(from ? { 'x-forwarded-for': from } : {}) }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json().catch(() => undefined) };
}
async function token(url: string, user: string, password: string): Promise<string> {
  const r = await post(url, '/api/auth/login', { user, password });
  if (r.status !== 200) throw new Error(`login ${user}: ${r.status}`);
  return r.body.token;
}

let seats = 0;
const MEMBERS = 600;

interface World {
  admin: string;
  staff: string;
  editor: string;
  members: string[];
  shows: string[];
}

async function world(url: string): Promise<World> {
  const admin = await token(url, 'admin', ADMIN_PASSWORD);
  for (const [user, roles] of [['bench-staff', ['staff']], ['bench-editor', ['editor']]] as const) {
    const r = await post(url, '/api/auth/accounts', { user, password: `${user}-password`, roles }, admin);
    if (r.status !== 201) throw new Error(`account ${user}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const staff = await token(url, 'bench-staff', 'bench-staff-password');
  const editor = await token(url, 'bench-editor', 'bench-editor-password');
  const zone = (await post(url, '/culture', { country: 'KR', lang: 'ko', name: 'bench' }, admin)).body.id as string;
  // enough members that no one reaches the day's limit of work units during a case
  const members = await Promise.all(Array.from({ length: MEMBERS }, async (_, i) => (await post(url, '/api/reward/members', { name: `m${i}`, zone }, admin)).body.id as string));
  const shows = await Promise.all(Array.from({ length: 20 }, async (_, i) => (await post(url, '/api/shows', { name: `show ${i}`, venue: 'hall', date: '2026-12-31' }, staff)).body.id as string));
  return { admin, staff, editor, members, shows };
}

async function drive(url: string, w: World, shape: 'mixed' | 'hot'): Promise<{ writes: number; errors: number; refused: Record<string, number>; ms: number }> {
  let writes = 0;
  let errors = 0;
  const refused: Record<string, number> = {};
  const any = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
  const pick = <T>(xs: T[]) => (shape === 'hot' ? xs[0]! : any(xs));
  const docs = Array.from({ length: 200 }, (_, i) => `bench-${i}`);
  const ok = (s: number, what: string) => {
    if (s >= 200 && s < 300) return void writes++;
    errors++;
    refused[`${what} ${s}`] = (refused[`${what} ${s}`] ?? 0) + 1;
  };
  const started = performance.now();
  const end = started + MS;
  // each worker is a device of its own (its address forwarded by a trusted proxy): the per-address
  // limits (600 check-ins a minute at one door) hold per device, as at a real venue
  const worker = async (_: unknown, n: number) => {
    const from = `10.9.${n >> 8}.${n & 255}`;
    while (performance.now() < end) {
      const r = Math.random();
      if (r < 0.3) {
        ok((await post(url, '/api/md/save', { slug: pick(docs), content: `# ${Math.random()}\n` }, w.editor, from)).status, 'save');
      } else if (r < 0.6) {
        const res = await fetch(`${url}/work?id=${any(w.members)}&kc=1&v=100`, { headers: { authorization: `Bearer ${w.admin}`, 'x-forwarded-for': from } });
        await res.arrayBuffer();
        ok(res.status, 'work');
      } else {
        const booked = await post(url, '/api/reservations', { show_id: pick(w.shows), seat: `S-${++seats}`, amount_paid: 1000 }, w.staff, from);
        ok(booked.status, 'booking');
        if (booked.status === 201) ok((await post(url, '/api/checkin', { code: booked.body.code, source: 'camera', scanner: `bench-${n}` }, w.staff, from)).status, 'check-in');
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { writes, errors, refused, ms: performance.now() - started };
}

async function runTarget(target: Target): Promise<void> {
  const hub = await startHub(target);
  try {
    const w = await world(hub.url);
    for (const shape of ['mixed', 'hot'] as const) {
      // what each server spends with no request (a cluster's gossip and cron): taken off the case's CPU
      const idleStart = target.masters.map((m) => cpuMs(m.pid));
      const idleT = performance.now();
      await sleep(IDLE_MS);
      const idlePerMs = target.masters.map((m, i) => (cpuMs(m.pid) - idleStart[i]!) / (performance.now() - idleT));
      const before = target.masters.map((m) => cpuMs(m.pid));
      const callsBefore = await commandCalls(target);
      const r = await drive(hub.url, w, shape);
      const callsAfter = await commandCalls(target);
      const calls = [...callsAfter].map(([cmd, n]) => [cmd, n - (callsBefore.get(cmd) ?? 0)] as const).sort((a, b) => b[1] - a[1]);
      const perWrite = (n: number) => Math.round((n / Math.max(1, r.writes)) * 10) / 10;
      const used = target.masters.map((m, i) => Math.max(0, cpuMs(m.pid) - before[i]! - idlePerMs[i]! * r.ms));
      const total = used.reduce((a, b) => a + b, 0);
      const busiest = Math.max(...used);
      const us = (ms: number) => Math.round(((ms * 1000) / Math.max(1, r.writes)) * 10) / 10;
      const sizes = await Promise.all(target.masters.map((m) => withClient(m.port, (c) => c.dbsize())));
      const keys = sizes.reduce((a, b) => a + b, 0);
      console.log(
        JSON.stringify({
          target: target.name,
          shape,
          writes_per_s: Math.round((r.writes * 1000) / r.ms),
          errors: r.errors,
          refused: r.refused,
          redis_cpu_us_per_write: us(total),
          busiest_master_cpu_us_per_write: us(busiest),
          capacity_writes_per_s: busiest > 0 ? Math.round(1e6 / us(busiest)) : null,
          key_share: sizes.map((n) => Math.round((n / Math.max(1, keys)) * 1000) / 1000),
          redis_calls_per_write: perWrite(calls.reduce((a, [, n]) => a + n, 0)),
          top_calls_per_write: Object.fromEntries(calls.slice(0, 6).map(([cmd, n]) => [cmd, perWrite(n)])),
        }),
      );
    }
  } finally {
    hub.child.kill('SIGKILL');
  }
}

try {
  if (ONLY !== 'cluster') await runTarget(await primary());
  if (ONLY !== 'primary') await runTarget(await cluster());
} finally {
  await stopAll();
}
