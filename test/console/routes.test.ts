import pino from 'pino';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { call, get, post } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { until } from '../support/wait.js';
import { connectTopics, type TopicClient } from '../support/ws.js';

/**
 * The console's routes on one hub (LMDB): what they answer (checked against their schemas in
 * /openapi.json by call()), the operator's disconnects seen by the clients, and every refusal:
 * no token, an unknown token, a role that is not the operator's, bad ids and bodies, unknown ones.
 */

let maru: Maru;
let admin: string;
let editor: string;
let editorUser: string;

beforeAll(async () => {
  maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('console'), LOG_LEVEL: 'silent', CONSOLE_NODE_MS: '200', CONSOLE_LIVE_MS: '200', ...AUTH_TEST_ENV }), {
    logger: pino({ level: 'silent' }),
  });
  admin = await login(maru.url, 'admin', TEST_ADMIN_PASSWORD);
  editorUser = `ed${process.pid}`;
  editor = await signIn(maru.url, ['editor'], editorUser);
});
afterAll(() => maru?.stop());

/** A signed-in /ws client subscribed to a topic, and the close code it gets. */
async function signedInSocket(token: string): Promise<{ client: TopicClient; closed: Promise<number> }> {
  const client = await connectTopics(maru.url);
  const closed = new Promise<number>((r) => client.ws.on('close', (code) => r(code)));
  await client.auth(token);
  return { client, closed };
}

const ROUTES: [string, string, unknown?][] = [
  ['GET', '/api/console/state'],
  ['GET', '/api/console/connections?user=admin'],
  ['POST', '/api/console/connections/0a1b2c3d:ws:1/disconnect', {}],
  ['POST', '/api/console/identities/admin/disconnect', {}],
  ['POST', '/api/console/outbox/x1/retry', {}],
  ['GET', '/api/console/live'],
];

describe('console routes', () => {
  it('every console route refuses a missing token (401), an unknown one (401) and a non-operator (403), in the shared error shape', async () => {
    for (const [method, path, body] of ROUTES) {
      const none = await call(maru.url, method, path, body);
      expect([path, none.status, none.body.error.code]).toEqual([path, 401, 'unauthorized']);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const unknown = await call(maru.url, method, path, body, bearer('mt_no-such-token'));
      expect([path, unknown.status, unknown.body.error.code]).toEqual([path, 401, 'invalid_token']);
      const wrong = await call(maru.url, method, path, body, bearer(editor));
      expect([path, wrong.status, wrong.body.error.code]).toEqual([path, 403, 'forbidden']);
    }
  });

  it('the state lists this node (version, uptime, connections, memory), its topics with subscribers, the queues and the store', async () => {
    const { client } = await signedInSocket(admin);
    await client.subscribe('program:events');
    // the node's info is published every CONSOLE_NODE_MS; this process's own is read at once
    const r = await get(maru.url, '/api/console/state', bearer(admin));
    expect(r.status).toBe(200);
    expect(r.body.nodes).toHaveLength(1);
    const [node] = r.body.nodes;
    expect(node.id).toBe(maru.hub.node);
    expect(node.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(node.connections.sockets).toBeGreaterThanOrEqual(1);
    expect(node.memory.rss).toBeGreaterThan(0);
    expect(r.body.topics).toContainEqual({ topic: 'program:events', subscribers: 1, presence: null });
    expect(r.body.queues.trading[0]).toMatchObject({ node: maru.hub.node, admitted: 0 });
    expect(r.body.queues.outbox.destinations.length).toBeGreaterThan(0);
    expect(r.body.store).toMatchObject({ kind: 'lmdb', role: 'embedded', replicas: 0 });
    client.close();
  });

  it('lists the connections of an identity and disconnects one by id: the socket closes with 4403; the id is then unknown (404)', async () => {
    const a = await signedInSocket(editor);
    const b = await signedInSocket(editor);
    const list = await get(maru.url, `/api/console/connections?user=${editorUser}`, bearer(admin));
    expect(list.status).toBe(200);
    expect(list.body.connections.filter((c: any) => c.kind === 'ws' && c.endpoint === '/ws').length).toBeGreaterThanOrEqual(2);
    const ids: string[] = list.body.connections.map((c: any) => c.id);
    for (const id of ids) expect(id.startsWith(`${maru.hub.node}:ws:`)).toBe(true);
    const target = ids[ids.length - 1]!;
    const r = await post(maru.url, `/api/console/connections/${target}/disconnect`, {}, bearer(admin));
    expect(r.status).toBe(200);
    expect(r.body.disconnected.map((c: any) => c.id)).toEqual([target]);
    expect(await b.closed).toBe(4403);
    // the other socket stays open
    expect(a.client.ws.readyState).toBe(WebSocket.OPEN);
    const again = await post(maru.url, `/api/console/connections/${target}/disconnect`, {}, bearer(admin));
    expect([again.status, again.body.error.code]).toEqual([404, 'unknown_connection']);
    a.client.close();
  });

  it('refuses bad ids and bodies (400) and unknown connections, nodes, accounts and deliveries (404)', async () => {
    const cases: [string, string, unknown, number, string][] = [
      ['POST', '/api/console/connections/not-an-id/disconnect', {}, 400, 'invalid_params'],
      ['POST', '/api/console/connections/0a1b2c3d:tcp:1/disconnect', {}, 400, 'invalid_params'],
      ['POST', `/api/console/connections/${maru.hub.node}:ws:0/disconnect`, {}, 400, 'invalid_params'],
      ['POST', '/api/console/connections/0a1b2c3d:ws:1/disconnect', {}, 404, 'unknown_connection'],
      ['POST', `/api/console/connections/${maru.hub.node}:sse:999999/disconnect`, {}, 404, 'unknown_connection'],
      ['GET', '/api/console/connections', undefined, 400, 'invalid_query'],
      ['GET', '/api/console/connections?user=-bad', undefined, 400, 'invalid_query'],
      ['GET', `/api/console/connections?user=admin&extra=1`, undefined, 400, 'invalid_query'],
      ['POST', '/api/console/identities/-bad/disconnect', {}, 400, 'invalid_params'],
      ['POST', '/api/console/identities/admin/disconnect', { revoke_tokens: 'yes' }, 400, 'invalid_body'],
      ['POST', '/api/console/identities/admin/disconnect', { revoke: true }, 400, 'invalid_body'],
      ['POST', '/api/console/identities/nobody-here/disconnect', {}, 404, 'no_connections'],
      ['POST', '/api/console/identities/nobody-here/disconnect', { revoke_tokens: true }, 404, 'unknown_account'],
      ['POST', `/api/console/outbox/${'x'.repeat(513)}/retry`, {}, 400, 'invalid_params'],
      ['POST', '/api/console/outbox/%01/retry', {}, 400, 'invalid_params'],
      ['POST', '/api/console/outbox/no-such-delivery/retry', {}, 404, 'unknown_delivery'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await call(maru.url, method, path, body, bearer(admin));
      expect([path, r.status, r.body.error?.code]).toEqual([path, status, code]);
      expect(typeof r.body.error.message).toBe('string');
    }
  });

  it('disconnects every connection of an identity and revokes its tokens: sockets close with 4401, the token no longer works', async () => {
    const user = `rv${process.pid}`;
    const token = await signIn(maru.url, ['editor'], user);
    const a = await signedInSocket(token);
    const b = await signedInSocket(token);
    const r = await post(maru.url, `/api/console/identities/${user}/disconnect`, { revoke_tokens: true }, bearer(admin));
    expect(r.status).toBe(200);
    expect(r.body.disconnected).toHaveLength(2);
    expect(r.body.revoked_tokens).toBe(1);
    expect(await a.closed).toBe(4401);
    expect(await b.closed).toBe(4401);
    expect((await get(maru.url, '/api/auth/me', bearer(token))).status).toBe(401);
    // nothing left to end, and not asked to revoke: 404
    const again = await post(maru.url, `/api/console/identities/${user}/disconnect`, {}, bearer(admin));
    expect([again.status, again.body.error.code]).toEqual([404, 'no_connections']);
  });

  it('ends an SSE stream of an identity with a closed event naming the disconnect', async () => {
    const user = `ss${process.pid}`;
    const token = await signIn(maru.url, ['operator'], user);
    const ctl = new AbortController();
    const res = await fetch(`${maru.url}/api/console/live?access_token=${token}`, { signal: ctl.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    const read = async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += Buffer.from(value).toString();
      }
    };
    const reading = read();
    await until('the first state event', () => text.includes('event: state'));
    const list = await get(maru.url, `/api/console/connections?user=${user}`, bearer(admin));
    expect(list.body.connections).toEqual([expect.objectContaining({ kind: 'sse', endpoint: '/api/console/live', user })]);
    const r = await post(maru.url, `/api/console/identities/${user}/disconnect`, {}, bearer(admin));
    expect(r.status).toBe(200);
    await reading;
    expect(text).toMatch(/event: closed\ndata: \{"error":\{"code":"disconnected"/);
    const state = JSON.parse(/event: state\ndata: (.*)\n/.exec(text)![1]!);
    expect(state.nodes[0].id).toBe(maru.hub.node);
  });
});
