import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { WebsocketProvider } from 'y-websocket';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { tempDir } from '../support/process.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { waitFor as until } from '../support/wait.js';
import { editorClient } from '../support/yjs.js';

const silent = pino({ level: 'silent' });


const synced = (p: WebsocketProvider) => until(() => p.synced, 8000, 'sync');

describe('Yjs co-editing with the stock y-websocket client', () => {
  let maru: Maru;
  let base: string;
  let editor = '';
  let staff = '';
  const save = (body: unknown) => fetch(`${base}/api/md/save`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(editor) }, body: JSON.stringify(body) });
  const client = (b: string, slug: string, name: string) => editorClient(b, slug, name, editor);
  const getDoc = async (slug: string) => (await (await fetch(`${base}/api/md/doc/${slug}`)).json()) as any;

  beforeAll(async () => {
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('collab-yjs'), LOG_LEVEL: 'silent', MD_PERSIST_DEBOUNCE_MS: '150', MD_PERSIST_MAX_MS: '600', ...AUTH_TEST_ENV }),
      { logger: silent },
    );
    base = maru.url;
    editor = await signIn(base, ['editor']);
    staff = await signIn(base, ['staff']);
  });

  /** The upgrade's answer: 101 (opened) or the refusal's status and error code. */
  const upgrade = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; code?: string; auth?: string }>((r) => {
      const w = new WebSocket(base.replace(/^http/, 'ws') + path, { headers });
      w.on('open', () => (r({ status: 101 }), w.close()));
      w.on('unexpected-response', (_q, res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => r({ status: res.statusCode ?? 0, code: JSON.parse(body).error?.code, auth: res.headers['www-authenticate'] }));
      });
      w.on('error', () => undefined);
    });

  it('co-editing needs an editor token: none 401, a wrong one 401, another role 403; an editor connects', async () => {
    expect(await upgrade('/yjs/gate')).toMatchObject({ status: 401, code: 'unauthorized', auth: 'Bearer realm="maru"' });
    expect(await upgrade('/yjs/gate?access_token=mt_' + 'x'.repeat(43))).toMatchObject({ status: 401, code: 'invalid_token' });
    expect(await upgrade('/yjs/gate', bearer('wrong'))).toMatchObject({ status: 401, code: 'invalid_token' });
    expect(await upgrade(`/yjs/gate?access_token=${staff}`)).toMatchObject({ status: 403, code: 'forbidden' });
    expect(await upgrade(`/yjs/gate?access_token=${editor}`)).toEqual({ status: 101 });
    // the stock client without the token never syncs; with it, it does
    const refused = editorClient(base, 'gate', 'nobody', 'mt_' + 'y'.repeat(43));
    const ok = client(base, 'gate', 'ann');
    await synced(ok.provider);
    ok.text.insert(0, 'only editors');
    await until(async () => (await getDoc('gate')).doc?.content === 'only editors', 5000, 'persisted');
    expect(refused.provider.synced).toBe(false);
    expect(refused.text.toString()).toBe('');
    refused.close();
    ok.close();
  });

  it('the author of a live version is the signed-in identity, not the name a client shows in awareness', async () => {
    const me = (await (await fetch(`${base}/api/auth/me`, { headers: bearer(editor) })).json()).identity;
    const a = client(base, 'authored', 'someone-else');
    await synced(a.provider);
    a.text.insert(0, 'signed text');
    await until(async () => (await getDoc('authored')).doc?.content === 'signed text', 5000, 'persisted');
    expect((await getDoc('authored')).doc.author).toBe(me.id);
    a.close();
  });
  afterAll(() => maru.stop());

  it('syncs edits and awareness between clients; edits become versions after the debounce', async () => {
    await save({ slug: 'live', content: '# Live\n' });
    const a = client(base, 'live', 'ann');
    const b = client(base, 'live', 'bob');
    await Promise.all([synced(a.provider), synced(b.provider)]);
    expect(a.text.toString()).toBe('# Live\n');
    a.text.insert(a.text.length, 'hello from ann\n');
    await until(() => b.text.toString().includes('hello from ann'), 5000, 'b sees a');
    b.text.insert(0, '> bob\n');
    await until(() => a.text.toString() === b.text.toString() && a.text.toString().startsWith('> bob'), 5000, 'a sees b');
    await until(() => [...a.provider.awareness.getStates().values()].some((s: any) => s.user?.name === 'bob'), 5000, 'awareness');
    await until(async () => (await getDoc('live')).doc?.content === a.text.toString(), 5000, 'persisted version');
    const doc = (await getDoc('live')).doc;
    expect(doc.version).toBeGreaterThan(1);
    a.close();
    b.close();
  });

  it('an HTTP save reaches connected editors, and a reload after the room unloads sees the same text once', async () => {
    const a = client(base, 'live', 'ann');
    await synced(a.provider);
    const cur = (await getDoc('live')).doc;
    const res = await save({ slug: 'live', content: cur.content + 'typed in a form\n', baseVersion: cur.version });
    expect(res.status).toBe(200);
    await until(() => a.text.toString().endsWith('typed in a form\n'), 5000, 'http save in the live doc');
    a.close();
    await new Promise((r) => setTimeout(r, 300));
    const again = client(base, 'live', 'ann');
    await synced(again.provider);
    expect(again.text.toString()).toBe(cur.content + 'typed in a form\n');
    again.close();
  });

  it('a garbage binary frame closes only its sender with 4400; the room keeps working', async () => {
    const a = client(base, 'garbage', 'ann');
    const b = client(base, 'garbage', 'bob');
    await Promise.all([synced(a.provider), synced(b.provider)]);
    a.text.insert(0, 'safe');
    await until(() => b.text.toString() === 'safe', 5000, 'first edit');
    const raw = new WebSocket(base.replace(/^http/, 'ws') + '/yjs/garbage?access_token=' + editor);
    await new Promise((r) => raw.once('open', r));
    const closed = new Promise<[number, string]>((r) => raw.once('close', (c, why) => r([c, String(why)])));
    raw.send(Buffer.from([0, 2, 9, 255, 255, 1, 2, 3, 4, 5, 6, 7]));
    expect(await closed).toEqual([4400, 'invalid y-websocket frame']);
    const raw2 = new WebSocket(base.replace(/^http/, 'ws') + '/yjs/garbage?access_token=' + editor);
    await new Promise((r) => raw2.once('open', r));
    const closed2 = new Promise<number>((r) => raw2.once('close', (c) => r(c)));
    raw2.send(Buffer.from([77, 1, 2]));
    expect(await closed2).toBe(4400);
    b.text.insert(4, ' and sound');
    await until(() => a.text.toString() === 'safe and sound', 5000, 'room still works');
    await until(async () => (await getDoc('garbage')).doc?.content === 'safe and sound', 5000, 'persisted');
    a.close();
    b.close();
  });

  it('an HTTP save made while the room unloads is neither lost nor overwritten by the live text', async () => {
    const a = client(base, 'race', 'ann');
    await synced(a.provider);
    a.text.insert(0, 'live text');
    await until(async () => (await getDoc('race')).doc?.content === 'live text', 5000, 'live persisted');
    a.text.insert(9, ' more');
    a.close();
    const res = await save({ slug: 'race', content: 'form text' });
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 800));
    expect((await getDoc('race')).doc.content).toBe('form text');
    const b = client(base, 'race', 'bob');
    await synced(b.provider);
    expect(b.text.toString()).toBe('form text');
    b.close();
  });

  it('refuses a slug with path characters at the upgrade', async () => {
    const status = await new Promise<number>((r) => {
      const w = new WebSocket(base.replace(/^http/, 'ws') + '/yjs/..%2Fetc?access_token=' + editor);
      w.on('unexpected-response', (_q, res) => r(res.statusCode ?? 0));
      w.on('error', () => undefined);
    });
    expect(status).toBe(400);
  });
});
