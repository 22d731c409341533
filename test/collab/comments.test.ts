import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { waitFor } from '../support/wait.js';
import { connectTopics } from '../support/ws.js';

const silent = pino({ level: 'silent' });

/**
 * Comments (docs/collab.md "Comments"): anchored by Yjs relative positions (the anchor follows
 * edits made with the stock client), threads, resolve and reopen, mentions of readers only, live on
 * the document's topic, orphaned when a restore takes their text; who may comment follows access.
 */
describe('document comments', () => {
  let maru: Maru;
  let base: string;
  const tok = { own: '', rd: '', other: '', staff: '' };
  type Who = keyof typeof tok | 'none' | 'wrong' | { link: string };
  const hdr = (w: Who): Record<string, string> =>
    w === 'none' ? {} : w === 'wrong' ? bearer('mt_' + 'x'.repeat(43)) : typeof w === 'object' ? bearer(w.link) : bearer(tok[w]);
  const get = (w: Who, p: string) => call(base, 'GET', p, undefined, hdr(w));
  const post = (w: Who, p: string, b: unknown) => call(base, 'POST', p, b, hdr(w));
  const TEXT = '# 회의록\n\n결정: 다음 주 배포\n질문 하나\n';

  beforeAll(async () => {
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('collab-comments'), LOG_LEVEL: 'silent', MD_PERSIST_DEBOUNCE_MS: '100', MD_PERSIST_MAX_MS: '300', ...AUTH_TEST_ENV }),
      { logger: silent },
    );
    base = maru.url;
    tok.own = await signIn(base, ['editor'], 'c-owner');
    tok.rd = await signIn(base, ['editor'], 'c-reader');
    tok.other = await signIn(base, ['editor'], 'c-other');
    tok.staff = await signIn(base, ['staff'], 'c-staff');
    expect((await post('own', '/api/md/save', { slug: 'minutes', content: TEXT, visibility: 'private' })).status).toBe(200);
    expect((await post('own', '/api/md/access', { slug: 'minutes', readers: ['c-reader'] })).status).toBe(200);
  });
  afterAll(() => maru.stop());

  const range = (word: string) => ({ from: TEXT.indexOf(word), to: TEXT.indexOf(word) + word.length });

  it('a comment anchored to a range, replies with a mention, resolve and reopen; live on the document\'s topic', async () => {
    const topic = await connectTopics(base);
    await topic.auth(tok.own);
    await topic.subscribe('md:minutes');
    // the access change made before may still be on its way to the topic: the comment events are read
    const next = async () => {
      for (;;) {
        const f = await topic.next();
        if (f.data?.type === 'comment') return f;
      }
    };
    const made = await post('rd', '/api/md/comments', { slug: 'minutes', body: '배포일 확정인가요? @c-owner', range: range('다음 주 배포') });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ author: 'c-reader', body: '배포일 확정인가요? @c-owner', mentions: ['c-owner'], resolved: false, replies: [], anchor: { quote: '다음 주 배포' } });
    expect(await next()).toMatchObject({ topic: 'md:minutes', data: { type: 'comment', event: 'created', thread: made.body.id, author: 'c-reader', mentions: ['c-owner'] } });
    const id = made.body.id;
    const reply = await post('own', '/api/md/comments/reply', { slug: 'minutes', thread: id, body: '네, @c-reader 님 확정입니다' });
    expect(reply.status).toBe(201);
    expect(reply.body.mentions).toEqual(['c-reader']);
    expect(await next()).toMatchObject({ data: { type: 'comment', event: 'replied', thread: id, mentions: ['c-reader'] } });
    expect((await post('rd', '/api/md/comments/resolve', { slug: 'minutes', thread: id, resolved: true })).body).toMatchObject({ resolved: true, resolved_by: 'c-reader' });
    expect(await next()).toMatchObject({ data: { event: 'resolved', thread: id } });
    const reopened = await post('own', '/api/md/comments/resolve', { slug: 'minutes', thread: id, resolved: false });
    expect(reopened.body.resolved).toBe(false);
    expect(reopened.body.resolved_by).toBeUndefined();
    const list = await get('rd', '/api/md/comments/minutes');
    expect(list.status).toBe(200);
    expect(list.body.threads).toHaveLength(1);
    expect(list.body.threads[0]).toMatchObject({ id, replies: [{ author: 'c-owner' }], at: { text: '다음 주 배포', orphaned: false, ...range('다음 주 배포') } });
    topic.close();
  });

  it('the anchor follows edits made live with the stock client, and is orphaned when a restore takes its text', async () => {
    const made = await post('own', '/api/md/comments', { slug: 'minutes', body: '이 질문은?', range: range('질문 하나') });
    expect(made.status).toBe(201);
    const doc = new Y.Doc();
    const provider = new WebsocketProvider(base.replace(/^http/, 'ws') + '/yjs', 'minutes', doc, { WebSocketPolyfill: WebSocket as never, disableBc: true, params: { access_token: tok.own } });
    await waitFor(() => provider.synced, 8000, 'sync');
    const text = doc.getText('content');
    expect(text.toString()).toBe(TEXT);
    // text inserted before the range moves it; text typed inside it grows it
    text.insert(0, '머리말 줄\n');
    const inside = text.toString().indexOf('질문') + 2;
    text.insert(inside, '이');
    const at = async () => (await get('own', '/api/md/comments/minutes')).body.threads.find((t: { id: string }) => t.id === made.body.id).at;
    await waitFor(async () => (await at()).text === '질문이 하나', 5000, 'anchor follows');
    const now = await at();
    expect(now.from).toBe(text.toString().indexOf('질문이 하나'));
    // the next comment may be made by relative positions the client made itself
    const rel = (i: number, assoc: number) => Buffer.from(Y.encodeRelativePosition(Y.createRelativePositionFromTypeIndex(text, i, assoc))).toString('base64');
    const start = text.toString().indexOf('머리말');
    const byRel = await post('own', '/api/md/comments', { slug: 'minutes', body: '머리말 필요?', range: { start: rel(start, 0), end: rel(start + 3, -1) } });
    expect(byRel.status).toBe(201);
    expect(byRel.body.anchor.quote).toBe('머리말');
    provider.destroy();
    doc.destroy();
    // a restore of version 1 takes the added words away: that anchor is orphaned, the others follow
    await waitFor(async () => (await get('own', '/api/md/doc/minutes')).body.doc.content.startsWith('머리말'), 5000, 'live save');
    expect((await post('own', '/api/md/restore', { slug: 'minutes', version: 1 })).status).toBe(200);
    const threads = (await get('own', '/api/md/comments/minutes')).body.threads as { id: string; at: { orphaned: boolean; text?: string } }[];
    expect(threads.find((t) => t.id === byRel.body.id)!.at).toEqual({ orphaned: true });
    // a restore is one prefix/suffix replacement: an anchor whose start was in the replaced run keeps
    // its end and widens to the replacement's start (docs/collab.md "Comments")
    const kept = threads.find((t) => t.id === made.body.id)!.at;
    expect(kept.orphaned).toBe(false);
    expect(kept.text!.endsWith('질문 하나')).toBe(true);
    // a comment on a range that is gone is refused, nothing stored
    const gone = await post('own', '/api/md/comments', { slug: 'minutes', body: 'late', range: { start: rel(start, 0), end: rel(start + 3, -1) } });
    expect([gone.status, gone.body.error.code]).toEqual([422, 'anchor_gone']);
    expect((await get('own', '/api/md/comments/minutes')).body.threads).toHaveLength(threads.length);
  });

  it('who may comment follows access; bad input is a clear 4xx and stores nothing', async () => {
    const before = (await get('own', '/api/md/comments/minutes')).body.threads.length;
    const c = (w: Who, b: Record<string, unknown>) => post(w, '/api/md/comments', { slug: 'minutes', body: 'x', range: range('회의록'), ...b });
    expect((await c('other', {})).status).toBe(403);
    expect((await c('none', {})).status).toBe(401);
    expect((await c('wrong', {})).status).toBe(401);
    expect((await get('other', '/api/md/comments/minutes')).status).toBe(403);
    expect((await get('none', '/api/md/comments/minutes')).status).toBe(401);
    expect((await c('own', { body: '   ' })).status).toBe(400);
    expect((await c('own', { body: 'y'.repeat(2001) })).status).toBe(400);
    expect((await c('own', { range: { from: 5, to: 5 } })).body.error.code).toBe('invalid_range');
    expect((await c('own', { range: { from: 0, to: 10_000 } })).body.error.code).toBe('invalid_range');
    expect((await c('own', { range: { start: '!!', end: 'AA' } })).status).toBe(400);
    const mention = await c('own', { body: '@c-other 보세요' });
    expect([mention.status, mention.body.error.code, mention.body.error.details.mentions]).toEqual([422, 'mention_not_reader', ['c-other']]);
    expect((await c('own', { body: '@nobody-here 보세요' })).body.error.code).toBe('mention_not_reader');
    expect((await post('own', '/api/md/comments', { slug: 'no-such', body: 'x', range: { from: 0, to: 1 } })).status).toBe(404);
    expect((await post('own', '/api/md/comments/reply', { slug: 'minutes', thread: '0123456789abcdef', body: 'x' })).body.error.code).toBe('unknown_thread');
    expect((await post('own', '/api/md/comments/resolve', { slug: 'minutes', thread: 'bad', resolved: true })).status).toBe(400);
    expect((await get('own', '/api/md/comments/minutes')).body.threads).toHaveLength(before);
    // a read link reads the comments but may not comment; a comment link comments (named as the link)
    const read = (await post('own', '/api/md/links', { slug: 'minutes', role: 'read' })).body.token;
    const comment = (await post('own', '/api/md/links', { slug: 'minutes', role: 'comment' })).body.token;
    expect((await get({ link: read }, '/api/md/comments/minutes')).status).toBe(200);
    expect((await c({ link: read }, {})).body.error.code).toBe('read_only');
    const byLink = await c({ link: comment }, { body: '링크로 남긴 의견' });
    expect(byLink.status).toBe(201);
    expect(byLink.body.author).toMatch(/^link:[a-f0-9]{16}$/);
    // the staff member (no editor role) may not read a private document, so may not be mentioned or comment
    expect((await c('staff', {})).status).toBe(403);
  });
});
