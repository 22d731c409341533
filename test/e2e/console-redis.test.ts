import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUTBOX_CREATED, OUTBOX_DUE, legacyPartition, outboxKey, recordJson } from '../../src/outbox.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { AUTH_TEST_ENV, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import type { HubProcess } from '../support/process.js';
import { tempDir } from '../support/process.js';
import { redisProcesses } from '../support/redis-processes.js';
import { until } from '../support/wait.js';
import { connectTopics } from '../support/ws.js';

// The console page on one of two hub processes sharing Redis: both nodes drawn, a socket held by
// the other process ended with its Disconnect button, a waiting delivery retried with its button.
const hasBrowser = browserAvailable();
const { redis, prefix: freshPrefix, start } = await redisProcesses();

describe.skipIf(!hasBrowser || !redis.available)('the console page over two hub processes on Redis', () => {
  let a: HubProcess;
  let b: HubProcess;
  let browser: Browser;
  let store: RedisStore;
  let prefix: string;

  beforeAll(async () => {
    prefix = freshPrefix('console-page');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('console-page-redis'), CONSOLE_NODE_MS: '300', CONSOLE_LIVE_MS: '300', ...AUTH_TEST_ENV };
    [a, b] = await Promise.all([start(env), start(env)]);
    browser = await launchChromium();
    // partition check off: the test writes a delivery in the global layout of before the partitions
    store = await openRedisStore({ url: redis.url, prefix, partitionCheck: false });
  });
  afterAll(async () => {
    await store?.close();
    await browser?.close();
  });

  it('draws both nodes, disconnects a socket of the other process with its button, and retries a waiting delivery with its button', async () => {
    const user = `pk${process.pid}`;
    const token = await signIn(b.url, ['editor'], user);
    const client = await connectTopics(b.url);
    const closed = new Promise<number>((r) => client.ws.on('close', (code) => r(code)));
    await client.auth(token);
    const now = Date.now();
    const id = `console-page-${process.pid}`;
    const rec = { id, dest: 'console-test', payload: {}, createdAt: now, attempts: 1, due: now + 3_600_000, lastAttemptAt: now, lastError: 'peer answered 503' };
    await store.update([], () => ({
      writes: [
        { op: 'set', key: outboxKey(id), value: recordJson(rec) },
        { op: 'index', key: OUTBOX_DUE, member: id, score: rec.due },
        { op: 'index', key: OUTBOX_CREATED, member: id, score: now },
      ],
      result: undefined,
    }));

    const errors: string[] = [];
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${a.url}/console`);
    await page.waitForSelector('#signin-form');
    await page.fill('#signin-user', 'admin');
    await page.fill('#signin-password', TEST_ADMIN_PASSWORD);
    await page.press('#signin-password', 'Enter');
    await page.waitForSelector('body[data-auth="operator"]');
    await page.waitForFunction(() => document.querySelectorAll('#nodes tr[data-node]').length === 2);
    expect(await page.textContent('#store')).toContain('redis');

    // the editor's socket, held by B, listed and ended from A's page
    await page.fill('#conn-user', user);
    await page.press('#conn-user', 'Enter');
    await page.waitForSelector('tr[data-conn] button[data-act="disconnect"]');
    await page.click('tr[data-conn] button[data-act="disconnect"]');
    expect(await closed).toBe(4403);
    await page.waitForSelector('tr[data-empty="true"]');

    // the waiting delivery, retried at once: its second attempt is made and drawn
    const row = `tr[data-delivery="${id}"]`;
    await page.waitForSelector(row);
    expect(await page.textContent(row)).toContain('peer answered 503');
    await page.click(`${row} button[data-act="retry"]`);
    await until('a second attempt', async () => ((await store.get(outboxKey(id, legacyPartition(id)))) as { attempts?: number } | undefined)?.attempts === 2);
    await page.waitForFunction((sel) => document.querySelector(`${sel} td:nth-child(3)`)?.textContent === '2', row);
    expect(errors).toEqual([]);
  }, 60_000);
});
