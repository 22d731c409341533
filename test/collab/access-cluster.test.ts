import { afterAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { connectTopics, type TopicClient } from '../support/ws.js';

const redis = await redisOrSkip();

/**
 * An access change reaches every hub process on one Redis (docs/collab.md "Live channel"): the
 * owner makes a document private through process A, and on process B a reader's /ws subscription
 * to `md:<slug>` ends with an `unsubscribed` frame and B's replay of `md:all` leaves it out. Two
 * real hub processes, real /ws clients.
 */
describe.skipIf(!redis.available)('an access change made on another hub process', () => {
  const prefix = uniquePrefix('md-access');
  const hubs: HubProcess[] = [];
  const clients: TopicClient[] = [];
  /** A position of md:all from before the team saves of the first test. */
  let since: unknown;
  const tok = { owner: '', other: '', named: '' };
  afterAll(async () => {
    for (const c of clients) c.close();
    for (const h of hubs) await h.stop().catch(() => undefined);
    await deletePrefix(redis.url, prefix);
  });

  /** Frames until one matches (others are skipped), or none within the time. */
  const frameWhere = async (c: TopicClient, pred: (f: any) => boolean, ms = 5000) => {
    const until = Date.now() + ms;
    const seen: unknown[] = [];
    for (;;) {
      const f = await c.next(Math.max(1, until - Date.now())).catch(() => {
        throw new Error(`no frame ${pred.toString()} within ${ms} ms; seen ${JSON.stringify(seen)}`);
      });
      if (pred(f)) return f;
      seen.push(f);
    }
  };

  /** What B's md:all replays from `since` to a new client of `token` (what comes within a moment). */
  const replayOn = async (hub: HubProcess, token: string) => {
    const again = await connectTopics(hub.url);
    clients.push(again);
    await again.auth(token);
    again.ws.send(JSON.stringify({ type: 'subscribe', topic: 'md:all', since }));
    const answer = await frameWhere(again, (f) => f.type === 'subscribed' && f.topic === 'md:all');
    expect(answer.recovered).toBe(true);
    const replayed: any[] = [];
    for (;;) {
      const f = await again.next(800).catch(() => undefined);
      if (!f) break;
      replayed.push(f);
    }
    again.close();
    return JSON.stringify(replayed);
  };

  it('ends the subscription of a reader on the other process and keeps the document out of its md:all replay', async () => {
    const env = () => ({ REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('md-access'), ...AUTH_TEST_ENV });
    const a = await startHubProcess(env());
    hubs.push(a);
    const b = await startHubProcess(env());
    hubs.push(b);
    const owner = (tok.owner = await signIn(a.url, ['editor'], 'c-owner'));
    const other = (tok.other = await signIn(a.url, ['editor'], 'c-other'));
    const named = (tok.named = await signIn(a.url, ['editor'], 'c-named'));
    const on = async (hub: HubProcess, token: string) => {
      const c = await connectTopics(hub.url);
      clients.push(c);
      await c.auth(token);
      return c;
    };

    expect((await call(a.url, 'POST', '/api/md/save', { slug: 'budget', content: '# 예산 초안\n' }, bearer(owner))).status).toBe(200);
    // on B: one editor the document will not name, one it will, and a watcher of the list
    const reader = await on(b, other);
    const kept = await on(b, named);
    await reader.subscribe('md:budget');
    await kept.subscribe('md:budget');
    reader.ws.send(JSON.stringify({ type: 'subscribe', topic: 'md:all' }));
    since = (await frameWhere(reader, (f) => f.type === 'subscribed' && f.topic === 'md:all')).position;
    expect(since).toBeDefined();
    // the list's channel on B carries a team save of it (made on A), as anyone heard it then
    expect((await call(a.url, 'POST', '/api/md/save', { slug: 'budget', content: '# 예산 검토\n' }, bearer(owner))).status).toBe(200);
    await frameWhere(reader, (f) => f.type === 'message' && f.topic === 'md:all' && f.data?.slug === 'budget');
    expect((await call(a.url, 'POST', '/api/md/save', { slug: 'menu', content: '# 점심 메뉴\n' }, bearer(owner))).status).toBe(200);
    await frameWhere(reader, (f) => f.type === 'message' && f.topic === 'md:all' && f.data?.slug === 'menu');

    // private now, on A
    expect((await call(a.url, 'POST', '/api/md/access', { slug: 'budget', visibility: 'private', readers: ['c-named'] }, bearer(owner))).status).toBe(200);
    expect(await frameWhere(reader, (f) => f.type === 'unsubscribed')).toEqual({ type: 'unsubscribed', topic: 'md:budget', reason: 'forbidden' });
    // the named reader on B keeps hers: a later save reaches her
    expect((await call(a.url, 'POST', '/api/md/save', { slug: 'budget', content: '# 예산 확정\n' }, bearer(owner))).status).toBe(200);
    const saved = await frameWhere(kept, (f) => f.type === 'message' && f.data?.type === 'saved');
    expect(saved.topic).toBe('md:budget');

    // B's replay of md:all from before the team save leaves the private document out, for anyone
    for (const token of [other, owner]) {
      const text = await replayOn(b, token);
      expect(text).toContain('menu');
      expect(text).not.toContain('budget');
      expect(text).not.toContain('예산');
    }
    // and subscribing to the document again on B is refused
    reader.ws.send(JSON.stringify({ type: 'subscribe', topic: 'md:budget' }));
    expect(await frameWhere(reader, (f) => f.type === 'error')).toMatchObject({ code: 'forbidden', topic: 'md:budget' });
  }, 90_000);

  it('a reader taken off the list on A loses the topic on B; made a team document again on A, B replays it again', async () => {
    const [a, b] = hubs as [HubProcess, HubProcess];
    const { owner, named } = tok;
    const c = await connectTopics(b.url);
    clients.push(c);
    await c.auth(named);
    await c.subscribe('md:budget');
    expect((await call(a.url, 'POST', '/api/md/access', { slug: 'budget', readers: [] }, bearer(owner))).status).toBe(200);
    expect(await frameWhere(c, (f) => f.type === 'unsubscribed')).toEqual({ type: 'unsubscribed', topic: 'md:budget', reason: 'forbidden' });

    expect((await call(a.url, 'POST', '/api/md/access', { slug: 'budget', visibility: 'team' }, bearer(owner))).status).toBe(200);
    // B follows: its replay of md:all carries the document's team saves again
    // (the message reaches B shortly after A answers: asked again until then)
    let text = await replayOn(b, named);
    for (const until = Date.now() + 5000; !text.includes('budget') && Date.now() < until; ) text = await replayOn(b, named);
    expect(text).toContain('menu');
    expect(text).toContain('budget');
  }, 60_000);
});
