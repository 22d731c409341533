import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';
import { waitFor as until } from '../support/wait.js';

const redis = await redisOrSkip();

function mulberry32(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A GET, or a POST as `token`'s identity (the editor of the test unless another is given). */
let editorToken = '';
const json = async (url: string, body?: unknown, token = editorToken) => {
  const res = await fetch(url, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

describe.skipIf(!redis.available)('two hub processes on one Redis', () => {
  const prefix = uniquePrefix('collab');
  let a: HubProcess;
  let b: HubProcess;
  const env = () => ({
    REDIS_URL: redis.url,
    REDIS_PREFIX: prefix,
    DATA_DIR: tempDir('collab-scale'),
    MD_PERSIST_DEBOUNCE_MS: '200',
    MD_PERSIST_MAX_MS: '1000',
    MD_RESYNC_MS: '300',
    MD_SWEEP_MS: '200',
    ...AUTH_TEST_ENV,
  });
  let lee = '';

  beforeAll(async () => {
    [a, b] = await Promise.all([startHubProcess(env()), startHubProcess(env())]);
    // accounts and tokens live in the shared store: signed in on one process, valid on the other
    editorToken = await signIn(a.url, ['editor'], 'kim');
    lee = await signIn(b.url, ['editor'], 'lee');
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await deletePrefix(redis.url, prefix);
  });

  it('shares locks, search and save broadcasts between processes', async () => {
    expect((await json(`${a.url}/api/md/save`, { slug: 'shared', content: '# 공유 문서\n\n실시간협업문서' })).status).toBe(200);
    const found = await json(`${b.url}/api/md/search?q=${encodeURIComponent('협업')}`);
    expect(found.body.results.map((r: any) => r.slug)).toContain('shared');
    // every word is indexed on the other process too: the last words of a long document, and a
    // document deleted on one process is no longer found on the other
    const long = Array.from({ length: 3000 }, (_, i) => `항목${i}`).join(' ') + ' 맨끝결론 finalword';
    expect((await json(`${a.url}/api/md/save`, { slug: 'long', content: `# 긴 글\n\n${long}` })).status).toBe(200);
    for (const q of ['맨끝결론', 'finalword', '항목2999']) {
      expect((await json(`${b.url}/api/md/search?q=${encodeURIComponent(q)}`)).body.results.map((r: any) => r.slug), q).toEqual(['long']);
    }
    expect((await json(`${a.url}/api/md/delete`, { slug: 'long' })).status).toBe(200);
    expect((await json(`${b.url}/api/md/search?q=finalword`)).body.results).toEqual([]);
    const lock = await json(`${a.url}/api/md/lock`, { slug: 'shared' });
    expect(lock.status).toBe(200);
    expect((await json(`${b.url}/api/md/lock/shared`)).body).toMatchObject({ locked: true, holder: 'kim' });
    const refused = await json(`${b.url}/api/md/save`, { slug: 'shared', content: 'lee' }, lee);
    expect(refused.status).toBe(423);
    expect((await json(`${b.url}/api/md/lock`, { slug: 'shared' }, lee)).status).toBe(423);
    // the holder renews and releases on the other process: the lock is the identity's, not the process's
    expect((await json(`${b.url}/api/md/lock`, { slug: 'shared' })).body.renewed).toBe(true);
    expect((await json(`${b.url}/api/md/unlock`, { slug: 'shared' })).body.released).toBe(true);
    const pa = await json(`${a.url}/api/md/presence`, { slug: 'shared' });
    const pb = await json(`${b.url}/api/md/presence`, { slug: 'shared' }, lee);
    expect(pb.body.peers).toHaveLength(2);
    expect(pa.body.color).not.toBe(pb.body.color);
  });

  it('converges 4 y-websocket clients editing concurrently through seeded random disconnects across both processes', async () => {
    const rnd = mulberry32(20261121);
    const slug = 'converge';
    await json(`${a.url}/api/md/save`, { slug, content: 'start\n' });
    const urls = [a.url, b.url];
    const clients = [0, 1, 2, 3].map((i) => {
      const doc = new Y.Doc();
      const mk = (u: string) => new WebsocketProvider(u.replace(/^http/, 'ws') + '/yjs', slug, doc, { WebSocketPolyfill: WebSocket as never, disableBc: true, maxBackoffTime: 300, params: { access_token: editorToken } });
      return { doc, text: doc.getText('content'), provider: mk(urls[i % 2]!) as WebsocketProvider | undefined, mk };
    });
    await until(() => clients.every((c) => c.provider!.synced), 10_000, 'initial sync');
    for (let round = 0; round < 40; round++) {
      for (const c of clients) {
        const r = rnd();
        if (r < 0.1 && c.provider) {
          c.provider.destroy();
          c.provider = undefined;
        } else if (r < 0.25 && !c.provider) {
          c.provider = c.mk(urls[Math.floor(rnd() * 2)]!); // may come back on the other process
        }
        const len = c.text.length;
        if (rnd() < 0.75 || len === 0) c.text.insert(Math.floor(rnd() * (len + 1)), String.fromCharCode(97 + Math.floor(rnd() * 26)).repeat(1 + Math.floor(rnd() * 3)));
        else c.text.delete(Math.floor(rnd() * len), 1);
      }
      await new Promise((r) => setTimeout(r, 20 + Math.floor(rnd() * 30)));
    }
    for (const c of clients) c.provider ??= c.mk(urls[Math.floor(rnd() * 2)]!);
    await until(() => clients.every((c) => c.provider!.synced && c.text.toString() === clients[0]!.text.toString()), 15_000, 'convergence');
    const final = clients[0]!.text.toString();
    expect(final.length).toBeGreaterThan(10);
    await until(async () => (await json(`${b.url}/api/md/doc/${slug}`)).body.doc.content === final, 10_000, 'persisted');
    expect((await json(`${a.url}/api/md/doc/${slug}`)).body.doc.content).toBe(final);
    for (const c of clients) c.provider?.destroy();
  });
});

describe('crash safety', () => {
  it('kill -9 right after an acknowledged save: the document is intact after a restart', async () => {
    const dir = tempDir('collab-crash');
    const hub = await startHubProcess({ DATA_DIR: dir, ...AUTH_TEST_ENV });
    editorToken = await signIn(hub.url, ['editor'], 'crash');
    const content = '# 충돌\n\n' + '내용 '.repeat(2000);
    let saved;
    for (let i = 1; i <= 5; i++) saved = await json(`${hub.url}/api/md/save`, { slug: 'crash', content: content + i });
    expect(saved!.status).toBe(200);
    await hub.stop('SIGKILL');
    const again = await startHubProcess({ DATA_DIR: dir, ...AUTH_TEST_ENV });
    try {
      const doc = await json(`${again.url}/api/md/doc/crash`);
      expect(doc.body.doc).toMatchObject({ version: 5, content: content + 5 });
      expect((await json(`${again.url}/api/md/history/crash`)).body.versions).toHaveLength(5);
    } finally {
      await again.stop();
    }
  });
});
