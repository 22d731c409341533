/**
 * bench/collab: one writer and SUBSCRIBERS idle readers on one document, against maru's /yjs
 * endpoint (uWS, y-protocols) and, in the same run, the reference y-websocket server
 * (@y/websocket-server on `ws`, its stock bin) and Hocuspocus (@hocuspocus/server, as its
 * documentation starts it: bench/hocuspocus-server.ts; its clients speak its multiplexed form of
 * the protocol, the document name before each message, after an Auth message). Each server runs in its own child process; the
 * writer runs here and the readers in one more process, bench/collab-reader.c (built at start with
 * the system's `cc`): every subscriber's socket on one epoll thread that parses the frames in place
 * and records when each update frame arrives. In use the clients run on other machines; here they
 * share the two cores with the server, so they are made as cheap per frame as a client can be
 * (100,000 frames a second at 1,000 readers). Send and receive times are both on CLOCK_MONOTONIC.
 *
 *   npm run build && node dist/bench/collab.js [--subscribers 1000] [--warmup 50] [--paced 300] [--rate 100] [--burst 300]
 *
 * maru's clients connect as a signed-in editor (the token as `access_token`, as browsers do).
 *
 * - warm-up: `warmup` updates at `rate` per second first, left out of every figure (the same for
 *   both servers: the first edits on a fresh process run while its code is being compiled).
 * - latency: the writer sends `paced` Yjs updates at `rate` per second; a subscriber's k-th update frame
 *   (type 0/2) is the writer's k-th; latency = receive time - send time (same clock), p50/p99.
 * - deliveries/s: `burst` updates sent back to back; deliveries (subscribers x updates) divided by
 *   the time from the first send to the last delivery.
 * - memory per idle connection: server RSS (from /proc) after all subscribers connected and the
 *   sync handshake settled, minus RSS before, divided by subscribers.
 * Prints one JSON object. `--only maru` skips the peers; `--cpu-prof <dir>` runs maru's process
 * under `node --cpu-prof` and stops it with SIGTERM so the profile is written to <dir>.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as encoding from 'lib0/encoding';
import { cpuMs, rssBytes } from './proc.js';
import WebSocket from 'ws';
import * as Y from 'yjs';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const SUBSCRIBERS = arg('subscribers', 1000);
const PACED = arg('paced', 300);
const RATE = arg('rate', 100);
const BURST = arg('burst', 300);
/** Updates sent at `rate` first and left out of every figure (the first edits on a fresh server pay for its compiler). */
const WARMUP = arg('warmup', 50);
const ROOT = resolve(import.meta.dirname, '../..');
const flag = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const CPU_PROF = flag('cpu-prof');
const ONLY = flag('only');

const pct = (s: number[], p: number) => (s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : 0);
const r2 = (x: number) => Math.round(x * 100) / 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Milliseconds on CLOCK_MONOTONIC (process.hrtime), the clock the readers record with. */
const clock = () => Number(process.hrtime.bigint()) / 1e6;

/**
 * The readers as one group: one process of bench/collab-reader.c (epoll, one thread) holding every
 * subscriber's socket, built here with the system's C compiler. Its receive times are on
 * CLOCK_MONOTONIC, the clock of `clock()` below.
 */
async function readers(url: string, total: number, hocuspocusDoc?: string) {
  const u = new URL(url);
  const dir = mkdtempSync(join(tmpdir(), 'maru-bench-readers-'));
  const bin = join(dir, 'collab-reader');
  const built = spawnSync('cc', ['-O2', '-o', bin, join(ROOT, 'bench/collab-reader.c')], { encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`cannot build bench/collab-reader.c (needs cc: apt-get install gcc): ${built.error ?? built.stderr}`);
  const timesFile = join(dir, 'times.bin');
  const child = spawn(bin, [u.hostname, u.port, u.pathname + u.search, String(SUBSCRIBERS), String(total), timesFile, ...(hocuspocusDoc ? [hocuspocusDoc] : [])], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    const parts = (partial + d).split('\n');
    partial = parts.pop()!;
    for (const line of parts) (waiting.shift() ?? ((l: string) => lines.push(l)))(line);
  });
  const exited = new Promise<never>((_, rej) => child.once('exit', (code) => rej(new Error(`collab-reader exited with ${code}`))));
  const next = () => Promise.race([lines.length ? Promise.resolve(lines.shift()!) : new Promise<string>((res) => waiting.push(res)), exited]);
  const ask = async (cmd: string) => {
    child.stdin!.write(cmd + '\n');
    return next();
  };
  if ((await next()) !== 'open') throw new Error('collab-reader did not open its sockets');
  return {
    delivered: async () => Number((await ask('count')).split(' ')[1]),
    report: async () => {
      await ask('report');
      const all = new Float64Array(readFileSync(timesFile).buffer.slice(0));
      return Array.from({ length: SUBSCRIBERS }, (_, i) => all.subarray(i * total, (i + 1) * total));
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}


const ADMIN_PASSWORD = 'bench-admin-password';

/** An editor's token on the bench hub: the operator makes the account, the editor logs in. */
async function editorToken(http: string): Promise<string> {
  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(http + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { token: string };
  };
  const admin = (await post('/api/auth/login', { user: 'admin', password: ADMIN_PASSWORD })).token;
  await post('/api/auth/accounts', { user: 'bench', password: 'bench-editor-password', roles: ['editor'] }, admin);
  return (await post('/api/auth/login', { user: 'bench', password: 'bench-editor-password' })).token;
}

type Kind = 'maru' | 'reference' | 'hocuspocus';

async function startServer(kind: Kind): Promise<{ child: ChildProcess; url: string; query: string }> {
  const port = await freePort();
  const child =
    kind === 'maru'
      ? spawn(process.execPath, [...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : []), join(ROOT, 'dist/src/main.js')], {
          cwd: ROOT,
          env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', DATA_DIR: mkdtempSync(join(tmpdir(), 'maru-bench-collab-')), TRADING_WORKERS: '1', ADMIN_PASSWORD, CONN_MAX_PER_ADDRESS: '0', CONN_MAX_PER_IDENTITY: '0' },
          stdio: 'ignore',
        })
      : spawn(process.execPath, [kind === 'reference' ? join(ROOT, 'node_modules/@y/websocket-server/src/server.js') : join(ROOT, 'dist/bench/hocuspocus-server.js')], {
          cwd: ROOT,
          env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port) },
          stdio: 'ignore',
        });
  const url = kind === 'maru' ? `ws://127.0.0.1:${port}/yjs` : `ws://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((r) => {
      if (kind === 'maru') return void fetch(`http://127.0.0.1:${port}/healthz`).then((res) => r(res.ok), () => r(false));
      const w = new WebSocket(`${url}/probe`);
      w.on('open', () => (w.close(), r(true)));
      w.on('error', () => r(false));
    });
    if (ok) return { child, url, query: kind === 'maru' ? `?access_token=${await editorToken(`http://127.0.0.1:${port}`)}` : '' };
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`${kind} server did not start`);
}

/** A y-websocket update message; for Hocuspocus, its multiplexed form (the document name first). */
function frame(update: Uint8Array, hocuspocusDoc?: string): Uint8Array {
  const enc = encoding.createEncoder();
  if (hocuspocusDoc) encoding.writeVarString(enc, hocuspocusDoc);
  encoding.writeVarUint(enc, 0);
  encoding.writeVarUint(enc, 2);
  encoding.writeVarUint8Array(enc, update);
  return encoding.toUint8Array(enc);
}

/** Hocuspocus's Auth message for a document (type 2, token submessage 0, an empty token). */
function hocuspocusAuth(doc: string): Uint8Array {
  const enc = encoding.createEncoder();
  encoding.writeVarString(enc, doc);
  encoding.writeVarUint(enc, 2);
  encoding.writeVarUint(enc, 0);
  encoding.writeVarString(enc, '');
  return encoding.toUint8Array(enc);
}

async function run(kind: Kind) {
  const { child, url, query } = await startServer(kind);
  const room = `bench-${kind}`;
  const hdoc = kind === 'hocuspocus' ? room : undefined;
  try {
    await sleep(500);
    const before = rssBytes(child.pid!);
    const sent: number[] = [];
    const group = await readers(`${url}/${room}${query}`, WARMUP + PACED + BURST, hdoc);
    await sleep(1500);
    const after = rssBytes(child.pid!);

    const writer = new WebSocket(`${url}/${room}${query}`, { perMessageDeflate: false });
    await new Promise((r) => writer.on('open', r));
    if (hdoc) writer.send(hocuspocusAuth(hdoc));
    await sleep(200);
    const doc = new Y.Doc();
    const text = doc.getText('content');
    let pending: Uint8Array | undefined;
    doc.on('update', (u: Uint8Array) => (pending = u));
    const send = () => {
      text.insert(text.length, 'x');
      sent.push(clock());
      writer.send(frame(pending!, hdoc));
    };
    // paced on a schedule (not sleep after send), so the rate holds when timers run late
    const paced = async (n: number) => {
      const start = performance.now();
      for (let i = 0; i < n; i++) {
        send();
        const due = start + ((i + 1) * 1000) / RATE;
        await sleep(Math.max(0, due - performance.now()));
      }
      const target = sent.length * SUBSCRIBERS;
      for (let i = 0; i < 400 && (await group.delivered()) < target; i++) await sleep(25);
    };
    await paced(WARMUP);
    const cpu0 = cpuMs(child.pid!);
    await paced(PACED);

    const pacedCpu = cpuMs(child.pid!) - cpu0;
    const t0 = clock();
    for (let i = 0; i < BURST; i++) send();
    const target = (WARMUP + PACED + BURST) * SUBSCRIBERS;
    for (let i = 0; i < 1200 && (await group.delivered()) < target; i++) await sleep(25);
    const times = await group.report();
    const latencies: number[] = [];
    let pacedDelivered = 0;
    let deliveries = 0;
    let lastDelivery = t0;
    for (const t of times) {
      for (let k = WARMUP; k < WARMUP + PACED; k++) if (!Number.isNaN(t[k]!)) (pacedDelivered++, latencies.push(t[k]! - sent[k]!));
      for (let k = WARMUP + PACED; k < WARMUP + PACED + BURST; k++) if (!Number.isNaN(t[k]!)) (deliveries++, (lastDelivery = Math.max(lastDelivery, t[k]!)));
    }
    const seconds = (lastDelivery - t0) / 1000;
    latencies.sort((a, b) => a - b);
    const out = {
      server: kind === 'maru' ? 'maru (uWS, y-protocols)' : kind === 'reference' ? '@y/websocket-server 0.1.1 (ws)' : '@hocuspocus/server 3.4.4 (ws)',
      subscribers: SUBSCRIBERS,
      warmup_updates: WARMUP,
      paced_updates: PACED,
      paced_rate_per_s: RATE,
      paced_delivered: pacedDelivered,
      server_cpu_ms_per_paced_update: r2(pacedCpu / PACED),
      latency_ms: { p50: r2(pct(latencies, 50)), p99: r2(pct(latencies, 99)), max: r2(latencies.at(-1) ?? 0) },
      burst_updates: BURST,
      burst_delivered: deliveries,
      deliveries_per_s: Math.round(deliveries / Math.max(seconds, 1e-3)),
      memory_per_idle_connection_kb: r2((after - before) / SUBSCRIBERS / 1024),
      server_rss_mb: r2(after / 1048576),
    };
    writer.close();
    return out;
  } finally {
    if (kind === 'maru' && CPU_PROF) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    } else child.kill('SIGKILL');
  }
}

const maru = await run('maru');
if (ONLY === 'maru') {
  console.log(JSON.stringify({ bench: 'collab', node: process.version, maru }, null, 2));
  process.exit(0);
}
await sleep(500);
const reference = await run('reference');
await sleep(500);
const hocuspocus = await run('hocuspocus');
const ratio = (peer: typeof maru) => ({
  deliveries_per_s: r2(maru.deliveries_per_s / Math.max(1, peer.deliveries_per_s)),
  p99: r2(maru.latency_ms.p99 / Math.max(0.01, peer.latency_ms.p99)),
  memory_per_connection: r2(maru.memory_per_idle_connection_kb / Math.max(0.01, peer.memory_per_idle_connection_kb)),
});
console.log(
  JSON.stringify(
    {
      bench: 'collab',
      node: process.version,
      maru,
      reference,
      hocuspocus,
      ratio: { reference: ratio(reference), hocuspocus: ratio(hocuspocus) },
    },
    null,
    2,
  ),
);
process.exit(0);
