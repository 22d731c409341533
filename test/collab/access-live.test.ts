import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { sleep, waitFor } from '../support/wait.js';
import { connectTopics, type TopicClient } from '../support/ws.js';

const silent = pino({ level: 'silent' });

/** A real SSE client of /api/md/stream: every event it got (name, id, data text). */
async function sseClient(url: string, headers: Record<string, string> = {}) {
  const ctl = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: ctl.signal });
  if (res.status !== 200) throw new Error(`stream: ${res.status}`);
  const events: { event: string; id: string; data: string }[] = [];
  /** The ids of id-only blocks (the stream's position, sent when it opens). */
  const positions: string[] = [];
  let raw = '';
  void (async () => {
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        raw += dec.decode(value, { stream: true });
        let cut: number;
        while ((cut = raw.indexOf('\n\n')) >= 0) {
          const block = raw.slice(0, cut);
          raw = raw.slice(cut + 2);
          const e = { event: 'message', id: '', data: '' };
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) e.event = line.slice(6).trim();
            else if (line.startsWith('id:')) e.id = line.slice(3).trim();
            else if (line.startsWith('data:')) e.data += line.slice(5).trim();
          }
          if (e.data) events.push(e);
          else if (e.id) positions.push(e.id);
        }
      }
    } catch {
      // aborted
    }
  })();
  return { events, positions, close: () => ctl.abort() };
}

/**
 * Losing read access ends the live view of a document (docs/collab.md "Live channel"): a /ws
 * subscription to `md:<slug>` is ended with an `unsubscribed` frame when its identity may no longer
 * read the document, and hears nothing of it afterwards; the list's channel (md:all on /ws and
 * /api/md/stream) neither carries nor replays on recovery what it once said of a document that is
 * private now. Real clients against a started hub.
 */
describe('losing read access ends the live view', () => {
  let maru: Maru;
  let base: string;
  const tok = { own: '', second: '', reader: '' };
  const post = (w: keyof typeof tok, p: string, b: unknown) => call(base, 'POST', p, b, bearer(tok[w]));
  const clients: TopicClient[] = [];
  const topicsAs = async (w: keyof typeof tok) => {
    const c = await connectTopics(base);
    clients.push(c);
    await c.auth(tok[w]);
    return c;
  };
  /** Frames until one matches (others are skipped), or none within the time. */
  const frameWhere = async (c: TopicClient, pred: (f: any) => boolean, ms = 5000) => {
    const label = pred.toString();
    const until = Date.now() + ms;
    const seen: unknown[] = [];
    for (;;) {
      const f = await c.next(Math.max(1, until - Date.now())).catch(() => {
        throw new Error(`no frame ${label} within ${ms} ms; seen ${JSON.stringify(seen)}`);
      });
      if (pred(f)) return f;
      seen.push(f);
    }
  };
  /** Every frame that arrives within `ms` (read beside the client's queue, which keeps them too). */
  const framesFor = (c: TopicClient, ms: number) =>
    new Promise<any[]>((resolve) => {
      const got: any[] = [];
      const on = (d: unknown) => got.push(JSON.parse(String(d)));
      c.ws.on('message', on);
      setTimeout(() => (c.ws.off('message', on), resolve(got)), ms);
    });

  beforeAll(async () => {
    maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('collab-access-live'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV }), { logger: silent });
    base = maru.url;
    tok.own = await signIn(base, ['editor'], 'l-owner');
    tok.second = await signIn(base, ['editor'], 'l-second');
    tok.reader = await signIn(base, ['editor'], 'l-reader');
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.close();
    await maru?.stop();
  });

  it('made private: the subscription of an editor it does not name ends with an unsubscribed frame, a named reader keeps hers', async () => {
    expect((await post('own', '/api/md/save', { slug: 'roadmap', content: '# 로드맵\n' })).status).toBe(200);
    const second = await topicsAs('second');
    const reader = await topicsAs('reader');
    await second.subscribe('md:roadmap');
    await reader.subscribe('md:roadmap');
    await second.subscribe('md:all');
    expect((await post('own', '/api/md/access', { slug: 'roadmap', visibility: 'private', readers: ['l-reader'] })).status).toBe(200);
    const ended = await frameWhere(second, (f) => f.type === 'unsubscribed');
    expect(ended).toEqual({ type: 'unsubscribed', topic: 'md:roadmap', reason: 'forbidden' });
    // a later save reaches the named reader, and nothing of it reaches the other editor (nor md:all)
    const before = await framesFor(second, 300);
    expect(before.filter((f) => f.type === 'message' && f.topic === 'md:roadmap')).toHaveLength(0);
    expect((await post('own', '/api/md/save', { slug: 'roadmap', content: '# 로드맵\n\n비밀 일정\n' })).status).toBe(200);
    const saved = await frameWhere(reader, (f) => f.type === 'message' && f.data?.type === 'saved');
    expect(saved.topic).toBe('md:roadmap');
    const heard = await framesFor(second, 1000);
    expect(heard.filter((f) => f.type === 'message' && (f.topic === 'md:roadmap' || f.data?.slug === 'roadmap'))).toEqual([]);
    // the socket itself stays: another subscription still works
    expect((await post('own', '/api/md/save', { slug: 'open-notes', content: '# 공개 메모\n' })).status).toBe(200);
    await frameWhere(second, (f) => f.type === 'message' && f.topic === 'md:all' && f.data?.slug === 'open-notes');
    // subscribing again is refused
    second.ws.send(JSON.stringify({ type: 'subscribe', topic: 'md:roadmap' }));
    expect(await frameWhere(second, (f) => f.type === 'error')).toMatchObject({ code: 'forbidden', topic: 'md:roadmap' });
  });

  it('a named reader taken off the list loses the topic too', async () => {
    const reader = await topicsAs('reader');
    await reader.subscribe('md:roadmap');
    expect((await post('own', '/api/md/access', { slug: 'roadmap', readers: [] })).status).toBe(200);
    expect(await frameWhere(reader, (f) => f.type === 'unsubscribed')).toEqual({ type: 'unsubscribed', topic: 'md:roadmap', reason: 'forbidden' });
  });

  it('the list channel never replays the title of a document that is private now: /ws recovery with since, and the SSE stream with Last-Event-ID', async () => {
    // a team document's events on md:all, as anyone heard them then
    const watcher = await topicsAs('second');
    watcher.ws.send(JSON.stringify({ type: 'subscribe', topic: 'md:all' }));
    const ack = await frameWhere(watcher, (f) => f.type === 'subscribed' && f.topic === 'md:all');
    const since = ack.position;
    const sse = await sseClient(`${base}/api/md/stream`, bearer(tok.second));
    await waitFor(() => sse.positions.length > 0, 5000, 'the stream\'s position');
    const startId = sse.positions[0]!;
    expect((await post('own', '/api/md/save', { slug: 'merger', content: '# 합병 계획 초안\n' })).status).toBe(200);
    await frameWhere(watcher, (f) => f.type === 'message' && f.data?.slug === 'merger');
    await waitFor(() => sse.events.some((e) => e.data.includes('merger')), 5000, 'the team save on the stream');
    expect((await post('own', '/api/md/save', { slug: 'other-team-doc', content: '# 팀 문서\n' })).status).toBe(200);
    // now private: its past events stay in the history, and are not replayed to anyone
    expect((await post('own', '/api/md/access', { slug: 'merger', visibility: 'private' })).status).toBe(200);
    expect((await post('own', '/api/md/save', { slug: 'merger', content: '# 합병 계획 확정\n' })).status).toBe(200);
    await sleep(300);
    expect(sse.events.filter((e) => e.data.includes('확정'))).toEqual([]);
    sse.close();
    for (const w of ['second', 'own'] as const) {
      const again = await topicsAs(w);
      again.ws.send(JSON.stringify({ type: 'subscribe', topic: 'md:all', since }));
      const answer = await frameWhere(again, (f) => f.type === 'subscribed');
      expect(answer.recovered).toBe(true);
      // what is queued and what comes within a moment (this client is not read afterwards)
      const replayed: any[] = [];
      for (;;) {
        const f = await again.next(800).catch(() => undefined);
        if (!f) break;
        replayed.push(f);
      }
      const text = JSON.stringify(replayed);
      expect(text, w).toContain('other-team-doc');
      expect(text, w).not.toContain('merger');
      expect(text, w).not.toContain('합병');
    }
    // the SSE stream resumed from before the team save: the same
    const resumed = await sseClient(`${base}/api/md/stream`, { ...bearer(tok.second), 'last-event-id': startId });
    await waitFor(() => resumed.events.some((e) => e.data.includes('other-team-doc')), 5000, 'the replay');
    await sleep(300);
    expect(JSON.stringify(resumed.events)).not.toContain('합병');
    expect(JSON.stringify(resumed.events)).not.toContain('merger');
    resumed.close();
    // made a team document again, its new events are on the list's channel again
    expect((await post('own', '/api/md/access', { slug: 'merger', visibility: 'team' })).status).toBe(200);
    const later = await sseClient(`${base}/api/md/stream`, bearer(tok.second));
    await sleep(200);
    expect((await post('own', '/api/md/save', { slug: 'merger', content: '# 합병 발표\n' })).status).toBe(200);
    await waitFor(() => later.events.some((e) => e.data.includes('merger')), 5000, 'the team save again');
    later.close();
  });
});
