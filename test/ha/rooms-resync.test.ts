import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { redisBinariesOrSkip, startRedisServer, type RedisServerProcess } from '../support/sentinel.js';
import { sleep, waitFor as until } from '../support/wait.js';

// Two hubs share a Redis that goes away for 10 s while two editors, one on each hub, keep typing in
// the same document (y-websocket's own client). When Redis is back the rooms find each other again
// and both editors end with the same text holding every edit, none lost, and kept in the store.

const binaries = redisBinariesOrSkip();
const hubs: HubProcess[] = [];
let redis: RedisServerProcess | undefined;
afterAll(async () => {
  for (const h of hubs) await h.stop('SIGKILL');
  await redis?.kill();
});

function editor(base: string, slug: string, token: string) {
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(base.replace(/^http/, 'ws') + '/yjs', slug, doc, { WebSocketPolyfill: WebSocket as never, disableBc: true, maxBackoffTime: 300, params: { access_token: token } });
  return { doc, provider, text: doc.getText('content'), close: () => (provider.destroy(), doc.destroy()) };
}

describe.skipIf(!binaries)('document rooms across a Redis outage', () => {
  it('edits made on two hubs while Redis was down converge on both once it is back', async () => {
    redis = await startRedisServer();
    const env = { ...AUTH_TEST_ENV, REDIS_URL: redis.url, REDIS_PREFIX: 'rooms:', REDIS_OP_TIMEOUT_MS: '1000', MD_RESYNC_MS: '500', DATA_DIR: tempDir('ha-rooms') };
    hubs.push(await startHubProcess(env, 60_000), await startHubProcess(env, 60_000));
    const token = await signIn(hubs[0]!.url, ['editor']);
    const a = editor(hubs[0]!.url, 'outage', token);
    const b = editor(hubs[1]!.url, 'outage', token);
    try {
      await until(() => a.provider.synced && b.provider.synced, 10_000, 'both synced');
      a.text.insert(0, '처음\n');
      await until(() => b.text.toString() === '처음\n', 10_000, 'b sees the first line');

      await redis.kill('SIGKILL');
      for (let i = 0; i < 5; i++) {
        a.text.insert(a.text.length, `가${i}\n`);
        b.text.insert(b.text.length, `나${i}\n`);
        await sleep(1000);
      }
      await sleep(5000);
      await redis.restart();

      await until(() => a.text.toString() === b.text.toString() && a.text.length > 20, 30_000, 'the two editors converge');
      const text = a.text.toString();
      for (let i = 0; i < 5; i++) {
        expect(text).toContain(`가${i}\n`);
        expect(text).toContain(`나${i}\n`);
      }
      expect(text.startsWith('처음\n')).toBe(true);

      // and it is kept: with both hubs killed, a third one serves the same text from Redis
      await sleep(1000);
      a.close();
      b.close();
      for (const h of hubs.splice(0)) await h.stop('SIGKILL');
      hubs.push(await startHubProcess({ ...env, DATA_DIR: tempDir('ha-rooms-3') }, 60_000));
      const c = editor(hubs[0]!.url, 'outage', token);
      try {
        await until(() => c.provider.synced, 10_000, 'c synced');
        expect(c.text.toString()).toBe(text);
      } finally {
        c.close();
      }
    } finally {
      a.close();
      b.close();
    }
  }, 120_000);
});
