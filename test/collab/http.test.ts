import pino from 'pino';
import { call } from '../support/http.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD, bearer, login, signIn } from '../support/auth.js';

const T0 = Date.parse('2026-11-21T12:00:00+09:00');
const silent = pino({ level: 'silent' });


describe('document collaboration over HTTP', () => {
  const clock = new ManualClock(T0);
  let maru: Maru;
  let base: string;
  /** Editors kim and lee, a staff member (no editor role), the operator. */
  const tok: Record<'kim' | 'lee' | 'staff' | 'admin', string> = { kim: '', lee: '', staff: '', admin: '' };
  const as = (who: keyof typeof tok) => (p: string, b: unknown) => call(base, 'POST', p, b, bearer(tok[who]));
  const post = as('kim');
  const lee = as('lee');
  const get = (p: string) => call(base, 'GET', p);

  beforeAll(async () => {
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('collab-http'), LOG_LEVEL: 'silent', MD_SWEEP_MS: '50', MD_MAX_BYTES: '2048', ...AUTH_TEST_ENV }),
      { clock, logger: silent },
    );
    base = maru.url;
    tok.kim = await signIn(base, ['editor'], 'kim');
    tok.lee = await signIn(base, ['editor'], 'lee');
    tok.staff = await signIn(base, ['staff'], 'stf');
    tok.admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
  });
  afterAll(() => maru.stop());

  it('states the service version 5.0 on every answer of its routes, errors included, and in /openapi.json', async () => {
    const ok = await fetch(`${base}/api/md/docs`);
    expect([ok.status, ok.headers.get('x-service-version')]).toEqual([200, '5.0']);
    const missing = await fetch(`${base}/api/md/doc/no-such-doc`);
    expect([missing.status, missing.headers.get('x-service-version')]).toEqual([404, '5.0']);
    const refused = await fetch(`${base}/api/md/save`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect([refused.status, refused.headers.get('x-service-version')]).toEqual([401, '5.0']);
    // another service's answer does not carry it
    expect((await fetch(`${base}/healthz`)).headers.get('x-service-version')).toBeNull();
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as any;
    expect(doc.paths['/api/md/docs'].get.responses['200'].headers['x-service-version'].schema.const).toBe('5.0');
  });

  it('saves, gets, lists by category; identical content makes no new version', async () => {
    const a = await post('/api/md/save', { slug: 'guide', category: 'manual', content: '# 안내서\n\n실시간협업문서 입니다.' });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ changed: true, doc: { slug: 'guide', title: '안내서', version: 1, category: 'manual', author: 'kim' } });
    const same = await post('/api/md/save', { slug: 'guide', content: '# 안내서\n\n실시간협업문서 입니다.', baseVersion: 1 });
    expect(same.body).toMatchObject({ changed: false, doc: { version: 1 } });
    await post('/api/md/save', { slug: 'memo', category: 'notes', content: 'body mentions 안내 only' });
    const list = await get('/api/md/docs?category=manual');
    expect(list.body.docs.map((d: any) => d.slug)).toEqual(['guide']);
    expect(list.body.categories).toEqual({ manual: 1, notes: 1 });
    expect((await get('/api/md/doc/guide')).body.doc.content).toContain('실시간');
  });

  it('a stale baseVersion is a 409 carrying the current version and content', async () => {
    await post('/api/md/save', { slug: 'guide', content: '# 안내서\n\nv2 실시간협업문서', baseVersion: 1 });
    const stale = await post('/api/md/save', { slug: 'guide', content: 'mine', baseVersion: 1 });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'version_conflict', details: { current_version: 2, base_version: 1, content: '# 안내서\n\nv2 실시간협업문서' } });
  });

  it('keeps 50 versions, drops the oldest, and restore makes a new version', async () => {
    for (let i = 0; i < 55; i++) await post('/api/md/save', { slug: 'cap', content: `line ${i}` });
    const h = await get('/api/md/history/cap');
    expect(h.body.current).toBe(55);
    expect(h.body.versions).toHaveLength(50);
    expect(h.body.versions[0].version).toBe(55);
    expect(h.body.versions.at(-1).version).toBe(6);
    expect((await get('/api/md/history/cap/3')).status).toBe(404);
    const r = await post('/api/md/restore', { slug: 'cap', version: 10 });
    expect(r.body).toMatchObject({ changed: true, restored_from: 10, doc: { version: 56, content: 'line 9' } });
    expect((await get('/api/md/history/cap')).body.versions[0]).toMatchObject({ version: 56, restored_from: 10 });
  });

  it('every write needs an editor: none 401, a wrong token 401, another role 403; reading stays open', async () => {
    const writes: [string, unknown][] = [
      ['/api/md/save', { slug: 'guide', content: 'x' }],
      ['/api/md/delete', { slug: 'guide' }],
      ['/api/md/restore', { slug: 'guide', version: 1 }],
      ['/api/md/lock', { slug: 'guide' }],
      ['/api/md/unlock', { slug: 'guide' }],
      ['/api/md/presence', { slug: 'guide' }],
      ['/api/md/presence/leave', { slug: 'guide', id: 'a'.repeat(16) }],
    ];
    for (const [path, body] of writes) {
      const none = await call(base, 'POST', path, body);
      expect(none.status, path).toBe(401);
      expect(none.body.error.code).toBe('unauthorized');
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const wrong = await call(base, 'POST', path, body, bearer('mt_' + 'x'.repeat(43)));
      expect([wrong.status, wrong.body.error.code], path).toEqual([401, 'invalid_token']);
      const staff = await as('staff')(path, body);
      expect([staff.status, staff.body.error.code], path).toEqual([403, 'forbidden']);
    }
    // nothing was written by the refused requests
    expect((await get('/api/md/doc/guide')).body.doc).toMatchObject({ version: 2, content: '# 안내서\n\nv2 실시간협업문서' });
    for (const path of ['/api/md/docs', '/api/md/doc/guide', '/api/md/search?q=guide', '/api/md/history/guide', '/api/md/history/guide/1', '/api/md/lock/guide', '/api/md/stats', '/api/md/presence/guide']) {
      expect((await get(path)).status, path).toBe(200);
    }
    // the editor's writes go through; the author is the signed-in identity (the body names nobody)
    const saved = await lee('/api/md/save', { slug: 'auth-doc', content: 'by lee' });
    expect(saved.status).toBe(200);
    expect(saved.body.doc.author).toBe('lee');
    expect((await lee('/api/md/save', { slug: 'auth-doc', content: 'x', author: 'kim' })).body.error.code).toBe('invalid_body');
    expect((await lee('/api/md/restore', { slug: 'auth-doc', version: 1 })).status).toBe(200);
    expect((await lee('/api/md/delete', { slug: 'auth-doc' })).body).toEqual({ deleted: true, slug: 'auth-doc' });
  });

  it('locks: held by the signed-in identity, 423 for others, renewed and released by the holder only, expiry by the clock notifies the room', async () => {
    const live = await connectTopics(base);
    await live.subscribe('md:guide');
    const lock = await post('/api/md/lock', { slug: 'guide' });
    expect(lock.status).toBe(200);
    expect(lock.body).toMatchObject({ locked: true, holder: 'kim', holder_name: 'kim', renewed: false, remaining_ms: 600_000 });
    expect(lock.body.token).toBeUndefined();
    expect((await live.next()).data).toMatchObject({ type: 'lock', state: 'locked', holder: 'kim' });
    // the document's request names the holder: it must be the signed-in identity (403 otherwise, nothing changes)
    const impostor = await lee('/api/md/lock', { slug: 'guide', holder: 'kim' });
    expect([impostor.status, impostor.body.error.code]).toEqual([403, 'forbidden']);
    expect((await lee('/api/md/lock', { slug: 'guide', holder: '' })).status).toBe(400);
    const again = await post('/api/md/lock', { slug: 'guide', holder: 'kim' });
    expect(again.body).toMatchObject({ locked: true, holder: 'kim', renewed: true });

    // another editor: the lock request (a renewal by a non-holder) is 423 naming the holder and the expiry
    const other = await lee('/api/md/lock', { slug: 'guide' });
    expect(other.status).toBe(423);
    expect(other.body.error).toMatchObject({ code: 'document_locked', details: { holder: 'kim', expires_at: new Date(clock.now() + 600_000).toISOString() } });
    const save = await lee('/api/md/save', { slug: 'guide', content: 'lee writes' });
    expect(save.status).toBe(423);
    expect(save.body.error.message).toContain('kim');
    expect((await lee('/api/md/restore', { slug: 'guide', version: 1 })).status).toBe(423);
    expect((await lee('/api/md/delete', { slug: 'guide' })).status).toBe(423);
    const notHolder = await lee('/api/md/unlock', { slug: 'guide' });
    expect([notHolder.status, notHolder.body.error.code]).toEqual([403, 'not_lock_holder']);
    expect((await post('/api/md/save', { slug: 'guide', content: '# 안내서\n\nkim 실시간협업문서' })).status).toBe(200);

    clock.advance(5 * 60_000);
    const renew = await post('/api/md/lock', { slug: 'guide' });
    expect(renew.body).toMatchObject({ renewed: true, holder: 'kim', remaining_ms: 600_000 });
    expect((await get('/api/md/stats')).body.locks).toBe(1);
    expect((await get('/api/md/lock/guide')).body).toMatchObject({ locked: true, holder: 'kim' });

    clock.advance(10 * 60_000 + 1);
    let ev;
    do ev = (await live.next()).data;
    while (ev.type !== 'lock' || ev.state !== 'expired');
    expect(ev).toMatchObject({ slug: 'guide', holder: 'kim' });
    expect((await get('/api/md/lock/guide')).body).toEqual({ slug: 'guide', locked: false });
    expect((await lee('/api/md/save', { slug: 'guide', content: '# 안내서\n\nlee 실시간협업문서' })).status).toBe(200);

    await lee('/api/md/lock', { slug: 'guide' });
    expect((await lee('/api/md/unlock', { slug: 'guide' })).body).toMatchObject({ released: true, locked: false });
    expect((await lee('/api/md/unlock', { slug: 'guide' })).body).toMatchObject({ released: false });
    live.close();
  });

  it('renewals stop at the maximum hold (60 minutes from the acquisition); then the lock runs out and anyone may take it', async () => {
    await post('/api/md/save', { slug: 'long', content: 'long edit' });
    const first = await post('/api/md/lock', { slug: 'long' });
    const acquired = Date.parse(first.body.acquired_at);
    expect(first.body.max_until).toBe(new Date(acquired + 3_600_000).toISOString());
    for (let i = 0; i < 5; i++) {
      clock.advance(9 * 60_000);
      expect((await post('/api/md/lock', { slug: 'long' })).body).toMatchObject({ renewed: true, remaining_ms: 600_000 });
    }
    // 45 minutes in: the renewal is cut at the maximum
    clock.advance(9 * 60_000);
    const cut = await post('/api/md/lock', { slug: 'long' });
    expect(cut.body).toMatchObject({ renewed: true, expires_at: new Date(acquired + 3_600_000).toISOString(), remaining_ms: 6 * 60_000 });
    // past the maximum: refused, the lock keeps its end
    clock.advance(60_000);
    const refused = await post('/api/md/lock', { slug: 'long' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'lock_max_reached', details: { max_until: new Date(acquired + 3_600_000).toISOString() } });
    expect((await get('/api/md/lock/long')).body).toMatchObject({ locked: true, holder: 'kim', expires_at: new Date(acquired + 3_600_000).toISOString() });
    clock.advance(5 * 60_000 + 1);
    expect((await lee('/api/md/lock', { slug: 'long' })).body).toMatchObject({ locked: true, holder: 'lee', renewed: false });
    await lee('/api/md/unlock', { slug: 'long' });
  });

  it('an operator breaks another editor\'s lock; the room hears who broke it', async () => {
    const live = await connectTopics(base);
    await live.subscribe('md:guide');
    expect((await lee('/api/md/lock', { slug: 'guide' })).status).toBe(200);
    // the operator, too, is held by the lock until it breaks it
    expect((await as('admin')('/api/md/save', { slug: 'guide', content: 'operator text' })).status).toBe(423);
    const broke = await as('admin')('/api/md/unlock', { slug: 'guide' });
    expect(broke.status).toBe(200);
    expect(broke.body).toMatchObject({ released: true, broken: true, holder: 'lee', locked: false });
    let ev;
    do ev = (await live.next()).data;
    while (ev.type !== 'lock' || ev.state === 'locked');
    expect(ev).toMatchObject({ state: 'broken', holder: 'lee', broken_by: 'admin' });
    expect((await get('/api/md/lock/guide')).body.locked).toBe(false);
    expect((await post('/api/md/save', { slug: 'guide', content: '# 안내서\n\nafter the break 실시간협업문서' })).status).toBe(200);
    live.close();
  });

  it('searches title above body, Korean by partial words, with highlighted snippets', async () => {
    await post('/api/md/save', { slug: 'hyup', content: '# 협업 규칙\n\n짧은 본문' });
    const r = await get('/api/md/search?q=' + encodeURIComponent('협업'));
    expect(r.body.results.map((x: any) => x.slug).slice(0, 2)).toEqual(['hyup', 'guide']);
    const guide = r.body.results.find((x: any) => x.slug === 'guide');
    expect(guide.snippet).toContain('실시간<mark>협업</mark>문서');
    expect(r.body.results[0].title_html).toBe('<mark>협업</mark> 규칙');
    expect((await get('/api/md/search?q=' + encodeURIComponent('실시간협업문서'))).body.results[0].slug).toBe('guide');
    expect((await get('/api/md/search?q=zzzz')).body.results).toEqual([]);
  });

  it('statistics: categories, 8 recent edits, lock count and totals', async () => {
    for (let i = 0; i < 9; i++) {
      clock.advance(1000);
      await post('/api/md/save', { slug: `s${i}`, category: 'bulk', content: `doc ${i}` });
    }
    const s = (await get('/api/md/stats')).body;
    expect(s.recent).toHaveLength(8);
    expect(s.recent[0].slug).toBe('s8');
    expect(s.categories.bulk).toBe(9);
    expect(s.locks).toBe(0);
    expect(s.totals).toMatchObject({ documents: 14, documents_this_week: 14, categories: 4 });
    expect(s.totals.average_size).toBeGreaterThan(0);
  });

  it('presence: unique colours, join and leave on the live channel, dead peers expire after 30 s', async () => {
    const live = await connectTopics(base);
    await live.subscribe('md:room');
    const a = await post('/api/md/presence', { slug: 'room' });
    const b = await lee('/api/md/presence', { slug: 'room' });
    expect(a.body.color).not.toBe(b.body.color);
    expect((await live.next()).data).toMatchObject({ type: 'presence', event: 'join', peer: { name: 'kim', user: 'kim' } });
    expect((await live.next()).data).toMatchObject({ type: 'presence', event: 'join', peer: { name: 'lee', user: 'lee' } });
    // someone else's presence entry is not yours to renew or end
    expect((await lee('/api/md/presence', { slug: 'room', id: a.body.id })).body.error.code).toBe('not_your_presence');
    expect((await lee('/api/md/presence/leave', { slug: 'room', id: a.body.id })).status).toBe(403);
    await post('/api/md/presence/leave', { slug: 'room', id: a.body.id });
    expect((await live.next()).data).toMatchObject({ event: 'leave', reason: 'left', peer: { name: 'kim' } });
    clock.advance(31_000);
    expect((await live.next()).data).toMatchObject({ event: 'leave', reason: 'timeout', peer: { name: 'lee' }, peers: [] });
    live.close();
  });

  it('bad input: unknown slug, path characters, oversized document, malformed body', async () => {
    expect((await get('/api/md/doc/nope')).body.error.code).toBe('unknown_document');
    expect((await get('/api/md/doc/..%2Fetc')).status).toBe(400);
    expect((await post('/api/md/save', { slug: '../x', content: 'x' })).body.error.code).toBe('invalid_body');
    const big = await post('/api/md/save', { slug: 'big', content: 'x'.repeat(2049) });
    expect(big.status).toBe(413);
    expect(big.body.error).toMatchObject({ code: 'document_too_large', details: { limit: 2048 } });
    expect((await post('/api/md/unlock', { slug: 'guide', token: 'f'.repeat(32) })).body.error.code).toBe('invalid_body');
    expect((await post('/api/md/lock', {})).status).toBe(400);
  });

  it('exports any version as markdown or as one standalone, sanitised HTML file', async () => {
    const body = '# 내보내기 <script>alert(1)</script>\n\n<img src=x onerror=alert(2)> **굵게** [누르기](javascript:alert(3)) [안전](https://example.kr/a "t") ![그림](javascript:x)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n';
    expect((await post('/api/md/save', { slug: '내보내기', content: body })).status).toBe(200);
    expect((await post('/api/md/save', { slug: '내보내기', content: `${body}\n둘째 판\n`, baseVersion: 1 })).status).toBe(200);
    const slug = encodeURIComponent('내보내기');
    const md = await fetch(`${base}/api/md/export/${slug}?format=md&version=1`);
    expect(md.status).toBe(200);
    expect(md.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(md.headers.get('content-disposition')).toBe(`attachment; filename="____-v1.md"; filename*=UTF-8''${encodeURIComponent('내보내기-v1.md')}`);
    expect(await md.text()).toBe(body);
    const html = await fetch(`${base}/api/md/export/${slug}?format=html`);
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const page = await html.text();
    expect(page).toContain('둘째 판');
    expect(page).toContain('<strong>굵게</strong>');
    expect(page).toContain('<table>');
    expect(page).toContain('<a href="https://example.kr/a" title="t" rel="noopener noreferrer">안전</a>');
    // no markup from the document survives as markup; unsafe addresses are dropped, their text kept
    expect(page).not.toMatch(/<script|<img[^>]*onerror|javascript:/i);
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).toContain('누르기');
    expect(page).toContain(`content="default-src 'none'`);
    // bad input: unknown document or version, unknown format
    expect((await fetch(`${base}/api/md/export/no-such`)).status).toBe(404);
    expect((await (await fetch(`${base}/api/md/export/${slug}?version=9`)).json()).error.code).toBe('unknown_version');
    expect((await fetch(`${base}/api/md/export/${slug}?format=pdf`)).status).toBe(400);
    expect((await fetch(`${base}/api/md/export/${slug}?version=0`)).status).toBe(400);
  });
});
