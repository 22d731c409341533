import { EventSource } from 'eventsource';
import { afterAll, describe, expect, it } from 'vitest';
import { post, until } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { tcpProxy } from '../support/proxy.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

const redis = await redisOrSkip();

describe.skipIf(!redis.available)('a Bus stream across a hub restart on Redis', () => {
  const prefix = uniquePrefix('md-stream');
  const hubs: HubProcess[] = [];
  afterAll(async () => {
    for (const h of hubs) await h.stop().catch(() => undefined);
    await deletePrefix(redis.url, prefix);
  });

  it('a stock EventSource resumes with Last-Event-ID after its hub restarts, and gets the event published meanwhile', async () => {
    const env = () => ({ REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('md-stream'), ...AUTH_TEST_ENV });
    const a = await startHubProcess(env());
    const other = await startHubProcess(env());
    const token = await signIn(a.url, ['editor']);
    hubs.push(a, other);
    // the clients' address of the service: a relay in front of whichever hub process serves it
    const front = await tcpProxy(a.url);

    const got: { id: string; slug: string }[] = [];
    const sent: (string | null)[] = [];
    const es = new EventSource(`${front.url}/api/md/stream`, {
      fetch: (input, init) => {
        sent.push(new Headers(init?.headers).get('last-event-id'));
        return fetch(input, init);
      },
    });
    es.addEventListener('saved', (e) => got.push({ id: e.lastEventId, slug: JSON.parse(e.data).slug }));
    try {
      await new Promise<void>((r) => es.addEventListener('open', () => r(), { once: true }));
      expect((await post(a.url, '/api/md/save', { slug: 'before', content: '# 전' }, bearer(token))).status).toBe(200);
      await until('the first event', () => got.length === 1);
      const lastBefore = got[0]!.id;
      expect(lastBefore).toMatch(/^\w+-\d+$/);

      // the hub goes away; a document is saved through another process meanwhile
      await a.stop();
      expect((await post(other.url, '/api/md/save', { slug: 'during', content: '# 중' }, bearer(token))).status).toBe(200);
      // a new hub process on the same Redis takes the address over
      const b = await startHubProcess(env());
      hubs.push(b);
      front.retarget(b.url);
      await until('the missed event after the reconnect', () => got.length >= 2, 20_000);
      expect(got.map((g) => g.slug)).toEqual(['before', 'during']);
      expect(sent[0]).toBeNull();
      expect(sent.at(-1)).toBe(lastBefore);
      // and live again
      expect((await post(b.url, '/api/md/save', { slug: 'after', content: '# 후' }, bearer(token))).status).toBe(200);
      await until('a live event', () => got.length === 3);
      expect(got[2]!.slug).toBe('after');
    } finally {
      es.close();
      await front.close();
    }
  }, 60_000);
});
