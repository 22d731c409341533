import pino from 'pino';
import { call } from '../support/http.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';

const T0 = Date.parse('2026-11-21T12:00:00+09:00');
const silent = pino({ level: 'silent' });


describe('document collaboration over HTTP', () => {
  const clock = new ManualClock(T0);
  let maru: Maru;
  let base: string;
  const post = (p: string, b: unknown) => call(base, 'POST', p, b);
  const get = (p: string) => call(base, 'GET', p);

  beforeAll(async () => {
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('collab-http'), LOG_LEVEL: 'silent', MD_SWEEP_MS: '50', MD_MAX_BYTES: '2048' }),
      { clock, logger: silent },
    );
    base = maru.url;
  });
  afterAll(() => maru.stop());

  it('saves, gets, lists by category; identical content makes no new version', async () => {
    const a = await post('/api/md/save', { slug: 'guide', category: 'manual', content: '# 안내서\n\n실시간협업문서 입니다.', author: 'kim' });
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

  it('locks: holder token, 423 for others, renew and release by the holder only, expiry by the clock notifies the room', async () => {
    const live = await connectTopics(base);
    await live.subscribe('md:guide');
    const lock = await post('/api/md/lock', { slug: 'guide', holder: 'kim' });
    expect(lock.status).toBe(200);
    expect(lock.body).toMatchObject({ locked: true, holder: 'kim', renewed: false, remaining_ms: 600_000 });
    const token = lock.body.token;
    expect((await live.next()).data).toMatchObject({ type: 'lock', state: 'locked', holder: 'kim' });

    // a lock request on a locked document: 423 naming the holder and the expiry
    const other = await post('/api/md/lock', { slug: 'guide', holder: 'lee' });
    expect(other.status).toBe(423);
    expect(other.body.error).toMatchObject({ code: 'document_locked', details: { holder: 'kim', expires_at: new Date(T0 + 600_000).toISOString() } });
    const save = await post('/api/md/save', { slug: 'guide', content: 'lee writes' });
    expect(save.status).toBe(423);
    expect(save.body.error.message).toContain('kim');
    expect((await post('/api/md/unlock', { slug: 'guide', token: 'f'.repeat(32) })).status).toBe(403);
    expect((await post('/api/md/save', { slug: 'guide', content: '# 안내서\n\nkim 실시간협업문서', lockToken: token })).status).toBe(200);

    clock.advance(5 * 60_000);
    const renew = await post('/api/md/lock', { slug: 'guide', holder: 'kim', token });
    expect(renew.body).toMatchObject({ renewed: true, token, remaining_ms: 600_000 });
    expect((await get('/api/md/stats')).body.locks).toBe(1);
    expect((await get('/api/md/lock/guide')).body).toMatchObject({ locked: true, holder: 'kim' });

    clock.advance(10 * 60_000 + 1);
    let ev;
    do ev = (await live.next()).data;
    while (ev.type !== 'lock' || ev.state !== 'expired');
    expect(ev).toMatchObject({ slug: 'guide', holder: 'kim' });
    expect((await get('/api/md/lock/guide')).body).toEqual({ slug: 'guide', locked: false });
    expect((await post('/api/md/save', { slug: 'guide', content: '# 안내서\n\nlee 실시간협업문서' })).status).toBe(200);

    const l2 = await post('/api/md/lock', { slug: 'guide', holder: 'lee' });
    expect((await post('/api/md/unlock', { slug: 'guide', token: l2.body.token })).body).toMatchObject({ released: true });
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
    expect(s.totals).toMatchObject({ documents: 13, documents_this_week: 13, categories: 4 });
    expect(s.totals.average_size).toBeGreaterThan(0);
  });

  it('presence: unique colours, join and leave on the live channel, dead peers expire after 30 s', async () => {
    const live = await connectTopics(base);
    await live.subscribe('md:room');
    const a = await post('/api/md/presence', { slug: 'room', name: 'a' });
    const b = await post('/api/md/presence', { slug: 'room', name: 'b' });
    expect(a.body.color).not.toBe(b.body.color);
    expect((await live.next()).data).toMatchObject({ type: 'presence', event: 'join', peer: { name: 'a' } });
    expect((await live.next()).data).toMatchObject({ type: 'presence', event: 'join', peer: { name: 'b' } });
    await post('/api/md/presence/leave', { slug: 'room', id: a.body.id });
    expect((await live.next()).data).toMatchObject({ event: 'leave', reason: 'left', peer: { name: 'a' } });
    clock.advance(31_000);
    expect((await live.next()).data).toMatchObject({ event: 'leave', reason: 'timeout', peer: { name: 'b' }, peers: [] });
    live.close();
  });

  it('bad input: unknown slug, path characters, oversized document, malformed body', async () => {
    expect((await get('/api/md/doc/nope')).body.error.code).toBe('unknown_document');
    expect((await get('/api/md/doc/..%2Fetc')).status).toBe(400);
    expect((await post('/api/md/save', { slug: '../x', content: 'x' })).body.error.code).toBe('invalid_body');
    const big = await post('/api/md/save', { slug: 'big', content: 'x'.repeat(2049) });
    expect(big.status).toBe(413);
    expect(big.body.error).toMatchObject({ code: 'document_too_large', details: { limit: 2048 } });
    expect((await post('/api/md/unlock', { slug: 'guide' })).status).toBe(400);
  });
});
