import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { startHubProcess, tempDir } from '../support/process.js';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';
import { waitFor as until } from '../support/wait.js';

function editor(base: string, slug: string, token: string) {
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(base.replace(/^http/, 'ws') + '/yjs', slug, doc, {
    WebSocketPolyfill: WebSocket as never,
    disableBc: true,
    maxBackoffTime: 300,
    params: { access_token: token },
  });
  return { doc, provider, text: doc.getText('content'), close: () => (provider.destroy(), doc.destroy()) };
}

describe('live edits are durable before they are fanned out', () => {
  it('kill -9 with no save due: every edit another editor saw is there after a restart, with no client left to resend it', async () => {
    const dir = tempDir('collab-durable');
    // saves far away: only the update log can keep these edits
    const env = { DATA_DIR: dir, MD_PERSIST_DEBOUNCE_MS: '60000', MD_PERSIST_MAX_MS: '600000', ...AUTH_TEST_ENV };
    const hub = await startHubProcess(env);
    const token = await signIn(hub.url, ['editor']);
    const writer = editor(hub.url, 'durable', token);
    const watcher = editor(hub.url, 'durable', token);
    await until(() => writer.provider.synced && watcher.provider.synced, 8000, 'sync');
    for (let i = 0; i < 40; i++) writer.text.insert(writer.text.length, `줄 ${i}\n`);
    const expected = writer.text.toString();
    // acknowledged: the hub has fanned every edit out to the other editor
    await until(() => watcher.text.toString() === expected, 8000, 'the watcher sees every edit');
    expect((await fetch(`${hub.url}/api/md/doc/durable`)).status).toBe(404); // no markdown version yet

    await hub.stop('SIGKILL');
    writer.close();
    watcher.close();

    const again = await startHubProcess(env);
    const reader = editor(again.url, 'durable', token);
    try {
      await until(() => reader.provider.synced, 8000, 'sync after restart');
      expect(reader.text.toString()).toBe(expected);
    } finally {
      reader.close();
      await again.stop();
    }
  }, 60_000);
});
