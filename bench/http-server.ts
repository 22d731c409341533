/**
 * One side of bench/http: serves GET /member and GET /work from the same RewardService on a fresh
 * LMDB store, either on the maru hub (uWS) or on Fastify, with the same zod schemas and the same
 * error shape; or (`uws`) GET /healthz from a bare uWS handler, the floor the hub's own /healthz is
 * measured against. Seeds `members` members first, then prints `READY <port>` on stdout.
 *
 *   node dist/bench/http-server.js maru|fastify|uws <members>
 */
import Fastify from 'fastify';
import pino from 'pino';
import { createBus } from '../src/bus.js';
import { offsetClock } from '../src/clock.js';
import { AppError, errorBody } from '../src/errors.js';
import { memberQuery, workQuery } from '../src/reward/routes.js';
import { validate } from '../src/hub/http.js';
import { Hub } from '../src/hub/index.js';
import { loadNativeUws } from '../src/hub/uws.js';
import { RewardService } from '../src/reward/service.js';
import { openLmdbStore } from '../src/store/lmdb.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [target = 'maru', membersArg = '1000'] = process.argv.slice(2);
const memberCount = Number(membersArg);

const store = await openLmdbStore({ path: join(mkdtempSync(join(tmpdir(), 'maru-bench-http-')), 'store') });
const clock = offsetClock(Date.parse('2026-11-21T10:00:00+09:00'));
const bus = createBus(store, 'bench');
await bus.start();
const service = new RewardService({ store, clock, bus });

// seed: 6400 members per zone (a zone holds at most 6561), created 64 at a time
const ids: string[] = [];
let zone = '';
for (let i = 0; i < memberCount; i += 64) {
  if (i % 6400 === 0) zone = (await service.culture({ country: 'KR', lang: 'ko', name: `bench ${i / 6400}` })).id;
  const batch = await Promise.all(
    Array.from({ length: Math.min(64, memberCount - i) }, (_, j) => service.createMember({ name: `b${i + j}`, zone })),
  );
  ids.push(...batch.map((m) => m.id));
}

const member = (q: unknown) => service.member(validate(memberQuery, q, 'query').id);
const work = (q: unknown) => {
  const w = validate(workQuery, q, 'query');
  return service.work({ id: w.id, kc: w.kc, v: w.v });
};

let port: number;
if (target === 'uws') {
  // the same answer as the hub's /healthz, with nothing around it: no routing, no headers of ours
  const uws = loadNativeUws();
  const app = uws.App();
  app.get('/healthz', (res) => {
    res.cork(() => {
      res.writeHeader('content-type', 'application/json; charset=utf-8');
      res.end(JSON.stringify({ status: 'ok', uptime_s: Math.round(process.uptime()) }));
    });
  });
  port = await new Promise<number>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (socket) => (socket ? resolve(uws.us_socket_local_port(socket)) : reject(new Error('cannot listen')))),
  );
} else if (target === 'maru') {
  const hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1 << 20, webDir: '/nonexistent', shutdownGraceMs: 0 });
  hub.route({ method: 'GET', path: '/member', handler: (ctx) => member(ctx.query) });
  hub.route({ method: 'GET', path: '/work', cacheControl: 'no-store', handler: (ctx) => work(ctx.query) });
  port = await hub.listen('127.0.0.1', 0);
} else {
  const app = Fastify({ logger: false });
  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof AppError) return reply.code(err.status).send(errorBody(err));
    return reply.code(500).send({ error: { code: 'internal', message: 'internal error' } });
  });
  app.get('/member', (req) => member(req.query));
  app.get('/work', async (req, reply) => {
    reply.header('cache-control', 'no-store');
    return work(req.query);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
}
process.stdout.write(`READY ${port} ${JSON.stringify(ids)}\n`);
process.on('SIGINT', () => process.exit(0));
