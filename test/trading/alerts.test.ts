import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { AlertService, alertDeliverer, alertWrites, checkWebhookUrl, isPrivateAddress, signWebhook } from '../../src/trading/alerts.js';
import { call, until } from '../support/http.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { tempDir } from '../support/process.js';

/**
 * Alerts: a live program's events posted to its trader's webhook, signed (Standard Webhooks),
 * enqueued in the outbox with the program's own write and retried by it; the URL refused on a
 * private or loopback address unless the hub allows them (ALERTS_ALLOW_PRIVATE, for this test's
 * receiver on loopback).
 */
const silent = pino({ level: 'silent' });

describe('webhook addresses and signatures', () => {
  it('private, loopback, link-local, shared and reserved addresses are refused; public ones pass', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', 'not-an-ip']) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPrivateAddress(a), a).toBe(false);
  });

  it('a URL on a private address, with credentials or another scheme is a 400 naming url', async () => {
    await expect(checkWebhookUrl('http://127.0.0.1:9/hook', false)).rejects.toMatchObject({ code: 'private_address' });
    await expect(checkWebhookUrl('https://10.0.0.5/hook', false)).rejects.toMatchObject({ code: 'private_address' });
    await expect(checkWebhookUrl('https://[::1]/hook', false)).rejects.toMatchObject({ code: 'private_address' });
    await expect(checkWebhookUrl('https://localhost/hook', false)).rejects.toMatchObject({ code: 'private_address' });
    await expect(checkWebhookUrl('ftp://8.8.8.8/hook', false)).rejects.toMatchObject({ code: 'invalid_body', message: 'url: must be http or https' });
    await expect(checkWebhookUrl('https://u:p@8.8.8.8/hook', false)).rejects.toMatchObject({ code: 'invalid_body' });
    await expect(checkWebhookUrl('nope', false)).rejects.toMatchObject({ code: 'invalid_body' });
    expect((await checkWebhookUrl('https://8.8.8.8/hook', false)).toString()).toBe('https://8.8.8.8/hook');
  });

  it('the deliverer never connects to a private address unless allowed', async () => {
    const store = await openLmdbStore({ path: tempDir('alerts-private') });
    try {
      const alerts = new AlertService(store, { allowPrivate: true });
      await alerts.set({ id: 'p1', created_by: 'u' }, { url: 'http://127.0.0.1:9/hook' });
      const [write] = alertWrites(await store.get('program:alert:p1'), [{ id: 'p1-s1', type: 'signal', program: 'p1', created_by: 'u', t: 1, bar: 1, action: 'long', price: 1 } as never], 'program:p1');
      const item = (write as unknown as { value: { id: string; dest: string; payload: never; createdAt: number } }).value;
      await expect(alertDeliverer(store, { allowPrivate: false })({ ...item }, new AbortController().signal)).rejects.toThrow(/private address/);
    } finally {
      await store.close();
    }
  });

  it('signs as Standard Webhooks: v1, base64 HMAC-SHA256 of id.timestamp.body with the decoded secret', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const sig = signWebhook(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    // the example of the Standard Webhooks specification
    expect(sig).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});

describe('alerts over HTTP, delivered through the outbox', () => {
  let maru: Maru;
  let base: string;
  let receiver: Server;
  let hookUrl: string;
  const got: { headers: IncomingHttpHeaders; body: string; status: number }[] = [];
  let failFirst = 0;
  let downUntil = 0;
  let owner: string;
  let other: string;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const status = req.url === '/down' && Date.now() < downUntil ? 503 : req.url === '/down' ? 200 : failFirst-- > 0 ? 503 : 200;
        got.push({ headers: req.headers, body, status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: tempDir('trading-alerts'),
      LOG_LEVEL: 'silent',
      TRADING_WORKERS: '1',
      ALERTS_ALLOW_PRIVATE: '1',
      OUTBOX_RETRY_MIN_MS: '50',
      OUTBOX_RETRY_MAX_MS: '200',
      ALERTS_KEEP_AFTER_DELETE_MS: '1500',
      ...AUTH_TEST_ENV,
    });
    maru = await startMaru(config, { logger: silent });
    base = maru.url;
    owner = await signIn(base, ['trader']);
    other = await signIn(base, ['trader']);
  });
  afterAll(async () => {
    await maru.stop();
    await new Promise((r) => receiver.close(r));
  });

  it("posts a program's status changes, signed, retried after a failure with the same webhook-id", async () => {
    const created = await call(base, 'POST', '/api/program/create', { name: 'alerted', strategy: 'ema_cross', symbol: 'ES' }, bearer(owner));
    const id = created.body.program.id as string;
    const set = await call(base, 'PUT', `/api/program/alert/${id}`, { url: hookUrl, events: ['status', 'trade'] }, bearer(owner));
    expect(set.status).toBe(200);
    const { secret } = set.body.alert;
    expect(secret).toMatch(/^whsec_/);
    expect(set.body.alert).toMatchObject({ program: id, url: hookUrl, events: ['status', 'trade'] });
    const shown = await call(base, 'GET', `/api/program/alert/${id}`, undefined, bearer(owner));
    expect(shown.body.alert).not.toHaveProperty('secret');
    expect(shown.body.alert.url).toBe(hookUrl);

    failFirst = 1; // the first attempt fails: the outbox retries
    expect((await call(base, 'POST', '/api/program/start', { id }, bearer(owner))).status).toBe(200);
    await until('a delivered alert', () => got.some((g) => g.status === 200), 10_000);
    const [first, second] = got;
    expect(first!.status).toBe(503);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    const hid = second!.headers['webhook-id'] as string;
    const ts = second!.headers['webhook-timestamp'] as string;
    expect(hid).toMatch(new RegExp(`^trading-alert:${id}-m[0-9a-f]+$`));
    expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(300);
    const expected = `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`${hid}.${ts}.${second!.body}`).digest('base64')}`;
    expect(second!.headers['webhook-signature']).toBe(expected);
    const body = JSON.parse(second!.body);
    expect(body).toMatchObject({ type: 'program.status', data: { type: 'status', program: id, state: 'running', previous: 'created' } });

    // a removed alert sends nothing more
    expect((await call(base, 'DELETE', `/api/program/alert/${id}`, undefined, bearer(owner))).body).toEqual({ id, deleted: true });
    const before = got.length;
    await call(base, 'POST', '/api/program/pause', { id }, bearer(owner));
    await new Promise((r) => setTimeout(r, 600));
    expect(got.length).toBe(before);
  });

  it("a deleted program's alert still sends its queued events (the deleted status), then expires", async () => {
    const make = async (url: string) => {
      const id = (await call(base, 'POST', '/api/program/create', { name: 'gone', strategy: 'ema_cross', symbol: 'ES' }, bearer(owner))).body.program.id as string;
      expect((await call(base, 'PUT', `/api/program/alert/${id}`, { url, events: ['status'] }, bearer(owner))).status).toBe(200);
      return id;
    };
    const statesOf = (id: string) => got.filter((g) => g.status === 200).map((g) => JSON.parse(g.body).data).filter((d) => d.program === id).map((d) => d.state);
    // a webhook that answers: the deleted status arrives after the program is gone
    const up = await make(hookUrl);
    expect((await call(base, 'POST', '/api/program/delete', { id: up }, bearer(owner))).status).toBe(200);
    await until('the deleted status delivered', () => statesOf(up).includes('deleted'), 10_000);
    expect((await call(base, 'GET', `/api/program/alert/${up}`, undefined, bearer(owner))).status).toBe(404);
    // a webhook down for longer than the alert is kept: its queued status is dropped once the alert expired
    const downUrl = hookUrl.replace(/\/hook$/, '/down');
    downUntil = Date.now() + 4000;
    const down = await make(downUrl);
    expect((await call(base, 'POST', '/api/program/delete', { id: down }, bearer(owner))).status).toBe(200);
    await until('the webhook refused an attempt', () => got.some((g) => g.status === 503 && JSON.parse(g.body).data.program === down), 10_000);
    await new Promise((r) => setTimeout(r, downUntil - Date.now() + 1000));
    expect(statesOf(down)).toEqual([]);
  });

  it('refuses: no or a bad token 401, another trader 403, unknown program 404, bad url or events 400', async () => {
    const created = await call(base, 'POST', '/api/program/create', { name: 'mine', strategy: 'ema_cross', symbol: 'ES' }, bearer(owner));
    const id = created.body.program.id as string;
    const hook = { url: hookUrl };
    expect((await call(base, 'PUT', `/api/program/alert/${id}`, hook)).status).toBe(401);
    expect((await call(base, 'PUT', `/api/program/alert/${id}`, hook, bearer('wrong'))).status).toBe(401);
    expect((await call(base, 'PUT', `/api/program/alert/${id}`, hook, bearer(other))).status).toBe(403);
    expect((await call(base, 'GET', `/api/program/alert/${id}`, undefined, bearer(other))).status).toBe(403);
    expect((await call(base, 'PUT', '/api/program/alert/p_missing', hook, bearer(owner))).status).toBe(404);
    const badUrl = await call(base, 'PUT', `/api/program/alert/${id}`, { url: 'gopher://x' }, bearer(owner));
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.error.message).toMatch(/^url: /);
    expect((await call(base, 'PUT', `/api/program/alert/${id}`, { url: hookUrl, events: ['fills'] }, bearer(owner))).status).toBe(400);
    expect((await call(base, 'GET', `/api/program/alert/${id}`, undefined, bearer(owner))).body.error.code).toBe('alert_not_found');
  });
});
