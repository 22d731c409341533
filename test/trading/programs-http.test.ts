import { EventSource } from 'eventsource';
import pino from 'pino';
import { call, until } from '../support/http.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { Market } from '../../src/trading/market.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';
import { AUTH_TEST_ENV, bearer, login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';

/**
 * The live-program routes and the SSE stream over real HTTP on an in-process hub, read by a real
 * EventSource client. The hub clock is a ManualClock: candles (one per second of hub time) and the
 * 3-second ticks happen only when the test moves it; the service's pump notices within ~250 ms.
 */
const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-11-18T12:01:00Z');


/** A stream id is the Bus position `<epoch>-<offset>` of the event in topic program:events. */
const offsetOf = (id: string) => {
  const m = /^(\w+)-(\d+)$/.exec(id);
  if (!m) throw new Error(`not a stream id: ${id}`);
  return Number(m[2]);
};
const epochOf = (id: string) => id.split('-')[0];

interface Received {
  event: string;
  id: string;
  data: any;
}

/** A real EventSource; `drop()` cuts the connection as a network failure would (it then reconnects by itself). */
function listen(url: string, lastEventId?: string) {
  const got: Received[] = [];
  const sentIds: (string | null)[] = [];
  let drop: (() => void) | undefined;
  const es = new EventSource(url, {
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers);
      if (lastEventId !== undefined && sentIds.length === 0) headers.set('last-event-id', lastEventId);
      sentIds.push(headers.get('last-event-id'));
      const res = await fetch(input, { ...init, headers });
      // the body passes through a stream the test can break as a network failure would
      const reader = res.body!.getReader();
      const body = new ReadableStream<Uint8Array>({
        start(ctl) {
          drop = () => {
            ctl.error(new TypeError('terminated'));
            void reader.cancel();
          };
        },
        async pull(ctl) {
          const { done, value } = await reader.read();
          if (done) ctl.close();
          else ctl.enqueue(value);
        },
        cancel: () => reader.cancel(),
      });
      return new Response(body, { status: res.status, headers: res.headers });
    },
  });
  for (const name of ['signal', 'trade', 'status', 'tick']) {
    es.addEventListener(name, (e) => got.push({ event: name, id: e.lastEventId, data: JSON.parse(e.data) }));
  }
  const opened = new Promise<void>((r) => es.addEventListener('open', () => r(), { once: true }));
  return { es, got, sentIds, opened, drop: () => drop?.() };
}


describe('live programs over HTTP and SSE', () => {
  const clock = new ManualClock(T0);
  let maru: Maru;
  let base: string;
  let token: string;
  /** A call as the trader who owns the programs of these tests. */
  const api = (method: string, path: string, body?: unknown) => call(base, method, path, body, bearer(token));

  beforeAll(async () => {
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: tempDir('programs-http'),
      LOG_LEVEL: 'silent',
      TRADING_WORKERS: '1',
      PROGRAM_SPEED: '60',
      ...AUTH_TEST_ENV,
    });
    maru = await startMaru(config, { clock, logger: silent });
    base = maru.url;
    token = await signIn(base, ['trader']);
  });
  afterAll(async () => {
    await maru?.stop();
  });

  it('answers bad input: 400 invalid parameters, 404 unknown id, 409 forbidden move, no update-params', async () => {
    const bad = await api('POST', '/api/program/create', { strategy: 'ema_cross', symbol: 'ES', params: { fast: 30, slow: 10 } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('params.slow');
    expect((await api('POST', '/api/program/create', { strategy: 'nope', symbol: 'ES' })).status).toBe(400);
    for (const name of ['a\u202eb', 'x\u0000', '\ud800', ' ', 'n'.repeat(81)]) {
      const r = await api('POST', '/api/program/create', { name, strategy: 'breakout', symbol: 'ES' });
      expect(r.status, JSON.stringify(name)).toBe(400);
      expect(r.body.error.details.issues[0].field).toBe('name');
    }
    expect((await api('POST', '/api/program/create', { strategy: 'breakout', symbol: 'ES', settings: { max_positions: 99 } })).status).toBe(400);
    expect((await api('GET', '/api/program/status/p_unknown')).status).toBe(404);
    expect((await api('GET', '/api/program/logs/p_unknown')).status).toBe(404);
    expect((await api('GET', '/api/program/bars/p_unknown')).status).toBe(404);
    const some = (await api('POST', '/api/program/create', { strategy: 'breakout', symbol: 'ES' })).body.program;
    for (const q of ['count=0', 'count=501', 'count=x', 'count=1.5']) {
      const r = await api('GET', `/api/program/bars/${some.id}?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.details.issues[0].field, q).toBe('count');
    }
    expect((await api('POST', '/api/program/delete', { id: some.id })).status).toBe(200);
    expect((await api('POST', '/api/program/start', { id: 'p_unknown' })).status).toBe(404);
    expect((await api('POST', '/api/program/update-params', { id: 'p_unknown', params: {} })).status).toBe(404);
    const p = (await api('POST', '/api/program/create', { strategy: 'breakout', symbol: 'NQ' })).body.program;
    const pause = await api('POST', '/api/program/pause', { id: p.id });
    expect(pause.status).toBe(409);
    expect(pause.body.error).toMatchObject({ code: 'invalid_state', details: { state: 'created' } });
    expect((await api('POST', '/api/program/delete', { id: p.id })).body).toEqual({ id: p.id, deleted: true });
    const list = (await api('GET', '/api/program/list')).body;
    expect(list.programs).toEqual([]);
    expect(list.strategies.map((s: { id: string }) => s.id)).toEqual(['ema_cross', 'rsi_rebound', 'breakout', 'mean_reversion', 'triple_sync']);
    expect(list.strategies[0].params.properties.fast).toMatchObject({ type: 'integer', minimum: 2 });
  });

  it('streams signals, trades and status in id order, ticks every 3 s of hub time, resumes with Last-Event-ID', async () => {
    const all = listen(`${base}/api/program/stream?access_token=${token}`);
    await all.opened;

    const mk = async (name: string) =>
      (await api('POST', '/api/program/create', { name, strategy: 'ema_cross', symbol: 'ES', params: { fast: 2, slow: 3 }, settings: { stop_loss_atr: 0.5 } })).body.program;
    const a = await mk('A');
    const b = await mk('B');
    const ws = await connectTopics(base);
    await ws.auth(token);
    await ws.subscribe(`program:${a.id}`);
    const onlyA = listen(`${base}/api/program/stream?program=${a.id}&access_token=${token}`);
    await onlyA.opened;
    expect((await api('POST', '/api/program/start', { id: a.id })).body.program.state).toBe('running');
    expect((await api('POST', '/api/program/start', { id: b.id })).status).toBe(200);

    // the program's topic tells who watches it: this socket's join, with the count
    const frames = [await ws.next(), await ws.next()];
    const watching = frames.find((f) => f.data?.type === 'presence');
    expect(watching).toMatchObject({ topic: `program:${a.id}`, data: { type: 'presence', event: 'join', topic: `program:${a.id}`, clients: 1, users: 1 } });
    const frame = frames.find((f) => f.data?.type !== 'presence');
    expect(frame).toMatchObject({ type: 'message', topic: `program:${a.id}`, data: { type: 'status', program: a.id, state: 'running' } });
    // a second viewer: both see the count go to 2; when it leaves, back to 1
    const second = await connectTopics(base);
    await second.auth(token);
    await second.subscribe(`program:${a.id}`);
    const presence = async (c: { next: () => Promise<any> }, event: string) => {
      for (;;) {
        const f = await c.next();
        if (f.data?.type === 'presence' && f.data.event === event) return f.data;
      }
    };
    expect(await presence(ws, 'join')).toMatchObject({ clients: 2, users: 1 });
    expect(await presence(second, 'join')).toMatchObject({ clients: 2, users: 1 });
    second.close();
    expect(await presence(ws, 'leave')).toMatchObject({ reason: 'left', clients: 1, users: 1 });

    // tick cadence: one tick per 3 s of hub time, at multiples of 3 s, none while the clock stands still
    const ticksOf = (l: ReturnType<typeof listen>) => l.got.filter((e) => e.event === 'tick');
    for (let i = 1; i <= 5; i++) {
      clock.advance(3000);
      await until(`tick ${i}`, () => ticksOf(all).length >= i);
    }
    await new Promise((r) => setTimeout(r, 700));
    const ticks = ticksOf(all).map((e) => e.data);
    expect(ticks).toHaveLength(5);
    for (let i = 1; i < ticks.length; i++) expect(ticks[i].t - ticks[i - 1].t).toBe(3000);
    expect(ticks.every((t) => t.t % 3000 === 0)).toBe(true);
    expect(ticks[4].programs.map((p: { program: string }) => p.program).sort()).toEqual([a.id, b.id].sort());
    // the filtered stream carries only A
    expect(ticksOf(onlyA).at(-1)!.data.programs.map((p: { program: string }) => p.program)).toEqual([a.id]);
    expect(onlyA.got.every((e) => e.event === 'tick' || e.data.program === a.id)).toBe(true);

    // id order on the wire, signals and trades present; the ids are the events' Bus positions: one
    // epoch, consecutive offsets (this trader's programs are the only ones here, so none is missing)
    const withIds = all.got.filter((e) => e.event !== 'tick');
    const ids = withIds.map((e) => offsetOf(e.id));
    expect(ids).toEqual(ids.map((_, i) => ids[0]! + i));
    expect(new Set(withIds.map((e) => epochOf(e.id))).size).toBe(1);
    expect(withIds.some((e) => e.event === 'signal')).toBe(true);
    expect(withIds.some((e) => e.event === 'trade')).toBe(true);
    // each event also has its own id (the program's n-th signal or fill), unique
    expect(new Set(withIds.map((e) => e.data.id)).size).toBe(withIds.length);

    // the connection of the filtered client drops; events happen meanwhile; it reconnects by itself
    const seenBefore = onlyA.got.filter((e) => e.event !== 'tick').length;
    const lastBefore = onlyA.got.filter((e) => e.event !== 'tick').at(-1)!.id;
    onlyA.drop();
    await new Promise((r) => setTimeout(r, 100));
    clock.advance(6000);
    await until('a tick after the drop', () => ticksOf(all).length >= 6);
    await api('POST', '/api/program/pause', { id: a.id });
    await api('POST', '/api/program/stop', { id: b.id });
    // reconnection after the announced retry (3 s): Last-Event-ID sent, missed events replayed in order
    await until('the replayed pause', () => onlyA.got.some((e) => e.event === 'status' && e.data.state === 'paused'), 10_000);
    expect(onlyA.sentIds).toEqual([null, lastBefore]);
    const afterDrop = onlyA.got.filter((e) => e.event !== 'tick').slice(seenBefore);
    const missed = all.got.filter((e) => e.event !== 'tick' && e.data.program === a.id && offsetOf(e.id) > offsetOf(lastBefore));
    expect(missed.length).toBeGreaterThan(0);
    expect(afterDrop.map((e) => e.id)).toEqual(missed.map((e) => e.id));

    // a fresh client resuming from an explicit Last-Event-ID gets the history after it, then live events
    const from = withIds[0]!.id;
    const late = listen(`${base}/api/program/stream?access_token=${token}`, from);
    await until('replay', () => late.got.filter((e) => e.event !== 'tick').length >= all.got.filter((e) => e.event !== 'tick').length - 1);
    expect(late.got.filter((e) => e.event !== 'tick').map((e) => e.id)).toEqual(
      all.got.filter((e) => e.event !== 'tick' && offsetOf(e.id) > offsetOf(from)).map((e) => e.id),
    );
    await api('POST', '/api/program/delete', { id: a.id });
    await until('live delete', () => late.got.some((e) => e.event === 'status' && e.data.state === 'deleted'));
    const statuses = late.got.filter((e) => e.event === 'status' && e.data.program === a.id).map((e) => e.data.state);
    expect(statuses.slice(-3)).toEqual(['paused', 'stopped', 'deleted']);

    // logs and statistics
    const logs = (await api('GET', `/api/program/logs/${b.id}`)).body;
    expect(logs.signals.length).toBeGreaterThan(0);
    expect(logs.logs.map((l: { code: string }) => l.code)).toContain('stopped');
    expect(logs.equity.length).toBeGreaterThan(0);
    const list = (await api('GET', '/api/program/list')).body;
    expect(list.statistics).toMatchObject({ total: 1, stopped: 1, running: 0 });
    expect(list.programs[0].stats.bars).toBeGreaterThan(10);

    for (const l of [all, onlyA, late]) l.es.close();
    ws.close();
  }, 40_000);

  it('programs belong to the trader who created them; an operator manages them all', async () => {
    const other = await signIn(base, ['trader']);
    const editor = await signIn(base, ['editor']);
    const admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    const mine = (await api('POST', '/api/program/create', { name: 'mine', strategy: 'breakout', symbol: 'ES' })).body.program;
    expect(mine.created_by).toEqual(expect.any(String));
    const routes: [string, string, unknown?][] = [
      ['POST', '/api/program/create', { strategy: 'breakout', symbol: 'ES' }],
      ['GET', '/api/program/list'],
      ['POST', '/api/program/start', { id: mine.id }],
      ['POST', '/api/program/pause', { id: mine.id }],
      ['POST', '/api/program/stop', { id: mine.id }],
      ['POST', '/api/program/delete', { id: mine.id }],
      ['GET', `/api/program/status/${mine.id}`],
      ['GET', `/api/program/logs/${mine.id}`],
      ['GET', `/api/program/bars/${mine.id}`],
    ];
    for (const [method, path, body] of routes) {
      const none = await call(base, method, path, body);
      expect(none.status, `${method} ${path} without a token`).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await call(base, method, path, body, bearer('not-a-token'))).status, `${method} ${path} bad token`).toBe(401);
      expect((await call(base, method, path, body, bearer(editor))).status, `${method} ${path} as an editor`).toBe(403);
    }
    // another trader: none of the owner's program, and its list leaves it out
    for (const [method, path, body] of routes.slice(2)) {
      const r = await call(base, method, path, body, bearer(other));
      expect(r.status, `${method} ${path} as another trader`).toBe(403);
      expect(r.body.error.code).toBe('forbidden');
    }
    const theirs = (await call(base, 'POST', '/api/program/create', { name: 'theirs', strategy: 'breakout', symbol: 'ES' }, bearer(other))).body.program;
    const listed = (who: string) => call(base, 'GET', '/api/program/list', undefined, bearer(who)).then((r) => r.body.programs.map((p: { id: string }) => p.id));
    expect(await listed(other)).toEqual([theirs.id]);
    expect(await listed(token)).toContain(mine.id);
    expect(await listed(token)).not.toContain(theirs.id);
    expect(await listed(admin)).toEqual(expect.arrayContaining([mine.id, theirs.id]));
    // the owner and an operator may
    expect((await api('POST', '/api/program/start', { id: mine.id })).status).toBe(200);
    expect((await call(base, 'POST', '/api/program/stop', { id: mine.id }, bearer(admin))).status).toBe(200);
    expect((await api('GET', `/api/program/status/${mine.id}`)).body.program.state).toBe('stopped');
    expect((await call(base, 'POST', '/api/program/delete', { id: theirs.id }, bearer(admin))).body).toEqual({ id: theirs.id, deleted: true });
    expect((await api('POST', '/api/program/delete', { id: mine.id })).status).toBe(200);
  });

  it("gives a program's recent market bars, oldest first, up to the last closed one (what its chart opens with)", async () => {
    const p = (await api('POST', '/api/program/create', { strategy: 'ema_cross', symbol: 'NQ' })).body.program;
    const market = new Market('NQ', 1000); // PROGRAM_SPEED 60: a one-minute bar every second
    const before = market.closedAt(clock.now());
    const r = await api('GET', `/api/program/bars/${p.id}?count=5`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: p.id, symbol: 'NQ', bar_ms: 1000 });
    // the last bar closed when the hub answered (the hub clock runs on: the same, or one later)
    const last = r.body.bars.at(-1).t / 1000;
    expect(last - before).toBeGreaterThanOrEqual(0);
    expect(last - before).toBeLessThanOrEqual(1);
    expect(r.body.bars).toEqual([4, 3, 2, 1, 0].map((back) => {
      const b = market.bar(last - back);
      return { t: b.t, o: b.o, h: b.h, l: b.l, c: b.c };
    }));
    expect((await api('GET', `/api/program/bars/${p.id}`)).body.bars).toHaveLength(120);
    clock.advance(3_000);
    const later = (await api('GET', `/api/program/bars/${p.id}?count=1`)).body.bars;
    expect(later).toHaveLength(1);
    expect(later[0].t / 1000 - last).toBeGreaterThanOrEqual(3);
    expect(later[0].t / 1000 - last).toBeLessThanOrEqual(5);
    expect((await api('POST', '/api/program/delete', { id: p.id })).status).toBe(200);
  });
});
