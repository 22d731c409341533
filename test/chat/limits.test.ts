import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { call, post } from '../support/http.js';
import { tempDir } from '../support/process.js';

describe('public conversation routes are bounded per client', () => {
  let maru: Maru;
  const clock = new ManualClock(Date.parse('2026-11-22T10:00:00Z'));
  beforeAll(async () => {
    maru = await startMaru(
      loadConfig({
        HOST: '127.0.0.1',
        PORT: '0',
        DATA_DIR: tempDir('chat-limits'),
        LOG_LEVEL: 'silent',
        CHAT_SESSIONS_PER_CLIENT: '2',
        CHAT_TURNS_PER_MINUTE: '3',
        CHAT_LOOKUPS_PER_MINUTE: '2',
        COACH_CALLS_PER_MINUTE: '1',
      }),
      { clock, logger: pino({ level: 'silent' }) },
    );
  });
  afterAll(() => maru.stop());

  it('sessions per hour, turns per minute, lookups per minute: 429 with Retry-After, then allowed again', async () => {
    const base = maru.url;
    const s = await post(base, '/api/chat/start', { subject: 'a' });
    expect((await post(base, '/api/chat/start', { subject: 'b' })).status).toBe(201);
    const third = await post(base, '/api/chat/start', { subject: 'c' });
    expect(third.status).toBe(429);
    expect(third.body.error.code).toBe('rate_limited');
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);

    for (let i = 0; i < 2; i++) expect((await post(base, '/api/chat', { session: s.body.session, message: '음' })).status).toBe(200);
    expect((await post(base, '/api/chat', { session: s.body.session, choice: '검색' })).body.stage).toBe('need');
    const over = await post(base, '/api/chat', { session: s.body.session, choice: '렌탈' });
    expect(over.status).toBe(429);
    // the refused turn changed nothing
    clock.advance(60_000);
    expect((await call(base, 'GET', `/api/chat/${s.body.session}`)).body.stage).toBe('need');

    expect((await call(base, 'GET', '/api/shareholder')).status).toBe(200);
    expect((await call(base, 'GET', '/api/referral/MARU-1')).status).toBe(404);
    expect((await call(base, 'GET', '/api/shareholder')).status).toBe(429);

    expect((await call(base, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': 'x' })).status).toBe(404);
    expect((await call(base, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': 'x' })).status).toBe(429);
  });
});
