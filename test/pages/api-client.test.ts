/**
 * The pages' client (web/common/api.ts) against a started hub: refusals in the shared error shape
 * thrown with the message for a person (Korean by code, the server's English for English readers),
 * the bearer token it owns, and a 401 that tells the page its token is gone; against a loopback
 * server that refuses once with Retry-After: the call waits it out and sends the same
 * Idempotency-Key again, and gives up on a wait longer than it allows.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, createClient } from '../../web/common/api.js';
import { messageFor } from '../../web/common/messages.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

describe('the pages\' client against the hub', () => {
  let hub: HubProcess;
  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('api-client'), ...AUTH_TEST_ENV }, 30_000);
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it('throws a refusal as ApiError: Korean by its code, the server\'s English for English readers', async () => {
    const ko = createClient({ base: hub.url, lang: 'ko' });
    const err = await ko.post('/api/auth/login', { body: { user: 'admin', password: 'wrong-password' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 401, code: 'invalid_credentials', text: '아이디 또는 비밀번호가 맞지 않습니다.' });
    const en = createClient({ base: hub.url, lang: 'en' });
    const again = (await en.post('/api/auth/login', { body: { user: 'admin', password: 'wrong-password' } }).catch((e: unknown) => e)) as ApiError;
    expect(again.code).toBe('invalid_credentials');
    expect(again.text).toBe(again.serverMessage);
    expect(again.text).toMatch(/^[\x20-\x7e]+$/);
    // no token where one is needed
    const bad = (await ko.get('/api/auth/me').catch((e: unknown) => e)) as ApiError;
    expect(bad).toMatchObject({ status: 401, code: 'unauthorized', text: '로그인이 필요합니다.' });
    // a code without a sentence of its own is told by its status, with the code
    expect(messageFor('a_new_code', 'some English', 'ko', 409)).toBe('지금 상태에서는 할 수 없는 작업입니다. (a_new_code)');
    expect(messageFor('a_new_code', 'some English', 'en', 409)).toBe('some English');
  });

  it('sends its token, answers the declared answer, and tells the page when the token is refused', async () => {
    const { token } = await createClient({ base: hub.url }).post('/api/auth/login', { body: { user: 'admin', password: TEST_ADMIN_PASSWORD } });
    let current: string | undefined = token;
    let told = 0;
    const api = createClient({ base: hub.url, token: () => current, onUnauthorized: () => told++ });
    expect((await api.get('/api/auth/me')).identity).toMatchObject({ id: 'admin' });
    const show = await api.post('/api/shows', { body: { name: '가을 음악회', venue: '예술의전당', date: '2026-10-01' } });
    expect((await api.get('/api/shows/:id', { params: { id: show.id } })).name).toBe('가을 음악회');
    expect(told).toBe(0);
    current = 'not-a-token';
    await expect(api.get('/api/auth/me')).rejects.toMatchObject({ status: 401, code: 'invalid_token' });
    expect(told).toBe(1);
  });
});

describe('the client\'s Retry-After and Idempotency-Key', () => {
  let server: Server;
  let base: string;
  const seen: IncomingHttpHeaders[] = [];
  let refuseFor = 1;
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      if (seen.length === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(refuseFor) });
        return res.end(JSON.stringify({ error: { code: 'busy', message: 'try again shortly' } }));
      }
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 's1', name: 'n', venue: 'v', date: '2026-10-01', created_at: 'x' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('waits a Retry-After out and sends the same key again', async () => {
    seen.length = 0;
    refuseFor = 1;
    const started = Date.now();
    const answer = await createClient({ base }).post('/api/shows', { body: { name: 'n', venue: 'v', date: '2026-10-01' } });
    expect(answer.id).toBe('s1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(seen).toHaveLength(2);
    expect(seen[0]!['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!['idempotency-key']).toBe(seen[0]!['idempotency-key']);
  });

  it('gives up on a wait longer than it allows, with the refusal in Korean', async () => {
    seen.length = 0;
    refuseFor = 30;
    const err = (await createClient({ base, maxRetryAfterS: 10, lang: 'ko' }).post('/api/shows', { body: { name: 'n', venue: 'v', date: '2026-10-01' } }).catch((e: unknown) => e)) as ApiError;
    expect(seen).toHaveLength(1);
    expect(err).toMatchObject({ status: 503, code: 'busy' });
    expect(err.text).toBe('지금 처리 중인 요청이 많습니다. 잠시 뒤에 다시 시도하세요.');
  });
});
