import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { tempDir } from '../support/process.js';
import { connectTopics, type TopicClient } from '../support/ws.js';

/** Subscriptions on /ws name something that exists: a ticket, a document (saved, or with someone present on it); a job admitted on some process. */
describe('subscribing to a ticket, document or job that does not exist', () => {
  let maru: Maru;
  let ws: TopicClient;
  let staff = '';
  let editor = '';
  const post = async (path: string, body: unknown, token: string) => {
    const r = await fetch(maru.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify(body) });
    return { status: r.status, body: (await r.json()) as any };
  };
  beforeAll(async () => {
    maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('unknown-topics'), LOG_LEVEL: 'silent', TRADING_WORKERS: '1', ...AUTH_TEST_ENV }), {
      logger: pino({ level: 'silent' }),
    });
    [staff, editor] = await Promise.all([signIn(maru.url, ['staff']), signIn(maru.url, ['editor'])]);
    ws = await connectTopics(maru.url);
  });
  afterAll(async () => {
    ws?.close();
    await maru?.stop();
  });

  const subscribe = async (topic: string) => {
    ws.ws.send(JSON.stringify({ type: 'subscribe', topic }));
    // the answer to this frame (messages of topics subscribed before may come first)
    for (;;) {
      const f = await ws.next();
      if (f.type !== 'message') return f;
    }
  };

  it('answers unknown_topic for a ticket code no reservation has, and subscribes to one that exists', async () => {
    expect(await subscribe('mticket:TK-ZZZZZZZZ')).toMatchObject({ type: 'error', code: 'unknown_topic', topic: 'mticket:TK-ZZZZZZZZ' });
    expect(await subscribe('mticket:nonsense')).toMatchObject({ type: 'error', code: 'unknown_topic' });
    const show = await post('/api/shows', { name: '재즈 나이트', venue: '블루홀', date: '2026-12-24T20:00:00+09:00' }, staff);
    const booked = await post('/api/reservations', { show_id: show.body.id, seat: 'A1', amount_paid: 45000 }, staff);
    expect(booked.status).toBe(201);
    const code = booked.body.code as string;
    expect(await subscribe(`mticket:${code}`)).toMatchObject({ type: 'subscribed', topic: `mticket:${code}` });
  });

  it('answers unknown_topic for a name that cannot be a document; the list and a document slug subscribe', { timeout: 40_000 }, async () => {
    expect(await subscribe('md:../etc')).toMatchObject({ type: 'error', code: 'unknown_topic', topic: 'md:../etc' });
    expect(await subscribe('md:')).toMatchObject({ type: 'error', code: 'unknown_topic' });
    expect(await subscribe('md:all')).toMatchObject({ type: 'subscribed', topic: 'md:all' });
    // a document being written before its first save: someone is present on it
    expect((await post('/api/md/presence', { slug: 'being-written' }, editor)).status).toBeLessThan(300);
    expect(await subscribe('md:being-written')).toMatchObject({ type: 'subscribed', topic: 'md:being-written' });
    // neither saved nor written: subscribed for a moment (someone may be about to join), then ended
    // with unknown_topic; one that someone joins meanwhile stays
    const t0 = Date.now();
    expect(await subscribe('md:never-written')).toMatchObject({ type: 'subscribed', topic: 'md:never-written' });
    expect(await subscribe('md:joined-soon')).toMatchObject({ type: 'subscribed', topic: 'md:joined-soon' });
    expect((await post('/api/md/presence', { slug: 'joined-soon' }, editor)).status).toBeLessThan(300);
    let f = await ws.next(15_000);
    while (f.type === 'message') f = await ws.next(15_000);
    expect(f).toMatchObject({ type: 'error', code: 'unknown_topic', topic: 'md:never-written' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(9_900);
    ws.ws.send(JSON.stringify({ type: 'ping' }));
    f = await ws.next();
    while (f.type === 'message') f = await ws.next();
    expect(f.type).toBe('pong');
    expect((await post('/api/md/save', { slug: 'exists', content: '# hi' }, editor)).status).toBeLessThan(300);
    expect(await subscribe('md:exists')).toMatchObject({ type: 'subscribed', topic: 'md:exists' });
  });

  it('answers unknown_topic for a name that cannot be a job id; a well-formed one subscribes before its job is posted', { timeout: 40_000 }, async () => {
    expect(await subscribe('job:')).toMatchObject({ type: 'error', code: 'unknown_topic' });
    expect(await subscribe('job:no/such job')).toMatchObject({ type: 'error', code: 'unknown_topic' });
    // well-formed ids are subscribed at once (a job may be about to be posted); one of them is
    // posted, the other never is: that one alone is ended with unknown_topic when the wait (10 s) is over
    const t0 = Date.now();
    expect(await subscribe('job:ui-123')).toMatchObject({ type: 'subscribed', topic: 'job:ui-123' });
    expect(await subscribe('job:ui-456')).toMatchObject({ type: 'subscribed', topic: 'job:ui-456' });
    const posted = await post('/api/program/backtest', { job_id: 'ui-456', symbol: 'ES', count: 2000, strategy: 'ema_cross' }, editor);
    expect(posted.status).toBe(200);
    let f = await ws.next(15_000);
    while (f.type === 'message') f = await ws.next(15_000);
    expect(f).toMatchObject({ type: 'error', code: 'unknown_topic', topic: 'job:ui-123' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(9_900);
    ws.ws.send(JSON.stringify({ type: 'ping' }));
    f = await ws.next();
    while (f.type === 'message') f = await ws.next();
    expect(f.type).toBe('pong');
    // a job that ended a moment ago is still a topic
    expect(await subscribe('job:ui-456')).toMatchObject({ type: 'subscribed', topic: 'job:ui-456' });
  });
});
