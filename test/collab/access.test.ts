import { EventSource } from 'eventsource';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD, bearer, login, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { waitFor } from '../support/wait.js';
import { connectTopics } from '../support/ws.js';
import { editorClient } from '../support/yjs.js';


const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-11-29T12:00:00+09:00');

/**
 * Access per document and share links (docs/collab.md "Access", "Share links"): every route, the
 * list's stream, the /ws topics, presence and /yjs, with the owner, a named editor, a named reader,
 * another editor, a share link and no credential.
 */
describe('document access and share links', () => {
  const clock = new ManualClock(T0);
  let maru: Maru;
  let base: string;
  const tok = { own: '', ed: '', rd: '', other: '', staff: '', admin: '' };
  type Who = keyof typeof tok | 'none' | 'wrong' | { link: string };
  const hdr = (w: Who): Record<string, string> =>
    w === 'none' ? {} : w === 'wrong' ? bearer('mt_' + 'x'.repeat(43)) : typeof w === 'object' ? bearer(w.link) : bearer(tok[w]);
  const get = (w: Who, p: string) => call(base, 'GET', p, undefined, hdr(w));
  const post = (w: Who, p: string, b: unknown) => call(base, 'POST', p, b, hdr(w));
  const ws = (p: string) => base.replace(/^http/, 'ws') + p;

  beforeAll(async () => {
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('collab-access'), LOG_LEVEL: 'silent', MD_RESYNC_MS: '100', AUTH_RECHECK_MS: '60000', ...AUTH_TEST_ENV }),
      { clock, logger: silent },
    );
    base = maru.url;
    tok.own = await signIn(base, ['editor'], 'owner1');
    tok.ed = await signIn(base, ['editor'], 'named-ed');
    tok.rd = await signIn(base, ['editor'], 'named-rd');
    tok.other = await signIn(base, ['editor'], 'other-ed');
    tok.staff = await signIn(base, ['staff'], 'staff1');
    tok.admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    expect((await post('own', '/api/md/save', { slug: 'secret', content: '# 비밀 메모\n\nprivate words zebra', visibility: 'private' })).status).toBe(200);
    expect((await post('own', '/api/md/access', { slug: 'secret', editors: ['named-ed'], readers: ['named-rd'] })).status).toBe(200);
    expect((await post('own', '/api/md/save', { slug: 'open-note', content: '# Team note\n\nteam words zebra' })).status).toBe(200);
  });
  afterAll(() => maru.stop());

  it('a new document belongs to its maker, team by default; the access answer says what the caller may do', async () => {
    const team = await get('none', '/api/md/access/open-note');
    expect(team.status).toBe(200);
    expect(team.body).toEqual({
      slug: 'open-note',
      access: { owner: 'owner1', visibility: 'team', editors: [], readers: [] },
      can: { read: true, comment: false, write: false, manage: false },
    });
    expect((await get('other', '/api/md/access/open-note')).body.can).toEqual({ read: true, comment: true, write: true, manage: false });
    expect((await get('own', '/api/md/doc/secret')).body.doc).toMatchObject({ slug: 'secret', visibility: 'private' });
    expect((await get('own', '/api/md/doc/secret')).body.doc.access).toBeUndefined();
    expect((await get('rd', '/api/md/access/secret')).body).toMatchObject({
      access: { owner: 'owner1', visibility: 'private', editors: ['named-ed'], readers: ['named-rd'] },
      can: { read: true, write: false, manage: false },
    });
  });

  it('every reading route of a private document: owner, named editor, named reader and operator read; another editor 403, nobody 401, a wrong token 401', async () => {
    const paths = ['/api/md/doc/secret', '/api/md/history/secret', '/api/md/history/secret/1', '/api/md/export/secret', '/api/md/export/secret?format=html', '/api/md/lock/secret', '/api/md/presence/secret', '/api/md/access/secret'];
    for (const p of paths) {
      for (const w of ['own', 'ed', 'rd', 'admin'] as const) expect([p, w, (await get(w, p)).status]).toEqual([p, w, 200]);
      const other = await get('other', p);
      expect([p, other.status, other.body.error.code]).toEqual([p, 403, 'forbidden']);
      const staff = await get('staff', p);
      expect([p, staff.status]).toEqual([p, 403]);
      const none = await get('none', p);
      expect([p, none.status, none.body.error.code]).toEqual([p, 401, 'unauthorized']);
      const wrong = await get('wrong', p);
      expect([p, wrong.status, wrong.body.error.code]).toEqual([p, 401, 'invalid_token']);
    }
    // the team document reads as every document always did
    expect((await get('none', '/api/md/doc/open-note')).status).toBe(200);
  });

  it('the list, search and statistics show a person only what that person may read', async () => {
    const slugs = async (w: Who) => ((await get(w, '/api/md/docs')).body.docs as { slug: string }[]).map((d) => d.slug).sort();
    expect(await slugs('own')).toEqual(['open-note', 'secret']);
    expect(await slugs('rd')).toEqual(['open-note', 'secret']);
    expect(await slugs('other')).toEqual(['open-note']);
    expect(await slugs('none')).toEqual(['open-note']);
    const found = async (w: Who) => ((await get(w, '/api/md/search?q=zebra')).body.results as { slug: string }[]).map((d) => d.slug).sort();
    expect(await found('ed')).toEqual(['open-note', 'secret']);
    expect(await found('other')).toEqual(['open-note']);
    expect(await found('none')).toEqual(['open-note']);
    const stats = async (w: Who) => (await get(w, '/api/md/stats')).body;
    expect((await stats('own')).totals.documents).toBe(2);
    expect((await stats('other')).totals.documents).toBe(1);
    expect((await stats('none')).recent.map((d: { slug: string }) => d.slug)).toEqual(['open-note']);
    expect((await get('wrong', '/api/md/docs')).status).toBe(401);
  });

  it('writes: the owner and named editors write; a named reader is 403 read_only; another editor 403; nothing changes', async () => {
    const v = (await get('own', '/api/md/doc/secret')).body.doc.version;
    expect((await post('ed', '/api/md/save', { slug: 'secret', content: '# 비밀 메모\n\nedited by the named editor zebra' })).status).toBe(200);
    for (const [p, body] of [
      ['/api/md/save', { slug: 'secret', content: 'reader was here' }],
      ['/api/md/restore', { slug: 'secret', version: 1 }],
      ['/api/md/delete', { slug: 'secret' }],
      ['/api/md/lock', { slug: 'secret' }],
      ['/api/md/unlock', { slug: 'secret' }],
      ['/api/md/presence', { slug: 'secret' }],
    ] as const) {
      const r = await post('rd', p, body);
      expect([p, r.status, r.body.error.code]).toEqual([p, 403, 'read_only']);
      const o = await post('other', p, body);
      expect([p, o.status, o.body.error.code]).toEqual([p, 403, 'forbidden']);
      const n = await post('none', p, body);
      expect([p, n.status]).toEqual([p, 401]);
    }
    const after = (await get('own', '/api/md/doc/secret')).body.doc;
    expect(after.version).toBe(v + 1);
    expect(after.content).toContain('named editor');
    // the presence list stays readable for the reader, who is not on it
    expect((await get('rd', '/api/md/presence/secret')).body.peers).toEqual([]);
    // a team document that names editors is written by them and its owner only
    await post('own', '/api/md/access', { slug: 'open-note', editors: ['named-ed'] });
    expect((await post('other', '/api/md/save', { slug: 'open-note', content: 'no' })).body.error.code).toBe('read_only');
    expect((await post('ed', '/api/md/save', { slug: 'open-note', content: '# Team note\n\nteam words zebra, named' })).status).toBe(200);
    await post('own', '/api/md/access', { slug: 'open-note', editors: [] });
    expect((await post('other', '/api/md/save', { slug: 'open-note', content: '# Team note\n\nteam words zebra, again' })).status).toBe(200);
  });

  it('changing access: the owner or an operator; bad input is a 400 and changes nothing', async () => {
    const before = (await get('own', '/api/md/access/secret')).body.access;
    expect((await post('ed', '/api/md/access', { slug: 'secret', visibility: 'public' })).body.error.code).toBe('not_owner');
    expect((await post('other', '/api/md/access', { slug: 'secret', visibility: 'public' })).status).toBe(403);
    expect((await post('staff', '/api/md/access', { slug: 'secret', visibility: 'public' })).status).toBe(403);
    expect((await post('none', '/api/md/access', { slug: 'secret', visibility: 'public' })).status).toBe(401);
    expect((await post('wrong', '/api/md/access', { slug: 'secret', visibility: 'public' })).status).toBe(401);
    expect((await post('own', '/api/md/access', { slug: 'secret', visibility: 'secret' })).body.error.code).toBe('invalid_body');
    expect((await post('own', '/api/md/access', { slug: 'secret', readers: Array.from({ length: 51 }, (_, i) => `r${i}`) })).status).toBe(400);
    expect((await post('own', '/api/md/access', { slug: 'secret', readers: [''] })).status).toBe(400);
    expect((await post('own', '/api/md/access', { slug: 'secret', extra: 1 })).status).toBe(400);
    expect((await post('own', '/api/md/access', { slug: 'no-such', visibility: 'public' })).status).toBe(404);
    expect((await post('own', '/api/md/access', { slug: 'secret', owner: 'other-ed' })).body.error.code).toBe('not_owner');
    expect((await get('own', '/api/md/access/secret')).body.access).toEqual(before);
    // an operator changes it (and may name another owner); the owner changes it back
    expect((await post('admin', '/api/md/access', { slug: 'secret', visibility: 'public' })).body.access.visibility).toBe('public');
    expect((await get('none', '/api/md/doc/secret')).status).toBe(200);
    expect((await post('own', '/api/md/access', { slug: 'secret', visibility: 'private' })).status).toBe(200);
    expect((await get('none', '/api/md/doc/secret')).status).toBe(401);
  });

  it('/ws topics: a private document\'s topic for those who may read it; its saves stay off the list\'s channel and stream', async () => {
    const anon = await connectTopics(base);
    anon.ws.send(JSON.stringify({ type: 'subscribe', topic: 'md:secret' }));
    expect(await anon.next()).toMatchObject({ type: 'error', code: 'unauthorized' });
    const other = await connectTopics(base);
    await other.auth(tok.other);
    other.ws.send(JSON.stringify({ type: 'subscribe', topic: 'md:secret' }));
    expect(await other.next()).toMatchObject({ type: 'error', code: 'forbidden' });
    const reader = await connectTopics(base);
    await reader.auth(tok.rd);
    await reader.subscribe('md:secret');
    await other.subscribe('md:all');
    const seen: string[] = [];
    const es = new EventSource(`${base}/api/md/stream`);
    es.addEventListener('saved', (e) => seen.push(JSON.parse((e as MessageEvent).data).slug));
    await waitFor(() => es.readyState === EventSource.OPEN, 5000, 'stream open');
    // its lock changes stay off the list's channel too
    expect((await post('own', '/api/md/lock', { slug: 'secret' })).status).toBe(200);
    expect((await post('own', '/api/md/unlock', { slug: 'secret' })).status).toBe(200);
    expect(await reader.next()).toMatchObject({ topic: 'md:secret', data: { type: 'lock', state: 'locked' } });
    expect(await reader.next()).toMatchObject({ topic: 'md:secret', data: { type: 'lock', state: 'released' } });
    await post('own', '/api/md/save', { slug: 'secret', content: '# 비밀 메모\n\nsaved while watched' });
    await post('own', '/api/md/save', { slug: 'open-note', content: '# Team note\n\nsaved while watched' });
    expect(await reader.next()).toMatchObject({ type: 'message', topic: 'md:secret', data: { type: 'saved', slug: 'secret' } });
    const listed = await other.next();
    expect(listed).toMatchObject({ topic: 'md:all', data: { type: 'saved', slug: 'open-note' } });
    await waitFor(() => seen.length > 0, 5000, 'stream event');
    expect(seen).toEqual(['open-note']);
    es.close();
    for (const c of [anon, other, reader]) c.close();
  });

  it('/yjs: a named reader connects with the stock client read-only: sees the text and the editors, its edit is refused with 4403, changes nothing and closes nothing else', async () => {
    const upgrade = (path: string) =>
      new Promise<number>((r) => {
        const w = new WebSocket(ws(path));
        w.on('open', () => (r(101), w.close()));
        w.on('unexpected-response', (_q, res) => r(res.statusCode ?? 0));
        w.on('error', () => undefined);
      });
    expect(await upgrade('/yjs/secret')).toBe(401);
    expect(await upgrade(`/yjs/secret?access_token=${tok.other}`)).toBe(403);
    expect(await upgrade(`/yjs/secret?access_token=${tok.staff}`)).toBe(403);
    expect(await upgrade(`/yjs/secret?access_token=mt_${'y'.repeat(43)}`)).toBe(401);

    const writer = editorClient(base, 'secret', '편집자', tok.ed);
    await waitFor(() => writer.provider.synced, 8000, 'writer sync');
    const reader = editorClient(base, 'secret', '읽는이', tok.rd);
    const closes: number[] = [];
    reader.provider.on('connection-close', (e: CloseEvent | null) => closes.push(e?.code ?? 0));
    await waitFor(() => reader.provider.synced, 8000, 'reader sync');
    expect(reader.text.toString()).toBe(writer.text.toString());
    // the writer's edits reach the reader; the reader is not shown as an editor in awareness
    writer.text.insert(0, 'W');
    await waitFor(() => reader.text.toString().startsWith('W'), 5000, 'reader sees the edit');
    await new Promise((r) => setTimeout(r, 300));
    const names = [...writer.provider.awareness.getStates().values()].map((s) => (s as { user?: { name?: string } }).user?.name);
    expect(names).toEqual(['편집자']);
    expect([...reader.provider.awareness.getStates().values()].map((s) => (s as { user?: { name?: string } }).user?.name).sort()).toEqual(['읽는이', '편집자']);
    // the reader writes: refused with 4403 (final: the stock client does not come back)
    reader.text.insert(0, 'READER ');
    await waitFor(() => closes.includes(4403), 5000, 'reader closed with 4403');
    writer.text.insert(1, 'X');
    await new Promise((r) => setTimeout(r, 300));
    expect(writer.provider.wsconnected).toBe(true);
    expect(writer.text.toString().startsWith('WX')).toBe(true);
    expect(writer.text.toString()).not.toContain('READER');
    const fresh = editorClient(base, 'secret', 'check', tok.own);
    await waitFor(() => fresh.provider.synced, 8000, 'fresh sync');
    expect(fresh.text.toString()).toBe(writer.text.toString());
    fresh.close();

    // an editor who loses the document while connected is closed (4403) at the access change
    const watcher = editorClient(base, 'secret', 'watch', tok.ed);
    const watcherCloses: number[] = [];
    watcher.provider.on('connection-close', (e: CloseEvent | null) => watcherCloses.push(e?.code ?? 0));
    await waitFor(() => watcher.provider.synced, 8000, 'watcher sync');
    await post('own', '/api/md/access', { slug: 'secret', editors: [] });
    await waitFor(() => watcherCloses.includes(4403), 5000, 'an editor who lost the document is closed');
    await post('own', '/api/md/access', { slug: 'secret', editors: ['named-ed'] });
    for (const c of [writer, reader, watcher]) c.close();
  });

  it('share links: the owner makes, lists and revokes them; bad input and other people are refused', async () => {
    expect((await post('ed', '/api/md/links', { slug: 'secret', role: 'read' })).body.error.code).toBe('not_owner');
    expect((await post('rd', '/api/md/links', { slug: 'secret', role: 'read' })).status).toBe(403);
    expect((await post('none', '/api/md/links', { slug: 'secret', role: 'read' })).status).toBe(401);
    expect((await post('wrong', '/api/md/links', { slug: 'secret', role: 'read' })).status).toBe(401);
    expect((await post('own', '/api/md/links', { slug: 'secret', role: 'write' })).status).toBe(400);
    expect((await post('own', '/api/md/links', { slug: 'secret', role: 'read', expires_in_s: 10 })).status).toBe(400);
    expect((await post('own', '/api/md/links', { slug: 'no-such', role: 'read' })).status).toBe(404);
    const made = await post('own', '/api/md/links', { slug: 'secret', role: 'read', expires_in_s: 3600 });
    expect(made.status).toBe(201);
    expect(made.body.token).toMatch(/^ms_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(made.body.link).toMatchObject({ role: 'read', created_by: 'owner1', expires_at: new Date(T0 + 3_600_000).toISOString() });
    const second = await post('admin', '/api/md/links', { slug: 'secret', role: 'comment' });
    expect(second.body.link.expires_at).toBeNull();
    const list = await get('own', '/api/md/links/secret');
    expect(list.body.links.map((l: { id: string }) => l.id).sort()).toEqual([made.body.link.id, second.body.link.id].sort());
    expect(JSON.stringify(list.body)).not.toContain(made.body.token.slice(-20));
    expect((await get('ed', '/api/md/links/secret')).status).toBe(403);
    expect((await get('none', '/api/md/links/secret')).status).toBe(401);
    expect((await post('own', '/api/md/links/revoke', { slug: 'secret', id: '0123456789abcdef' })).body.error.code).toBe('unknown_link');
    expect((await post('own', '/api/md/links/revoke', { slug: 'secret', id: 'nope' })).status).toBe(400);
    expect((await post('ed', '/api/md/links/revoke', { slug: 'secret', id: second.body.link.id })).status).toBe(403);
    expect((await post('own', '/api/md/links/revoke', { slug: 'secret', id: second.body.link.id })).body).toEqual({ revoked: true, slug: 'secret', id: second.body.link.id });
    expect((await get('own', '/api/md/links/secret')).body.links).toHaveLength(1);
    // a guessed link of the right shape opens nothing
    const guess = `ms_${Buffer.from('secret').toString('base64url')}.${'A'.repeat(43)}`;
    expect((await get({ link: guess }, '/api/md/doc/secret')).body.error.code).toBe('invalid_token');
  });

  it('a share link opens its document without an account (read-only), nothing else; revoking it ends its stream and sockets; an expired one opens nothing', async () => {
    const link = (await post('own', '/api/md/links', { slug: 'secret', role: 'read', expires_in_s: 600 })).body;
    const L = { link: link.token };
    expect((await get(L, '/api/md/doc/secret')).body.doc.slug).toBe('secret');
    expect((await get(L, '/api/md/export/secret?format=html')).status).toBe(200);
    expect((await get(L, '/api/md/access/secret')).body.can).toEqual({ read: true, comment: false, write: false, manage: false });
    // another private document is not opened by it; writes are not its to make
    await post('own', '/api/md/save', { slug: 'secret2', content: 'two', visibility: 'private' });
    expect((await get(L, '/api/md/doc/secret2')).status).toBe(403);
    expect((await post(L, '/api/md/save', { slug: 'secret', content: 'by link' })).status).toBe(403);
    expect((await post(L, '/api/md/links', { slug: 'secret', role: 'read' })).status).toBe(403);
    expect(((await get(L, '/api/md/docs')).body.docs as { slug: string }[]).map((d) => d.slug).sort()).toEqual(['open-note', 'secret']);

    // the sessions it opens: the list's stream, the document's topic, a read-only /yjs socket
    const es = new EventSource(`${base}/api/md/stream?access_token=${link.token}`);
    let streamClosed = '';
    es.addEventListener('closed', (e) => (streamClosed = JSON.parse((e as MessageEvent).data).error.code));
    await waitFor(() => es.readyState === EventSource.OPEN, 5000, 'stream open');
    const topics = await connectTopics(base);
    await topics.auth(link.token);
    await topics.subscribe('md:secret');
    const topicClosed = new Promise<number>((r) => topics.ws.on('close', (code) => r(code)));
    const viewer = editorClient(base, 'secret', 'guest', link.token);
    const yCloses: number[] = [];
    viewer.provider.on('connection-close', (e: CloseEvent | null) => yCloses.push(e?.code ?? 0));
    await waitFor(() => viewer.provider.synced, 8000, 'link sync');
    expect(viewer.text.toString()).toContain('비밀');

    await post('own', '/api/md/links/revoke', { slug: 'secret', id: link.link.id });
    await waitFor(() => yCloses.includes(4401), 5000, '/yjs closed');
    expect(await topicClosed).toBe(4401);
    await waitFor(() => streamClosed === 'invalid_token', 5000, 'stream closed');
    es.close();
    viewer.close();
    expect((await get(L, '/api/md/doc/secret')).body.error.code).toBe('invalid_token');

    const short = (await post('own', '/api/md/links', { slug: 'secret', role: 'comment', expires_in_s: 60 })).body;
    expect((await get({ link: short.token }, '/api/md/access/secret')).body.can).toMatchObject({ read: true, comment: true, write: false });
    clock.advance(61_000);
    expect((await get({ link: short.token }, '/api/md/doc/secret')).status).toBe(401);
    expect((await get('own', '/api/md/links/secret')).body.links.map((l: { id: string }) => l.id)).not.toContain(short.link.id);
  });
});
