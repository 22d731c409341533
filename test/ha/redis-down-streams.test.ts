import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { redisBinariesOrSkip, startRedisServer, type RedisServerProcess } from '../support/sentinel.js';
import { sleep, until } from '../support/wait.js';
import { connectTopics } from '../support/ws.js';

// Redis down for 10 s with no replica, seen by live clients: a door scanner on /ws and a trading
// dashboard on the program SSE stream stay connected through it, and miss nothing. The program's
// events emitted while the store was out wait and arrive in order once it is back; the scanner
// hears the check-ins before and after.

const binaries = redisBinariesOrSkip();

describe.skipIf(!binaries)('live streams while Redis is down for 10 s', () => {
  let redis: RedisServerProcess;
  let hub: HubProcess;
  beforeAll(async () => {
    redis = await startRedisServer();
    hub = await startHubProcess(
      { ...AUTH_TEST_ENV, REDIS_URL: redis.url, REDIS_PREFIX: 'streams:', REDIS_OP_TIMEOUT_MS: '1000', DATA_DIR: tempDir('ha-streams'), CLOCK_START: '2026-11-18T12:01:00Z', PROGRAM_SPEED: '60', TRADING_WORKERS: '1' },
      60_000,
    );
  }, 90_000);
  afterAll(async () => {
    await hub?.stop('SIGKILL');
    await redis?.kill();
  });

  it('a WebSocket scanner and an SSE dashboard stay open and miss no message', async () => {
    const staff = await signIn(hub.url, ['staff']);
    const trader = await signIn(hub.url, ['trader']);
    const show = (await call(hub.url, 'POST', '/api/shows', { name: '정전', venue: '홀', date: '2026-12-31' }, bearer(staff))).body;
    const codes: string[] = [];
    for (let i = 0; i < 2; i++) codes.push((await call(hub.url, 'POST', '/api/reservations', { show_id: show.id, seat: `D-${i}`, amount_paid: 10_000 }, bearer(staff))).body.code);

    const scanner = await connectTopics(hub.url);
    let scannerClosed = false;
    scanner.ws.on('close', () => (scannerClosed = true));
    await scanner.auth(staff);
    await scanner.subscribe('checkins');

    const created = await call(hub.url, 'POST', '/api/program/create', { name: 'outage', strategy: 'ema_cross', symbol: 'CL', params: { fast: 2, slow: 3 }, settings: {} }, bearer(trader));
    const id = created.body.program.id as string;
    const got: { event: string; id: string; data: any }[] = [];
    const errors: unknown[] = [];
    const es = new EventSource(`${hub.url}/api/program/stream?program=${id}&access_token=${trader}`);
    for (const name of ['signal', 'trade', 'status', 'reset']) es.addEventListener(name, (e) => got.push({ event: name, id: e.lastEventId, data: JSON.parse(e.data) }));
    es.addEventListener('error', (e) => errors.push(e));
    await new Promise<void>((r) => es.addEventListener('open', () => r(), { once: true }));
    expect((await call(hub.url, 'POST', '/api/program/start', { id }, bearer(trader))).status).toBe(200);
    await until('the program runs and signals', () => got.some((e) => e.event === 'signal'), 30_000, 50);

    expect((await call(hub.url, 'POST', '/api/checkin', { code: codes[0], source: 'camera', scanner: 'door-1' }, bearer(staff))).status).toBe(201);
    const before = await scanner.next(5_000);
    expect(before).toMatchObject({ type: 'message', topic: 'checkins' });

    const eventsBefore = got.length;
    await redis.kill('SIGKILL');
    await sleep(10_000);
    await redis.restart();
    await until('the hub is ready again', async () => (await fetch(`${hub.url}/readyz`)).status === 200, 30_000, 100);
    const checkin = await until('a check-in succeeds again', async () => {
      const r = await call(hub.url, 'POST', '/api/checkin', { code: codes[1], source: 'camera', scanner: 'door-1' }, bearer(staff));
      return r.status === 201 ? r : undefined;
    }, 20_000, 200);
    expect(checkin.status).toBe(201);
    const after = await scanner.next(10_000);
    expect(after).toMatchObject({ type: 'message', topic: 'checkins' });
    expect(JSON.stringify(after.data)).toContain(codes[1]!.slice(-4));
    expect(scannerClosed).toBe(false);

    // the program went on after the outage, and its stream has no hole: consecutive offsets, no reset
    await until('program events after the outage', () => got.length > eventsBefore + 3, 30_000, 100);
    es.close();
    scanner.close();
    expect(got.filter((e) => e.event === 'reset')).toEqual([]);
    const offsets = got.map((e) => Number(e.id.split('-').pop()));
    expect(offsets).toEqual(offsets.map((_, i) => offsets[0]! + i));
    expect(errors).toEqual([]); // the EventSource never lost its connection
    console.log(JSON.stringify({ redis_down_streams: { program_events: got.length, before_outage: eventsBefore } }));
  }, 150_000);
});
