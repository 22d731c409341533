/**
 * bench/collab: one writer and SUBSCRIBERS idle readers on one document, against maru's /yjs
 * endpoint (uWS, y-protocols) and, in the same run, the reference y-websocket server
 * (@y/websocket-server on `ws`, its stock bin). Each server runs in its own child process; the
 * writer runs here and the readers in `--clients` worker threads (default 2): each reader is a
 * minimal WebSocket client on a raw TCP socket that only counts update frames, so the clients'
 * own cost (100,000 frames a second) weighs as little as possible on what is measured. Times are absolute (timeOrigin + now) across threads.
 *
 *   npm run build && node dist/bench/collab.js [--subscribers 1000] [--paced 300] [--rate 100] [--burst 300]
 *
 * maru's clients connect as a signed-in editor (the token as `access_token`, as browsers do).
 *
 * - latency: the writer sends `paced` Yjs updates at `rate` per second; a subscriber's k-th update frame
 *   (type 0/2) is the writer's k-th; latency = receive time - send time (same clock), p50/p99.
 * - deliveries/s: `burst` updates sent back to back; deliveries (subscribers x updates) divided by
 *   the time from the first send to the last delivery.
 * - memory per idle connection: server RSS (from /proc) after all subscribers connected and the
 *   sync handshake settled, minus RSS before, divided by subscribers.
 * Prints one JSON object. `--only maru` skips the reference; `--cpu-prof <dir>` runs maru's process
 * under `node --cpu-prof` and stops it with SIGTERM so the profile is written to <dir>.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import * as encoding from 'lib0/encoding';
import WebSocket from 'ws';
import * as Y from 'yjs';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const SUBSCRIBERS = arg('subscribers', 1000);
const CLIENTS = arg('clients', 2);
const PACED = arg('paced', 300);
const RATE = arg('rate', 100);
const BURST = arg('burst', 300);
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
const clock = () => performance.timeOrigin + performance.now();

/**
 * A minimal WebSocket reader on a raw TCP socket: the upgrade request, then server frames parsed in
 * place (unmasked, as servers send them) without one event or Buffer per frame, so a reader thread
 * costs little next to the server under test. Calls `onUpdate` for every y-websocket update frame
 * (payload 0, 2, ...); close and ping frames are ignored (the bench ends by destroying the socket).
 */
function rawReader(url: string, onUpdate: () => void): Promise<Socket> {
  const u = new URL(url);
  return new Promise((res, rej) => {
    const sock = connect(Number(u.port), u.hostname);
    sock.setNoDelay(true);
    let upgraded = false;
    let buf: Buffer = Buffer.alloc(0);
    sock.on('connect', () => {
      const key = randomBytes(16).toString('base64');
      sock.write(`GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    });
    sock.on('data', (chunk: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!buf.subarray(0, 12).toString().includes('101')) return rej(new Error(buf.subarray(0, end).toString()));
        upgraded = true;
        buf = buf.subarray(end + 4);
        res(sock);
      }
      let at = 0;
      while (buf.length - at >= 2) {
        let len = buf[at + 1]! & 0x7f;
        let head = 2;
        if (len === 126) {
          if (buf.length - at < 4) break;
          len = buf.readUInt16BE(at + 2);
          head = 4;
        } else if (len === 127) {
          if (buf.length - at < 10) break;
          len = Number(buf.readBigUInt64BE(at + 2));
          head = 10;
        }
        if (buf.length - at < head + len) break;
        const opcode = buf[at]! & 0x0f;
        if (opcode === 2 && len >= 2 && buf[at + head] === 0 && buf[at + head + 1] === 2) onUpdate();
        at += head + len;
      }
      buf = at === buf.length ? Buffer.alloc(0) : buf.subarray(at);
    });
    sock.on('error', rej);
  });
}

/** A reader thread: opens `count` sockets, records when each receives its k-th update frame. */
function readerThread(): void {
  const { url, count, total } = workerData as { url: string; count: number; total: number };
  const times: Float64Array[] = [];
  let delivered = 0;
  const socks: Socket[] = [];
  const open = async () => {
    for (let i = 0; i < count; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, count - i) }, () => {
          const t = new Float64Array(total).fill(NaN);
          times.push(t);
          let k = 0;
          return rawReader(url, () => {
            if (k < total) t[k] = clock();
            k++;
            delivered++;
          });
        }),
      );
      socks.push(...batch);
    }
    parentPort!.postMessage({ type: 'open' });
  };
  parentPort!.on('message', (m: { type: string }) => {
    if (m.type === 'count') parentPort!.postMessage({ type: 'count', delivered });
    if (m.type === 'report') {
      for (const s of socks) s.destroy();
      parentPort!.postMessage({ type: 'report', times });
    }
  });
  void open();
}

/** The reader threads as one group: open, count deliveries, collect the receive times. */
async function readers(url: string, total: number) {
  const workers = Array.from({ length: CLIENTS }, (_, i) => {
    const count = Math.floor(SUBSCRIBERS / CLIENTS) + (i < SUBSCRIBERS % CLIENTS ? 1 : 0);
    return new Worker(new URL(import.meta.url), { workerData: { url, count, total } });
  });
  const ask = <T>(w: Worker, type: string) => new Promise<T>((res) => {
    const on = (m: { type: string }) => {
      if (m.type !== type) return;
      w.off('message', on);
      res(m as T);
    };
    w.on('message', on);
    if (type !== 'open') w.postMessage({ type });
  });
  await Promise.all(workers.map((w) => ask(w, 'open')));
  return {
    delivered: async () => (await Promise.all(workers.map((w) => ask<{ delivered: number }>(w, 'count')))).reduce((a, c) => a + c.delivered, 0),
    report: async () => {
      const parts = await Promise.all(workers.map((w) => ask<{ times: Float64Array[] }>(w, 'report')));
      await Promise.all(workers.map((w) => w.terminate()));
      return parts.flatMap((p) => p.times);
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

/** CPU time (user + system) of a process in ms, from /proc (10 ms ticks). */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
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

async function startServer(kind: 'maru' | 'reference'): Promise<{ child: ChildProcess; url: string; query: string }> {
  const port = await freePort();
  const child =
    kind === 'maru'
      ? spawn(process.execPath, [...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : []), join(ROOT, 'dist/src/main.js')], {
          cwd: ROOT,
          env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', DATA_DIR: mkdtempSync(join(tmpdir(), 'maru-bench-collab-')), TRADING_WORKERS: '1', ADMIN_PASSWORD },
          stdio: 'ignore',
        })
      : spawn(process.execPath, [join(ROOT, 'node_modules/@y/websocket-server/src/server.js')], {
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

function frame(update: Uint8Array): Uint8Array {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, 0);
  encoding.writeVarUint(enc, 2);
  encoding.writeVarUint8Array(enc, update);
  return encoding.toUint8Array(enc);
}

async function run(kind: 'maru' | 'reference') {
  const { child, url, query } = await startServer(kind);
  const room = `bench-${kind}`;
  try {
    await sleep(500);
    const before = rss(child.pid!);
    const sent: number[] = [];
    const group = await readers(`${url}/${room}${query}`, PACED + BURST);
    await sleep(1500);
    const after = rss(child.pid!);

    const writer = new WebSocket(`${url}/${room}${query}`, { perMessageDeflate: false });
    await new Promise((r) => writer.on('open', r));
    await sleep(200);
    const doc = new Y.Doc();
    const text = doc.getText('content');
    let pending: Uint8Array | undefined;
    doc.on('update', (u: Uint8Array) => (pending = u));
    const send = () => {
      text.insert(text.length, 'x');
      sent.push(clock());
      writer.send(frame(pending!));
    };
    // paced on a schedule (not sleep after send), so the rate holds when timers run late
    const cpu0 = cpuMs(child.pid!);
    const start = performance.now();
    for (let i = 0; i < PACED; i++) {
      send();
      const due = start + ((i + 1) * 1000) / RATE;
      await sleep(Math.max(0, due - performance.now()));
    }
    const pacedTarget = PACED * SUBSCRIBERS;
    for (let i = 0; i < 400 && (await group.delivered()) < pacedTarget; i++) await sleep(25);

    const pacedCpu = cpuMs(child.pid!) - cpu0;
    const t0 = clock();
    for (let i = 0; i < BURST; i++) send();
    const target = (PACED + BURST) * SUBSCRIBERS;
    for (let i = 0; i < 1200 && (await group.delivered()) < target; i++) await sleep(25);
    const times = await group.report();
    const latencies: number[] = [];
    let pacedDelivered = 0;
    let deliveries = 0;
    let lastDelivery = t0;
    for (const t of times) {
      for (let k = 0; k < PACED; k++) if (!Number.isNaN(t[k]!)) (pacedDelivered++, latencies.push(t[k]! - sent[k]!));
      for (let k = PACED; k < PACED + BURST; k++) if (!Number.isNaN(t[k]!)) (deliveries++, (lastDelivery = Math.max(lastDelivery, t[k]!)));
    }
    const seconds = (lastDelivery - t0) / 1000;
    latencies.sort((a, b) => a - b);
    const out = {
      server: kind === 'maru' ? 'maru (uWS, y-protocols)' : '@y/websocket-server 0.1.1 (ws)',
      subscribers: SUBSCRIBERS,
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

if (!isMainThread) {
  readerThread();
} else {
const maru = await run('maru');
if (ONLY === 'maru') {
  console.log(JSON.stringify({ bench: 'collab', node: process.version, maru }, null, 2));
  process.exit(0);
}
await sleep(500);
const reference = await run('reference');
console.log(
  JSON.stringify(
    {
      bench: 'collab',
      node: process.version,
      maru,
      reference,
      ratio: {
        deliveries_per_s: r2(maru.deliveries_per_s / Math.max(1, reference.deliveries_per_s)),
        p99: r2(maru.latency_ms.p99 / Math.max(0.01, reference.latency_ms.p99)),
        memory_per_connection: r2(maru.memory_per_idle_connection_kb / Math.max(0.01, reference.memory_per_idle_connection_kb)),
      },
    },
    null,
    2,
  ),
);
process.exit(0);
}
