/**
 * bench/checkin: check-ins per second and latency percentiles of the check-in state machine on LMDB
 * and on Redis, and the live feedback latency to 50 WebSocket scanners. Prints one JSON object.
 *
 *   npm run build && node dist/bench/checkin.js [--tickets 20000] [--concurrency 32] [--seconds 8]
 *                                               [--scanners 50] [--feedback 100]
 *
 * Throughput: TicketService.checkInByCode (code lookup + one atomic update that flips the status and
 * appends the audit entry and the check-in list, then the bus publish) on distinct booked tickets,
 * `concurrency` in flight, until every ticket is in or `seconds` pass. Contention: 50 simultaneous
 * check-ins of one ticket (exactly one must succeed), repeated. Feedback: a hub (startMaru, LMDB)
 * with `scanners` WebSocket clients subscribed to the "checkins" topic; each of `feedback` HTTP
 * check-ins is timed from the request's start to its arrival at every scanner. Redis comes from
 * REDIS_URL (default redis://127.0.0.1:6379); when it does not answer its figures are null.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import WebSocket from 'ws';
import { startMaru } from '../src/app.js';
import { createBus } from '../src/bus.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { openLmdbStore } from '../src/store/lmdb.js';
import type { Store } from '../src/store/port.js';
import { openRedisStore } from '../src/store/redis.js';
import { TicketService } from '../src/ticket/service.js';
import { dropRedisPrefix } from './redis-prefix.js';

const { values } = parseArgs({
  options: {
    tickets: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '8' },
    scanners: { type: 'string', default: '50' },
    feedback: { type: 'string', default: '100' },
  },
});
const TICKETS = Number(values.tickets);
const CONCURRENCY = Number(values.concurrency);
const SECONDS = Number(values.seconds);
const SCANNERS = Number(values.scanners);
const FEEDBACK = Number(values.feedback);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const ms = (x: number) => +x.toFixed(3);
function summary(lat: number[]) {
  const s = [...lat].sort((a, b) => a - b);
  return { p50_ms: ms(pct(s, 50)), p99_ms: ms(pct(s, 99)), max_ms: ms(s[s.length - 1] ?? 0) };
}

async function storeRun(store: Store) {
  const bus = createBus(store, `bench-${process.pid}`);
  await bus.start();
  const service = new TicketService({ store, clock: systemClock, bus });
  const show = await service.createShow({ name: 'bench', venue: 'bench hall', date: '2026-12-31' });
  const codes: string[] = [];
  for (let i = 0; i < TICKETS; i += 64) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(64, TICKETS - i) }, (_, j) => service.reserve({ show_id: show.id, seat: `S-${i + j}`, amount_paid: 1000 })),
    );
    codes.push(...batch.map((t) => t.code));
  }

  // distinct tickets, `CONCURRENCY` in flight
  const lat: number[] = [];
  let next = 0;
  let ok = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < codes.length && performance.now() < deadline) {
        const code = codes[next++]!;
        const t0 = performance.now();
        const r = await service.checkInByCode(code, { scanner: 'bench', source: 'camera' });
        lat.push(performance.now() - t0);
        if (r.status === 'ok') ok++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;

  // contention: 50 simultaneous check-ins of one ticket, 20 rounds
  const contended: number[] = [];
  let exactlyOne = true;
  const rounds = 20;
  const spare = await Promise.all(
    Array.from({ length: rounds }, (_, i) => service.reserve({ show_id: show.id, seat: `C-${i}`, amount_paid: 1 })),
  );
  const cStart = performance.now();
  for (const t of spare) {
    const res = await Promise.allSettled(
      Array.from({ length: 50 }, async () => {
        const t0 = performance.now();
        try {
          return await service.checkInByCode(t.code, { scanner: 'race', source: 'camera' });
        } finally {
          contended.push(performance.now() - t0);
        }
      }),
    );
    if (res.filter((r) => r.status === 'fulfilled').length !== 1) exactlyOne = false;
  }
  const cElapsed = (performance.now() - cStart) / 1000;
  await bus.close();
  return {
    checkins: ok,
    seconds: +elapsed.toFixed(3),
    checkins_per_s: Math.round(ok / elapsed),
    ...summary(lat),
    contended: {
      rounds,
      attempts_per_round: 50,
      exactly_one_success_each_round: exactlyOne,
      attempts_per_s: Math.round((rounds * 50) / cElapsed),
      ...summary(contended),
    },
  };
}

async function feedbackRun() {
  const maru = await startMaru(
    loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: mkdtempSync(join(tmpdir(), 'maru-bench-fb-')), LOG_LEVEL: 'silent', ADMIN_PASSWORD: 'bench-admin-password', CONN_MAX_PER_IDENTITY: '0' }),
    { logger: pino({ level: 'silent' }) },
  );
  try {
    // the operator may do every staff action: its token books, checks in and subscribes
    const token = (await (
      await fetch(maru.url + '/api/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'admin', password: 'bench-admin-password' }) })
    ).json() as { token: string }).token;
    const pending = new Map<string, { t0: number; seen: number; resolve: () => void }>();
    const lat: number[] = [];
    const lastOf: number[] = [];
    const sockets = await Promise.all(
      Array.from(
        { length: SCANNERS },
        () =>
          new Promise<WebSocket>((resolve, reject) => {
            const ws = new WebSocket(maru.url.replace(/^http/, 'ws') + '/ws');
            ws.on('open', () => {
              ws.send(JSON.stringify({ type: 'auth', token }));
              ws.send(JSON.stringify({ type: 'subscribe', topic: 'checkins' }));
            });
            ws.on('message', (d) => {
              const f = JSON.parse(String(d));
              if (f.type === 'subscribed') return resolve(ws);
              if (f.type === 'error') return reject(new Error(f.message));
              if (f.type !== 'message') return;
              const p = pending.get(f.data.code);
              if (!p) return;
              const dt = performance.now() - p.t0;
              lat.push(dt);
              if (++p.seen === SCANNERS) {
                lastOf.push(dt);
                p.resolve();
              }
            });
            ws.on('error', reject);
          }),
      ),
    );
    const post = (path: string, body: unknown): Promise<any> =>
      fetch(maru.url + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) }).then((r) => r.json());
    const show = await post('/api/shows', { name: 'feedback', venue: 'hall', date: '2026-12-31' });
    let delivered = 0;
    for (let i = 0; i < FEEDBACK; i++) {
      const t = await post('/api/reservations', { show_id: show.id, seat: `F-${i}`, amount_paid: 1 });
      const all = new Promise<void>((resolve) => pending.set(t.code, { t0: performance.now(), seen: 0, resolve }));
      const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 2000).unref());
      await post('/api/checkin', { code: t.code, source: 'camera', scanner: 'bench' });
      if ((await Promise.race([all, timeout])) !== 'timeout') delivered++;
      pending.delete(t.code);
    }
    for (const ws of sockets) ws.close();
    return {
      scanners: SCANNERS,
      checkins: FEEDBACK,
      all_scanners_reached: delivered,
      measured_from: 'start of the HTTP check-in request',
      per_scanner: summary(lat),
      last_scanner: summary(lastOf),
    };
  } finally {
    await maru.stop();
  }
}

async function redisStore(): Promise<Store | { error: string }> {
  try {
    const store = await openRedisStore({ url: REDIS_URL, prefix: `bench:checkin:${randomBytes(4).toString('hex')}:` });
    await store.ping();
    return store;
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const lmdb = await openLmdbStore({ path: mkdtempSync(join(tmpdir(), 'maru-bench-checkin-')) });
const lmdbResult = await storeRun(lmdb);
await lmdb.close();

let redisResult: unknown = null;
const r = await redisStore();
if ('error' in r) redisResult = { skipped: r.error };
else {
  redisResult = await storeRun(r);
  await r.close();
}
// the bench's Redis keys are not kept
await dropRedisPrefix(REDIS_URL, 'bench:checkin:').catch(() => undefined);

const feedback = await feedbackRun();

console.log(
  JSON.stringify({
    bench: 'checkin',
    node: process.version,
    cpus: cpus().length,
    params: { tickets: TICKETS, concurrency: CONCURRENCY, seconds_cap: SECONDS },
    lmdb: lmdbResult,
    redis: redisResult,
    feedback,
  }),
);
process.exit(0);
