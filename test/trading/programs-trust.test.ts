import { EventSource } from 'eventsource';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { call, get, until } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { connectTopics, type TopicClient } from '../support/ws.js';

/**
 * Who sees which live program: the SSE stream and the WebSocket topics carry a trader's own
 * programs only (an operator's: all), on an in-process hub with real EventSource and WebSocket
 * clients; and the program routes' answers as /openapi.json declares them.
 */
const T0 = Date.parse('2026-11-18T12:01:00Z');

interface Received {
  event: string;
  id: string;
  data: any;
}

/** A stock EventSource; `from` starts it as a client that reconnects with that Last-Event-ID. */
function listen(url: string, from?: string) {
  const got: Received[] = [];
  const es = new EventSource(url, {
    fetch: (input, init) => {
      const headers = new Headers(init?.headers);
      if (from !== undefined && !headers.has('last-event-id')) headers.set('last-event-id', from);
      return fetch(input, { ...init, headers });
    },
  });
  for (const name of ['signal', 'trade', 'status', 'tick', 'reset']) {
    es.addEventListener(name, (e) => got.push({ event: name, id: e.lastEventId, data: JSON.parse(e.data) }));
  }
  const opened = new Promise<void>((r) => es.addEventListener('open', () => r(), { once: true }));
  const events = () => got.filter((e) => e.event !== 'tick');
  const ticked = () => got.filter((e) => e.event === 'tick').flatMap((e) => e.data.programs.map((p: { program: string }) => p.program));
  return { es, got, opened, events, ticked };
}

/** The next frame that is not a presence event (program topics tell their subscribers who watches). */
async function notPresence(c: { next: () => Promise<any> }): Promise<any> {
  for (;;) {
    const f = await c.next();
    if (f.data?.type !== 'presence') return f;
  }
}

describe('live programs: who sees what', () => {
  const clock = new ManualClock(T0);
  let maru: Maru;
  let base: string;
  let a: string;
  let b: string;
  let admin: string;
  let editor: string;
  let pa: string;
  let pb: string;
  const sockets: TopicClient[] = [];
  const streams: { es: EventSource }[] = [];

  beforeAll(async () => {
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: tempDir('programs-trust'),
      LOG_LEVEL: 'silent',
      TRADING_WORKERS: '1',
      PROGRAM_SPEED: '60',
      ...AUTH_TEST_ENV,
    });
    maru = await startMaru(config, { clock, logger: pino({ level: 'silent' }) });
    base = maru.url;
    [a, b, editor] = await Promise.all([signIn(base, ['trader']), signIn(base, ['trader']), signIn(base, ['editor'])]);
    admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
  });
  afterAll(async () => {
    for (const s of streams) s.es.close();
    for (const s of sockets) s.close();
    await maru?.stop();
  });

  const create = async (token: string, name: string) =>
    (await call(base, 'POST', '/api/program/create', { name, strategy: 'ema_cross', symbol: 'ES', params: { fast: 2, slow: 3 } }, bearer(token))).body.program.id as string;
  const move = (token: string, m: string, id: string) => call(base, 'POST', `/api/program/${m}`, { id }, bearer(token));
  const stream = (token: string, extra = '', from?: string) => {
    const s = listen(`${base}/api/program/stream?access_token=${token}${extra}`, from);
    streams.push(s);
    return s;
  };

  it('the stream needs a trader credential: none, a wrong one or another role is refused', async () => {
    const cases: [Record<string, string>, string, number, string][] = [
      [{}, '', 401, 'unauthorized'],
      [bearer('not-a-token'), '', 401, 'invalid_token'],
      [{}, '?access_token=not-a-token', 401, 'invalid_token'],
      [bearer(editor), '', 403, 'forbidden'],
    ];
    for (const [headers, query, status, code] of cases) {
      const r = await fetch(`${base}/api/program/stream${query}`, { headers });
      expect(r.status, `${JSON.stringify(headers)} ${query}`).toBe(status);
      expect((await r.json()).error.code).toBe(code);
    }
    // a stock EventSource without a token does not get a stream either
    const none = new EventSource(`${base}/api/program/stream`);
    const failed = await new Promise<string>((r) => {
      none.addEventListener('open', () => r('open'));
      none.addEventListener('error', (e) => r(`error ${(e as { code?: number }).code}`));
    });
    none.close();
    expect(failed).toBe('error 401');
  });

  it("a trader's stream carries only its own programs' events and ticks, live and replayed; an operator's all", async () => {
    const sa = stream(a);
    const sb = stream(b);
    const op = stream(admin);
    pa = await create(a, 'A');
    pb = await create(b, 'B');
    // trader B asks for A's program by name: refused (403), not an empty stream; an unknown program: 404
    const onA = await fetch(`${base}/api/program/stream?program=${pa}`, { headers: bearer(b) });
    expect(onA.status).toBe(403);
    expect((await onA.json()).error).toMatchObject({ code: 'forbidden', details: { program: pa } });
    const unknown = await fetch(`${base}/api/program/stream?program=p_doesnotexist`, { headers: bearer(b) });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe('program_not_found');
    // its creator and an operator get it
    const mine = stream(a, `&program=${pa}`);
    const ops = stream(admin, `&program=${pa}`);
    await Promise.all([sa.opened, sb.opened, op.opened, mine.opened, ops.opened]);
    expect((await move(a, 'start', pa)).status).toBe(200);
    expect((await move(b, 'start', pb)).status).toBe(200);
    const signalled = (p: string) => op.events().some((e) => e.event === 'signal' && e.data.program === p);
    for (let i = 0; i < 4 || (i < 30 && !(signalled(pa) && signalled(pb))); i++) {
      clock.advance(3000);
      await until(`operator tick ${i + 1}`, () => op.got.filter((e) => e.event === 'tick').length > i);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await move(a, 'pause', pa)).status).toBe(200);
    expect((await move(b, 'pause', pb)).status).toBe(200);
    const both = () => [pa, pb].every((p) => op.events().some((e) => e.event === 'status' && e.data.program === p && e.data.state === 'paused'));
    await until('both pauses at the operator', both);
    await until("A's pause at A", () => sa.events().some((e) => e.data.state === 'paused'));
    await until("B's pause at B", () => sb.events().some((e) => e.data.state === 'paused'));
    await new Promise((r) => setTimeout(r, 300));

    // the operator saw both programs' events and ticks
    expect(new Set(op.events().map((e) => e.data.program))).toEqual(new Set([pa, pb]));
    expect(new Set(op.ticked())).toEqual(new Set([pa, pb]));
    // each trader exactly its own events, in the operator's order, with the same ids
    const ofProgram = (p: string) => op.events().filter((e) => e.data.program === p).map((e) => e.id);
    expect(sa.events().map((e) => e.id)).toEqual(ofProgram(pa));
    expect(sb.events().map((e) => e.id)).toEqual(ofProgram(pb));
    expect(sa.events().some((e) => e.event === 'signal')).toBe(true);
    expect(new Set(sa.ticked())).toEqual(new Set([pa]));
    expect(new Set(sb.ticked())).toEqual(new Set([pb]));
    expect(sb.events().every((e) => e.data.created_by === sb.events()[0]!.data.created_by)).toBe(true);

    // a trader resuming from the first id gets its own missed events only (the replay is filtered too)
    const from = op.events()[0]!.id;
    const again = stream(b, '', from);
    const expected = op.events().filter((e) => e.data.program === pb && e.id !== from).map((e) => e.id);
    await until("B's replay", () => again.events().length >= expected.length);
    await new Promise((r) => setTimeout(r, 200));
    expect(again.events().map((e) => e.id)).toEqual(expected);

    // an id this stream cannot honour (a numeric id of the former stream, another epoch): a reset
    // with the current position, then live events
    const head = op.events().at(-1)!.id;
    const epoch = head.split('-')[0];
    for (const [stale, reason] of [['41', 'malformed'], [`${epoch === 'aaaaaaaa' ? 'bbbbbbbb' : 'aaaaaaaa'}-3`, 'epoch']] as const) {
      const s = stream(b, '', stale);
      await until(`reset (${reason})`, () => s.got.some((e) => e.event === 'reset'));
      expect(s.got[0]).toMatchObject({ event: 'reset', id: head, data: { type: 'reset', reason } });
      expect(s.events().filter((e) => e.event !== 'reset')).toEqual([]);
      s.es.close();
    }
  }, 30_000);

  it('WebSocket: program:<id> for its creator and operators; every program (program:events, program:tick) for operators only', async () => {
    const open = async (token?: string) => {
      const ws = await connectTopics(base);
      sockets.push(ws);
      if (token) await ws.auth(token);
      return ws;
    };
    const refused = async (ws: TopicClient, topic: string) => {
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic }));
      const f = await ws.next();
      expect(f, topic).toMatchObject({ type: 'error', topic });
      return f.code as string;
    };
    // no credential, a wrong one
    const anonymous = await open();
    expect(await refused(anonymous, `program:${pa}`)).toBe('unauthorized');
    anonymous.ws.send(JSON.stringify({ type: 'auth', token: 'not-a-token' }));
    expect(await anonymous.next()).toMatchObject({ type: 'error', code: 'invalid_token' });
    expect(await refused(anonymous, `program:${pa}`)).toBe('unauthorized');
    // another trader
    const wb = await open(b);
    expect(await refused(wb, `program:${pa}`)).toBe('forbidden');
    expect(await refused(wb, 'program:events')).toBe('forbidden');
    expect(await refused(wb, 'program:tick')).toBe('forbidden');
    expect(await refused(wb, 'program:p_nosuchprogram')).toBe('unknown_topic');
    await wb.subscribe(`program:${pb}`);
    // the creator and an operator
    const wa = await open(a);
    await wa.subscribe(`program:${pa}`);
    const wop = await open(admin);
    await wop.subscribe('program:events');
    await wop.subscribe(`program:${pa}`);

    expect((await move(a, 'start', pa)).status).toBe(200);
    expect(await notPresence(wa)).toMatchObject({ topic: `program:${pa}`, data: { type: 'status', program: pa, state: 'running' } });
    const seen = [await notPresence(wop), await notPresence(wop)].map((f) => f.topic).sort();
    expect(seen).toEqual(['program:events', `program:${pa}`]);
    clock.advance(3000);
    await until("a tick on A's topic", async () => (await wa.next()).data?.type === 'tick');
    // B's socket got nothing of A: its next frame is its own program's
    expect((await move(b, 'start', pb)).status).toBe(200);
    expect(await notPresence(wb)).toMatchObject({ topic: `program:${pb}`, data: { type: 'status', program: pb, state: 'running' } });
  }, 30_000);

  it('every program route declares its answer in /openapi.json', async () => {
    const doc = (await get(base, '/openapi.json')).body;
    const routes: [string, string][] = [
      ['post', '/api/program/create'],
      ['get', '/api/program/list'],
      ['post', '/api/program/start'],
      ['post', '/api/program/pause'],
      ['post', '/api/program/stop'],
      ['post', '/api/program/delete'],
      ['get', '/api/program/status/{id}'],
      ['get', '/api/program/logs/{id}'],
    ];
    for (const [method, path] of routes) {
      const schema = doc.paths[path]?.[method]?.responses?.['200']?.content?.['application/json']?.schema;
      expect(schema?.type, `${method} ${path}`).toBe('object');
      expect(Object.keys(schema.properties).length, `${method} ${path}`).toBeGreaterThan(0);
    }
    const status = doc.paths['/api/program/status/{id}'].get.responses['200'].content['application/json'].schema;
    expect(status.properties.program.required).toEqual(expect.arrayContaining(['id', 'state', 'stats', 'owner', 'created_by', 'settings']));
    const stream = doc.paths['/api/program/stream'].get;
    expect(stream.description).toMatch(/trader/);
  });
});
