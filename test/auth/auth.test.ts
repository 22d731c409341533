import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { AuthService } from '../../src/auth/service.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { label } from '../../src/text.js';
import { openRedisStore } from '../../src/store/redis.js';
import { AUTH_TEST_ENV, bearer, deviceToken, login, signIn, TEST_ADMIN_PASSWORD, TEST_PARTNER_PASSWORD } from '../support/auth.js';
import { call, get, post } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import WebSocket from 'ws';
import { WS_CLOSE_INVALID_TOKEN } from '../../src/hub/index.js';
import { until } from '../support/wait.js';
import { connectTopics } from '../support/ws.js';

const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-11-22T09:00:00Z');

describe('identity model over HTTP', () => {
  let maru: Maru;
  let base: string;
  const clock = new ManualClock(T0);

  beforeAll(async () => {
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('auth'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV, AUTH_TOKEN_TTL_MS: '3600000', AUTH_RECHECK_MS: '100' }),
      { clock, logger: silent },
    );
    base = maru.url;
    // a route that needs the editor role, for the checks below
    maru.hub.route({ method: 'GET', path: '/test/editor-only', auth: { roles: ['editor'] }, handler: (ctx) => ({ id: ctx.identity!.id }) });
    // an SSE stream that needs a signed-in caller
    maru.hub.sse({ path: '/test/stream', auth: {}, open: (ctx, stream) => void stream.send({ event: 'hello', data: { id: ctx.identity!.id } }) });
    maru.hub.topic({
      name: 'test-private:*',
      policy: 'drop',
      authorize: (topic, who) => (!who ? 'unauthorized' : !who.roles.includes('partner') ? 'forbidden' : topic === 'test-private:gone' ? 'unknown' : 'ok'),
    });
  });
  afterAll(() => maru?.stop());

  it('logs the operator in and tells who it is', async () => {
    const r = await post(base, '/api/auth/login', { user: 'admin', password: TEST_ADMIN_PASSWORD });
    expect(r.status).toBe(200);
    expect(r.body.token).toMatch(/^mt_[A-Za-z0-9_-]{43}$/);
    expect(r.body.roles).toEqual(['operator']);
    expect(Date.parse(r.body.expiresAt)).toBe(T0 + 3_600_000);
    const me = await get(base, '/api/auth/me', bearer(r.body.token));
    expect(me.status).toBe(200);
    expect(me.body.identity).toMatchObject({ id: 'admin', roles: ['operator'], kind: 'account' });
  });

  it('rotates: every login issues a new token and both stay valid until logout', async () => {
    const a = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    const b = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    expect(a).not.toBe(b);
    expect((await post(base, '/api/auth/logout', undefined, bearer(a))).status).toBe(200);
    const gone = await get(base, '/api/auth/me', bearer(a));
    expect(gone.status).toBe(401);
    expect(gone.body.error.code).toBe('invalid_token');
    expect(gone.headers.get('www-authenticate')).toBe('Bearer realm="maru", error="invalid_token"');
    expect((await get(base, '/api/auth/me', bearer(b))).status).toBe(200);
  });

  it('refuses a missing, malformed, unknown or expired token with 401 and WWW-Authenticate', async () => {
    const none = await get(base, '/test/editor-only');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthorized');
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="maru"');
    for (const h of ['Basic abc', 'Bearer', `Bearer mt_${'x'.repeat(43)}`, 'Bearer x y']) {
      const r = await get(base, '/test/editor-only', { authorization: h });
      expect(r.status, h).toBe(401);
      expect(r.body.error.code, h).toBe('invalid_token');
    }
    const editor = await signIn(base, ['editor']);
    expect((await get(base, '/test/editor-only', bearer(editor))).status).toBe(200);
    clock.advance(3_600_001);
    try {
      const late = await get(base, '/test/editor-only', bearer(editor));
      expect(late.status).toBe(401);
      expect(late.body.error.code).toBe('invalid_token');
    } finally {
      clock.set(T0);
    }
  });

  it('answers a wrong role with 403 and lets the operator through every role', async () => {
    const trader = await signIn(base, ['trader']);
    const r = await get(base, '/test/editor-only', bearer(trader));
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ code: 'forbidden', details: { needs: ['editor'], has: ['trader'] } });
    const admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    expect((await get(base, '/test/editor-only', bearer(admin))).body).toEqual({ id: 'admin' });
  });

  it('wrong password is 401 invalid_credentials; repeated failures from one address are 429 with Retry-After, others unaffected', async () => {
    const staff = await signIn(base, ['staff'], 'lockme');
    expect(staff).toMatch(/^mt_/);
    for (let i = 0; i < 5; i++) {
      const r = await post(base, '/api/auth/login', { user: 'lockme', password: `wrong-${i}` });
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('invalid_credentials');
    }
    const limited = await post(base, '/api/auth/login', { user: 'lockme', password: 'pw-lockme-secret' });
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('too_many_attempts');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // the same address may still sign in to another account (the pair is limited, not the address)
    expect((await post(base, '/api/auth/login', { user: 'admin', password: TEST_ADMIN_PASSWORD })).status).toBe(200);
    // after the window the owner gets in again
    clock.advance(15 * 60_000);
    try {
      expect((await post(base, '/api/auth/login', { user: 'lockme', password: 'pw-lockme-secret' })).status).toBe(200);
    } finally {
      clock.set(T0);
    }
  });

  it('an unknown user fails like a wrong password', async () => {
    const r = await post(base, '/api/auth/login', { user: 'nobody-here', password: 'whatever1' });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('invalid_credentials');
  });

  it('operators manage accounts; bad input is refused and nothing is created', async () => {
    const admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    const bad = [
      { user: 'A', password: 'longenough', roles: ['staff'] },
      { user: '../x', password: 'longenough', roles: ['staff'] },
      { user: 'okname', password: 'short', roles: ['staff'] },
      { user: 'okname', password: 'longenough', roles: ['root'] },
      { user: 'okname', password: 'longenough', roles: [] },
      { user: 'okname', password: 'longenough', roles: ['staff'], name: 'a\u202Eb' },
      { user: 'okname', password: 'longenough', roles: ['staff'], extra: 1 },
    ];
    for (const b of bad) {
      const r = await post(base, '/api/auth/accounts', b, bearer(admin));
      expect(r.status, JSON.stringify(b)).toBe(400);
    }
    const list = await get(base, '/api/auth/accounts', bearer(admin));
    expect(list.body.accounts.map((a: any) => a.user)).not.toContain('okname');
    const created = await post(base, '/api/auth/accounts', { user: 'okname', password: 'longenough', roles: ['editor'], name: '편집자' }, bearer(admin));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ user: 'okname', roles: ['editor'], name: '편집자', disabled: false });
    expect((await post(base, '/api/auth/accounts', { user: 'okname', password: 'longenough', roles: ['editor'] }, bearer(admin))).status).toBe(409);
    // a non-operator cannot manage accounts
    const tok = await login(base, 'okname', 'longenough');
    expect((await get(base, '/api/auth/accounts', bearer(tok))).status).toBe(403);
    // disabling revokes its tokens at once
    const put = await call(base, 'PUT', '/api/auth/accounts/okname', { disabled: true }, bearer(admin));
    expect(put.status).toBe(200);
    expect((await get(base, '/api/auth/me', bearer(tok))).status).toBe(401);
    expect((await post(base, '/api/auth/login', { user: 'okname', password: 'longenough' })).status).toBe(401);
    // the admin keeps its operator role
    expect((await call(base, 'PUT', '/api/auth/accounts/admin', { roles: ['staff'] }, bearer(admin))).status).toBe(409);
  });

  it('the partner logs in at the document path with the password alone', async () => {
    const wrong = await post(base, '/api/partner/login', { password: 'not-the-password' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('invalid_credentials');
    const r = await post(base, '/api/partner/login', { password: TEST_PARTNER_PASSWORD });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['expiresAt', 'token']);
    const me = await get(base, '/api/auth/me', bearer(r.body.token));
    expect(me.body.identity).toMatchObject({ id: 'partner', roles: ['partner'] });
    expect((await post(base, '/api/partner/logout', undefined, bearer(r.body.token))).status).toBe(200);
    expect((await get(base, '/api/auth/me', bearer(r.body.token))).status).toBe(401);
  });

  it('one sign-in for every account kind: the partner path is the same sign-in, and the partner audit hears every partner attempt', async () => {
    const audit = async (limit: number, token: string) => {
      const r = await get(base, `/api/partner/audit?limit=${limit}`, bearer(token));
      expect(r.status).toBe(200);
      return (r.body.entries as { actor: string; action: string; result: string }[]).map((e) => `${e.actor} ${e.action} ${e.result}`).reverse();
    };
    // the document's path and the common sign-in: the same account, token and throttling
    const viaDoc = await post(base, '/api/partner/login', { password: TEST_PARTNER_PASSWORD });
    const viaCommon = await post(base, '/api/auth/login', { user: 'partner', password: TEST_PARTNER_PASSWORD });
    expect(viaDoc.status).toBe(200);
    expect(viaCommon.status).toBe(200);
    expect(viaCommon.body).toMatchObject({ user: 'partner', roles: ['partner'] });
    expect(viaCommon.body.expiresAt).toBe(viaDoc.body.expiresAt);
    for (const token of [viaDoc.body.token, viaCommon.body.token]) {
      expect((await get(base, '/api/auth/me', bearer(token))).body.identity).toMatchObject({ id: 'partner', roles: ['partner'], kind: 'account' });
    }
    // a wrong partner password on either path, an operator's sign-in, another account with the partner role
    expect((await post(base, '/api/auth/login', { user: 'partner', password: 'wrong-one' })).body.error.code).toBe('invalid_credentials');
    await login(base, 'admin', TEST_ADMIN_PASSWORD);
    const other = await signIn(base, ['partner']);
    const me = (await get(base, '/api/auth/me', bearer(other))).body.identity.id as string;
    expect((await post(base, '/api/auth/logout', undefined, bearer(viaCommon.body.token))).status).toBe(200);
    expect(await audit(5, viaDoc.body.token)).toEqual([
      'partner login ok',
      'partner login ok',
      '- login invalid_credentials',
      `${me} login ok`,
      'partner logout ok',
    ]);
    // bad inputs on the document's path: 400 with the shared shape, nothing signed in, nothing audited
    for (const body of [{}, { password: '' }, { password: 5 }, { user: 'admin', password: TEST_ADMIN_PASSWORD }]) {
      const r = await post(base, '/api/partner/login', body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_body');
    }
    expect((await audit(5, viaDoc.body.token)).at(-1)).toBe('partner logout ok');
    // sign-out on the partner path needs a partner's token
    expect((await post(base, '/api/partner/logout', undefined)).status).toBe(401);
    expect((await post(base, '/api/partner/logout', undefined, bearer(await signIn(base, ['staff'])))).status).toBe(403);
    expect((await post(base, '/api/partner/logout', undefined, bearer(viaDoc.body.token))).status).toBe(200);
    expect((await get(base, '/api/auth/me', bearer(viaDoc.body.token))).status).toBe(401);
  });

  it('staff issue scanner device tokens for a gate, and can revoke them', async () => {
    const staff = await signIn(base, ['staff']);
    const editor = await signIn(base, ['editor']);
    expect((await post(base, '/api/auth/devices', { gate: 'A', name: 'door' }, bearer(editor))).status).toBe(403);
    expect((await post(base, '/api/auth/devices', { gate: '', name: 'door' }, bearer(staff))).status).toBe(400);
    const r = await post(base, '/api/auth/devices', { gate: '동문 A', name: '스캐너 1' }, bearer(staff));
    expect(r.status).toBe(201);
    const me = await get(base, '/api/auth/me', bearer(r.body.token));
    expect(me.body.identity).toMatchObject({ kind: 'device', gate: '동문 A', name: '스캐너 1', roles: ['scanner'] });
    const list = await get(base, '/api/auth/devices', bearer(staff));
    expect(list.body.devices.map((d: any) => d.id)).toContain(r.body.device.id);
    expect((await call(base, 'DELETE', `/api/auth/devices/${r.body.device.id}`, undefined, bearer(staff))).status).toBe(200);
    expect((await get(base, '/api/auth/me', bearer(r.body.token))).status).toBe(401);
    expect((await call(base, 'DELETE', `/api/auth/devices/${r.body.device.id}`, undefined, bearer(staff))).status).toBe(404);
    expect(await deviceToken(base)).toMatch(/^mt_/);
  });

  it('refuses a form post on a state-changing route, even one that reads no body', async () => {
    const admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    const r = await fetch(base + '/api/auth/logout', {
      method: 'POST',
      headers: { ...bearer(admin), 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(r.status).toBe(415);
    expect((await get(base, '/api/auth/me', bearer(admin))).status).toBe(200);
  });

  it('WebSocket topics: auth frame, then a topic authorized by role and existence', async () => {
    const ws = await connectTopics(base);
    try {
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'test-private:a' }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'unauthorized' });
      ws.ws.send(JSON.stringify({ type: 'auth', token: 'mt_nope' }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'invalid_token' });
      const editor = await signIn(base, ['editor']);
      ws.ws.send(JSON.stringify({ type: 'auth', token: editor }));
      expect(await ws.next()).toMatchObject({ type: 'authenticated', roles: ['editor'] });
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'test-private:a' }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'forbidden' });
      const partner = (await post(base, '/api/partner/login', { password: TEST_PARTNER_PASSWORD })).body.token;
      ws.ws.send(JSON.stringify({ type: 'auth', token: partner }));
      expect(await ws.next()).toMatchObject({ type: 'authenticated' });
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'test-private:gone' }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'unknown_topic' });
      await ws.subscribe('test-private:a');
      maru.hub.publish('test-private:a', { hello: 1 });
      expect(await ws.next()).toEqual({ type: 'message', topic: 'test-private:a', data: { hello: 1 } });
    } finally {
      ws.close();
    }
  });

  it('a logout ends the WebSockets and SSE streams opened with that token (4401 invalid_token, an SSE closed event) and no others', async () => {
    const gone = await signIn(base, ['editor']);
    const kept = await signIn(base, ['editor']);
    const topics = await connectTopics(base);
    const other = await connectTopics(base);
    const yjs = new WebSocket(`${base.replace(/^http/, 'ws')}/yjs/auth-recheck?access_token=${gone}`);
    const yjsOpen = new Promise((resolve, reject) => yjs.once('open', resolve).once('error', reject));
    try {
      await topics.auth(gone);
      await other.auth(kept);
      await yjsOpen;
      const closed: [number, string][] = [];
      for (const ws of [topics.ws, yjs]) ws.once('close', (code, reason) => closed.push([code, String(reason)]));
      const stream = await fetch(`${base}/test/stream?access_token=${gone}`);
      expect(stream.status).toBe(200);
      let text: string | undefined;
      void stream.text().then((t) => (text = t));
      expect((await post(base, '/api/auth/logout', {}, bearer(gone))).status).toBe(200);
      // the hub checks every 100 ms here (AUTH_RECHECK_MS)
      await until('the sockets and the stream of the token to end', () => closed.length === 2 && text !== undefined, 5000);
      expect(closed).toEqual([
        [WS_CLOSE_INVALID_TOKEN, 'invalid_token'],
        [WS_CLOSE_INVALID_TOKEN, 'invalid_token'],
      ]);
      expect(text).toContain('event: hello');
      expect(text).toMatch(/event: closed\ndata: \{"error":\{"code":"invalid_token"/);
      // a socket of another token is still served
      other.ws.send(JSON.stringify({ type: 'ping' }));
      expect(await other.next()).toEqual({ type: 'pong' });
      expect(other.ws.readyState).toBe(WebSocket.OPEN);
    } finally {
      topics.close();
      other.close();
      yjs.close();
    }
  });

  it('a token that expires while its socket is open ends the socket at the next check', async () => {
    const editor = await signIn(base, ['editor']);
    const ws = await connectTopics(base);
    try {
      await ws.auth(editor);
      const closed = new Promise<number>((resolve) => ws.ws.once('close', (code) => resolve(code)));
      expect(await maru.hub.recheckCredentials()).toBe(0);
      clock.advance(3_600_001);
      expect(await maru.hub.recheckCredentials()).toBeGreaterThanOrEqual(1);
      expect(await closed).toBe(WS_CLOSE_INVALID_TOKEN);
    } finally {
      clock.set(T0);
      ws.close();
    }
  });

  it('WebSocket frames are handled in order: a subscribe sent right after auth sees the identity', async () => {
    const ws = await connectTopics(base);
    try {
      const partner = (await post(base, '/api/partner/login', { password: TEST_PARTNER_PASSWORD })).body.token;
      ws.ws.send(JSON.stringify({ type: 'auth', token: partner }));
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'test-private:b' }));
      expect(await ws.next()).toMatchObject({ type: 'authenticated' });
      expect(await ws.next()).toMatchObject({ type: 'subscribed', topic: 'test-private:b' });
    } finally {
      ws.close();
    }
  });

  it('WebSocket topics: names are bounded and a socket holds at most 100 subscriptions', async () => {
    maru.hub.topic({ name: 'test-open:*', policy: 'drop' });
    const ws = await connectTopics(base);
    try {
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: `test-open:${'x'.repeat(300)}` }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'invalid_topic' });
      for (let i = 0; i < 100; i++) await ws.subscribe(`test-open:${i}`);
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'test-open:100' }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'too_many_subscriptions' });
      // re-subscribing to a held topic is not a new one
      await ws.subscribe('test-open:5');
      ws.ws.send(JSON.stringify({ type: 'unsubscribe', topic: 'test-open:0' }));
      expect(await ws.next()).toMatchObject({ type: 'unsubscribed' });
      await ws.subscribe('test-open:100');
    } finally {
      ws.close();
    }
  });
});

describe('free-text names', () => {
  it('refuses control characters, NUL, lone surrogates and bidirectional overrides', () => {
    const s = label(20);
    for (const bad of ['a\u0000b', 'a\nb', 'a\u0007', 'x\u202Ey', 'x\u2066y', '\uD800', 'a\uDC00b', '', '   ', 'x'.repeat(21), 'a\u0085b']) {
      expect(s.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    for (const ok of ['재즈 나이트', 'Gate A', '😀 ok', 'x'.repeat(20), ' trimmed ']) {
      expect(s.safeParse(ok).success, ok).toBe(true);
    }
    expect(s.parse(' trimmed ')).toBe('trimmed');
  });
});

describe('identity model on Redis', () => {
  it('a token issued by one process is valid on another, and revoked everywhere at logout', async () => {
    const redis = await redisOrSkip();
    if (!redis.available) return;
    const prefix = uniquePrefix('auth');
    const s1 = await openRedisStore({ url: redis.url, prefix });
    const s2 = await openRedisStore({ url: redis.url, prefix });
    try {
      const clock = new ManualClock(T0);
      const mk = (store: typeof s1) =>
        new AuthService({ store, clock, logger: silent, tokenTtlMs: 60_000, partnerTokenTtlMs: 60_000, deviceTokenTtlMs: 60_000 });
      const a = mk(s1);
      const b = mk(s2);
      await Promise.all([a.bootstrap({ admin: TEST_ADMIN_PASSWORD }), b.bootstrap({ admin: TEST_ADMIN_PASSWORD })]);
      const out = await a.login('admin', TEST_ADMIN_PASSWORD, '127.0.0.1');
      expect(await b.authenticate(out.token)).toMatchObject({ id: 'admin', roles: ['operator'] });
      await b.logout(out.token, 'admin');
      expect(await a.authenticate(out.token)).toBeUndefined();
    } finally {
      await s1.close();
      await s2.close();
      await deletePrefix(redis.url, prefix);
    }
  });

  it('without a configured password, one random password is made and logged once across processes', async () => {
    const redis = await redisOrSkip();
    if (!redis.available) return;
    const prefix = uniquePrefix('auth');
    const s1 = await openRedisStore({ url: redis.url, prefix });
    const s2 = await openRedisStore({ url: redis.url, prefix });
    const lines: any[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) });
    try {
      const clock = new ManualClock(T0);
      const mk = (store: typeof s1) => new AuthService({ store, clock, logger, tokenTtlMs: 60_000, partnerTokenTtlMs: 60_000, deviceTokenTtlMs: 60_000 });
      await Promise.all([mk(s1).bootstrap({}), mk(s2).bootstrap({})]);
      const printed = lines.filter((l) => l.user === 'admin' && typeof l.password === 'string');
      expect(printed).toHaveLength(1);
      const svc = mk(s1);
      expect((await svc.login('admin', printed[0].password, '::1')).roles).toEqual(['operator']);
      // a restart prints nothing new
      lines.length = 0;
      await mk(s2).bootstrap({});
      expect(lines.filter((l) => typeof l.password === 'string')).toHaveLength(0);
    } finally {
      await s1.close();
      await s2.close();
      await deletePrefix(redis.url, prefix);
    }
  });
});
