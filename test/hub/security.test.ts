import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { readdirSync } from 'node:fs';
import { z } from 'zod';
import { Hub, Reply } from '../../src/hub/index.js';
import { waitFor } from '../support/wait.js';

/**
 * Findings of a security probe of the hub: tokens in the query, connection caps and what stays
 * in memory after close, the close code of a too-big WebSocket message.
 */

let hub: Hub;
let uploadTemp = '';
let base: string;
const PER_ADDRESS = 6;
const PER_IDENTITY = 3;
const tokens: Record<string, { id: string; roles: string[] }> = {
  mt_staff: { id: 'staff1', roles: ['staff'] },
  mt_other: { id: 'other1', roles: ['staff'] },
};

beforeAll(async () => {
  const root = mkdtempSync(join(tmpdir(), 'maru-security-'));
  hub = new Hub({
    logger: pino({ level: 'silent' }),
    bodyLimit: 1024,
    webDir: root,
    shutdownGraceMs: 200,
    wsMaxPayload: 1024,
    uploads: { tempDir: (uploadTemp = join(root, 'tmp')) },
    connections: { perAddress: PER_ADDRESS, perIdentity: PER_IDENTITY },
    sse: { heartbeatMs: 60_000 },
  });
  hub.authenticate(async (token) => {
    const t = tokens[token];
    return t ? { id: t.id, name: t.id, roles: t.roles, kind: 'account' } : undefined;
  });
  hub.route({ method: 'POST', path: '/shows', auth: { roles: ['staff'] }, handler: () => Reply.json({ ok: true }, 201) });
  hub.route({ method: 'GET', path: '/mine', auth: { optional: true }, handler: (ctx) => ({ who: ctx.identity?.id ?? null }) });
  hub.route({ method: 'GET', path: '/public', handler: () => ({ ok: true }) });
  hub.sse({ path: '/feed', auth: { roles: ['staff'] }, open: (_ctx, stream) => void stream.comment('open') });
  hub.route({
    method: 'POST',
    path: '/apply',
    body: { schema: z.object({ title: z.string().max(40) }), multipart: { files: ['doc'], fields: ['title'] } },
    handler: (ctx) => Reply.json({ title: ctx.body.title, files: ctx.files!.map((f) => ({ field: f.field, filename: f.filename, size: f.size })) }, 201),
  });
  hub.socket('/echo', { auth: { roles: ['staff'] }, upgrade: () => ({}), message: (ws, m, bin) => void ws.send(m, bin) });
  base = `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}`;
});
afterAll(() => hub?.stop());

const wsUrl = (path: string) => base.replace(/^http/, 'ws') + path;

/** Opens a WebSocket; resolves with it once open, or with the refusal's status and body. */
function openWs(path: string, headers: Record<string, string> = {}): Promise<{ ws?: WebSocket; status?: number; body?: any; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(path), { headers });
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      let raw = '';
      res.on('data', (c) => (raw += c));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(raw), retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    ws.once('error', reject);
  });
}

const closed = (ws: WebSocket) => new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: String(reason) })));

/** Reads an SSE answer's status (and body when it is not a stream); keeps a stream open until `abort`. */
async function openSse(path: string, headers: Record<string, string> = {}) {
  const ctl = new AbortController();
  const res = await fetch(base + path, { headers, signal: ctl.signal });
  const body = res.headers.get('content-type')?.startsWith('application/json') ? await res.json() : undefined;
  return { status: res.status, body, retryAfter: res.headers.get('retry-after'), abort: () => ctl.abort() };
}

describe('a token in the query', () => {
  it('is refused on routes (writes, optional and public ones alike) with 401 token_in_query, whatever the token', async () => {
    for (const [method, path] of [['POST', '/shows'], ['GET', '/mine'], ['GET', '/public']] as const) {
      for (const token of ['mt_staff', 'mt_nobody']) {
        const res = await fetch(`${base}${path}?access_token=${token}`, { method, headers: method === 'POST' ? { 'content-type': 'application/json' } : {} });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toContain('Bearer');
        expect(await res.json()).toMatchObject({ error: { code: 'token_in_query', details: { parameter: 'access_token' } } });
      }
    }
    // the same token in the header works
    const ok = await fetch(`${base}/shows`, { method: 'POST', headers: { authorization: 'Bearer mt_staff' } });
    expect(ok.status).toBe(201);
    // in process too (hub.inject takes the same pipeline)
    expect((await hub.inject('POST', '/shows?access_token=mt_staff')).status).toBe(401);
  });

  it('is still taken by SSE streams and WebSocket upgrades, which cannot send a header from a browser', async () => {
    const sse = await openSse('/feed?access_token=mt_staff');
    expect(sse.status).toBe(200);
    sse.abort();
    const { ws } = await openWs('/echo?access_token=mt_staff');
    expect(ws).toBeDefined();
    ws!.close();
    const wrong = await openSse('/feed?access_token=mt_nobody');
    expect(wrong).toMatchObject({ status: 401, body: { error: { code: 'invalid_token' } } });
    await waitFor(() => hub.connections().sockets === 0 && hub.connections().streams === 0);
  });
});

describe('connection caps', () => {
  it('refuses WebSockets and SSE streams past the per-identity cap with 429, and forgets everything once they close', async () => {
    const auth = { authorization: 'Bearer mt_staff' };
    const held: WebSocket[] = [];
    const streams: { abort: () => void }[] = [];
    for (let i = 0; i < 2; i++) held.push((await openWs('/echo', auth)).ws!);
    streams.push(await openSse('/feed', auth));
    // the identity holds 3 (2 sockets, 1 stream): a 4th of either kind is refused before it opens
    const ws4 = await openWs('/echo', auth);
    expect(ws4).toMatchObject({ status: 429, retryAfter: '5', body: { error: { code: 'too_many_connections', details: { per: 'identity', limit: PER_IDENTITY } } } });
    const sse4 = await openSse('/feed', auth);
    expect(sse4).toMatchObject({ status: 429, retryAfter: '5', body: { error: { code: 'too_many_connections', details: { per: 'identity' } } } });
    // another identity from the same address still gets in, up to the address's cap
    const other = { authorization: 'Bearer mt_other' };
    for (let i = 0; i < 3; i++) held.push((await openWs('/echo', other)).ws!);
    expect(hub.connections()).toMatchObject({ sockets: 5, streams: 1, addresses: 1, identities: 2 });
    // the address holds 6: an anonymous /ws socket is refused too
    expect(await openWs('/ws')).toMatchObject({ status: 429, body: { error: { code: 'too_many_connections', details: { per: 'address', limit: PER_ADDRESS } } } });

    // one closes: a slot is free again
    const first = held.shift()!;
    first.close();
    await closed(first);
    await waitFor(() => hub.connections().sockets === 4);
    const again = await openWs('/echo', auth);
    expect(again.ws).toBeDefined();
    held.push(again.ws!);

    for (const ws of held) ws.close();
    for (const s of streams) s.abort();
    await waitFor(() => hub.connections().sockets === 0 && hub.connections().streams === 0);
    expect(hub.connections()).toEqual({ sockets: 0, streams: 0, addresses: 0, identities: 0 });
  });

  it('counts a /ws socket against the identity its auth frame names', async () => {
    const held: WebSocket[] = [];
    for (let i = 0; i < PER_IDENTITY; i++) held.push((await openWs('/echo', { authorization: 'Bearer mt_staff' })).ws!);
    const { ws } = await openWs('/ws');
    const frame = new Promise<any>((r) => ws!.once('message', (d) => r(JSON.parse(String(d)))));
    ws!.send(JSON.stringify({ type: 'auth', token: 'mt_staff' }));
    expect(await frame).toMatchObject({ type: 'error', code: 'too_many_connections' });
    for (const w of [...held, ws!]) w.close();
    await waitFor(() => hub.connections().sockets === 0);
    expect(hub.connections()).toEqual({ sockets: 0, streams: 0, addresses: 0, identities: 0 });
  });
});

describe('a WebSocket message over the limit', () => {
  it('closes with 1009 "message too big" (RFC 6455), not a dropped connection', async () => {
    const { ws } = await openWs('/echo', { authorization: 'Bearer mt_staff' });
    const echo = new Promise<Buffer>((r) => ws!.once('message', (d) => r(d as Buffer)));
    ws!.send(Buffer.alloc(1024, 1));
    expect((await echo).length).toBe(1024);
    const end = closed(ws!);
    ws!.send(Buffer.alloc(2 << 20, 1));
    const { code, reason } = await end;
    expect(code).toBe(1009);
    expect(reason).toMatch(/message too big/);
    await waitFor(() => hub.connections().sockets === 0);
  });
});

describe('a multipart file part with a malformed file name', () => {
  /** A body with the title field and one `doc` file part whose Content-Disposition names `filename` as given (raw). */
  const post = async (filename: string, content = '%PDF-1.4 hello') => {
    const body =
      `--XB\r\nContent-Disposition: form-data; name="title"\r\n\r\nmine\r\n` +
      `--XB\r\nContent-Disposition: form-data; name="doc"; filename="${filename}"\r\nContent-Type: application/pdf\r\n\r\n${content}\r\n--XB--\r\n`;
    const res = await fetch(`${base}/apply`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=XB' }, body });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('is refused with 400 invalid_filename naming the field (a raw quote, CR or LF), never dropped', async () => {
    for (const name of ['a"b.pdf', 'a\rb.pdf', 'a\nb.pdf', 'a\r\nb.pdf', '"', 'x";.pdf']) {
      const r = await post(name);
      expect(r.status, JSON.stringify(name)).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_filename', details: { field: 'doc' } });
      expect(r.body.error.message).toContain('"doc"');
    }
    expect(readdirSync(uploadTemp)).toEqual([]);
  });

  it('takes a good name, and file content that looks like a part header is only content', async () => {
    const ok = await post('letter.pdf');
    expect(ok).toMatchObject({ status: 201, body: { title: 'mine', files: [{ field: 'doc', filename: 'letter.pdf' }] } });
    const tricky = 'Content-Disposition: form-data; name="doc"; filename="a"b.pdf"\r\n\r\n--X not the boundary';
    const r = await post('notes.pdf', tricky);
    expect(r).toMatchObject({ status: 201, body: { files: [{ field: 'doc', filename: 'notes.pdf', size: Buffer.byteLength(tricky) }] } });
  });
});

describe('temporary upload files of a process killed mid-upload', () => {
  it('are swept when a hub starts; those of live processes (this one, another) stay', async () => {
    const { spawn } = await import('node:child_process');
    const { writeFileSync, existsSync, mkdirSync } = await import('node:fs');
    const { newTempPath } = await import('../../src/hub/upload-dir.js');
    const dir = join(mkdtempSync(join(tmpdir(), 'maru-sweep-')), 'tmp');
    mkdirSync(dir);
    const mine = newTempPath(dir);
    const host = /upload-([0-9a-f]{8})-/.exec(mine)![1]!;
    // a process that ran and is gone: its pid is free
    const gone = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => gone.once('exit', r));
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    const name = (pid: number) => join(dir, `upload-${host}-${pid}-${'ab'.repeat(16)}`);
    const dead = name(gone.pid!);
    const other = name(live.pid!);
    for (const f of [dead, other, mine]) writeFileSync(f, 'partial');
    const h = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: dir, shutdownGraceMs: 50, uploads: { tempDir: dir } });
    try {
      await waitFor(() => !existsSync(dead), 3000, 'dead writer swept');
      expect(existsSync(other)).toBe(true);
      expect(existsSync(mine)).toBe(true);
    } finally {
      live.kill('SIGKILL');
      await h.stop();
    }
  });
});
