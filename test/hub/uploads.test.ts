import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, watch, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FsBlobStore } from '../../src/blobs/index.js';
import { AppError } from '../../src/errors.js';
import { Hub, Reply } from '../../src/hub/index.js';
import { sweepTempUploads } from '../../src/hub/multipart.js';
import { inspectUpload } from '../../src/uploads/index.js';
import { call, until, type Answer } from '../support/http.js';
import { makeExe, makeHwp, makeHwpx, makePdf, multipart, type Part } from '../support/uploads.js';
import { sleep } from '../support/wait.js';

/**
 * The streaming multipart route option, shown with a route that exists only in this test: three
 * file fields, content checks, blobs committed only when the "record" commits.
 */
let hub: Hub;
let base: string;
let blobs: FsBlobStore;
const root = mkdtempSync(join(tmpdir(), 'maru-uploads-'));
const tempDir = join(root, 'tmp');
const records = new Map<string, string[]>();
const FILE_LIMIT = 256 * 1024;

beforeAll(async () => {
  blobs = await new FsBlobStore(join(root, 'blobs')).init();
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: root, shutdownGraceMs: 500, uploads: { tempDir, maxFileBytes: FILE_LIMIT } });
  // a look-up that takes a while, as a store round trip does: the body arrives meanwhile
  hub.authenticate(async (token) => {
    await sleep(50);
    return token === 'partner-token' ? { id: 'p1', name: 'partner', roles: ['partner'], kind: 'account' } : undefined;
  });
  const upload = {
    schema: z.object({ title: z.string().min(1).max(40), fail: z.literal('after-store').optional() }),
    multipart: { files: ['bizCard', 'uniqueNumber', 'internalResolution'], fields: ['title', 'fail'], maxRequestBytes: 1 << 20 },
  };
  hub.route({
    method: 'POST',
    path: '/test/applications',
    body: upload,
    handler: async (ctx) => {
      const files = ctx.files!;
      const checked = [];
      for (const f of files) checked.push({ field: f.field, filename: f.filename, size: f.size, ...(await inspectUpload(f)) });
      const keys: string[] = [];
      for (const f of files) keys.push((await blobs.putFile(f.tempPath)).key);
      if (ctx.body.fail) {
        // the record did not commit: its blobs go too
        await Promise.all(keys.map((k) => blobs.delete(k)));
        throw new AppError('conflict', 'record_failed', 'the record could not be written');
      }
      records.set(ctx.body.title, keys);
      return Reply.json({ title: ctx.body.title, files: checked.map((c, i) => ({ ...c, key: keys[i] })) }, 201);
    },
  });
  hub.route({ method: 'PUT', path: '/test/partner-upload', auth: { roles: ['partner'] }, body: upload, handler: () => ({ ok: true }) });
  hub.route({
    method: 'POST',
    path: '/test/big',
    body: { schema: z.object({}), multipart: { files: ['doc'], maxFileBytes: 16 << 20 } },
    handler: async (ctx) => {
      const f = ctx.files![0]!;
      const { key } = await blobs.putFile(f.tempPath);
      const { stream } = await blobs.get(key);
      return { size: f.size, sha256: createHash('sha256').update(await buffer(stream)).digest('hex') };
    },
  });
  base = `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}`;
});

afterAll(async () => {
  await hub?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Sends raw bytes (the JSON helper would encode a Buffer as JSON). */
async function raw(method: string, path: string, body: Buffer | string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(base + path, { method, headers, body: typeof body === 'string' ? body : new Uint8Array(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}
const send = (path: string, parts: Part[], headers: Record<string, string> = {}, method = 'POST') => {
  const { body, contentType } = multipart(parts);
  return raw(method, path, body, { 'content-type': contentType, ...headers });
};
const three = (overrides: Partial<Record<string, Part>> = {}): Part[] => [
  { name: 'title', value: 'ok' },
  overrides.bizCard ?? { name: 'bizCard', filename: '명함.pdf', data: makePdf(), type: 'application/pdf' },
  overrides.uniqueNumber ?? { name: 'uniqueNumber', filename: '고유번호증.hwp', data: makeHwp(), type: 'application/x-hwp' },
  overrides.internalResolution ?? { name: 'internalResolution', filename: '내부결재.hwpx', data: makeHwpx(), type: 'application/octet-stream' },
];
const tempFiles = () => readdirSync(tempDir);
const blobCount = async () => {
  let n = 0;
  for await (const _ of blobs.list()) n++;
  return n;
};

describe('streaming multipart uploads', () => {
  it('stores three documents checked by content, with their Korean names', async () => {
    const r = await send('/test/applications', three());
    expect(r.status).toBe(201);
    expect(r.body.files.map((f: { field: string; kind: string; filename: string }) => [f.field, f.kind, f.filename])).toEqual([
      ['bizCard', 'pdf', '명함.pdf'],
      ['uniqueNumber', 'hwp', '고유번호증.hwp'],
      ['internalResolution', 'hwpx', '내부결재.hwpx'],
    ]);
    const hwp = makeHwp();
    expect(r.body.files[1].size).toBe(hwp.length);
    const stored = await blobs.get(r.body.files[2].key);
    expect((await buffer(stored.stream)).equals(makeHwpx())).toBe(true);
    expect(tempFiles()).toEqual([]);
  });

  it('keeps Korean file names composed (NFC), as macOS sends them decomposed', async () => {
    const nfd = '명함.pdf'.normalize('NFD');
    const r = await send('/test/applications', three({ bizCard: { name: 'bizCard', filename: nfd, data: makePdf() } }));
    expect(r.status).toBe(201);
    expect(r.body.files[0].filename).toBe('명함.pdf'.normalize('NFC'));
  });

  it('takes a .hwpx that is really HWP 5 as HWP', async () => {
    const r = await send('/test/applications', three({ internalResolution: { name: 'internalResolution', filename: 'x.hwpx', data: makeHwp() } }));
    expect(r.status).toBe(201);
    expect(r.body.files[2].kind).toBe('hwp');
  });

  it('still takes JSON on the same route (no files)', async () => {
    const r = await call(base, 'POST', '/test/applications', { title: 'json' });
    expect(r.status).toBe(201);
    expect(r.body.files).toEqual([]);
    const bad = await call(base, 'POST', '/test/applications', 'title=x', { 'content-type': 'text/plain' });
    expect(bad.status).toBe(415);
    expect(bad.body.error.message).toContain('multipart/form-data');
  });

  it('streams a 12 MiB file through to the blob store intact', async () => {
    const data = Buffer.alloc(12 << 20, 7);
    makePdf().copy(data);
    const r = await send('/test/big', [{ name: 'doc', filename: 'big.pdf', data }]);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ size: data.length, sha256: createHash('sha256').update(data).digest('hex') });
  });

  const refused: Array<[string, () => Part[], number, string]> = [
    ['a renamed executable', () => three({ bizCard: { name: 'bizCard', filename: 'card.hwp', data: makeExe() } }), 415, 'unsupported_file_type'],
    ['a PDF called .hwp', () => three({ uniqueNumber: { name: 'uniqueNumber', filename: 'a.hwp', data: makePdf() } }), 415, 'type_mismatch'],
    ['a password-protected HWP', () => three({ uniqueNumber: { name: 'uniqueNumber', filename: 'a.hwp', data: makeHwp(3) } }), 422, 'document_encrypted'],
    ['a file over the limit', () => three({ bizCard: { name: 'bizCard', filename: 'a.pdf', data: makePdf(FILE_LIMIT) } }), 413, 'file_too_large'],
    ['a fourth file field', () => [...three(), { name: 'extra', filename: 'x.pdf', data: makePdf() }], 400, 'unexpected_file'],
    ['a duplicated file field', () => [...three(), { name: 'bizCard', filename: 'again.pdf', data: makePdf() }], 400, 'duplicate_file'],
    ['a path-like filename', () => three({ bizCard: { name: 'bizCard', filename: '../../x', data: makePdf() } }), 400, 'invalid_filename'],
    ['a Windows path filename', () => three({ bizCard: { name: 'bizCard', filename: 'C:\\temp\\x.pdf', data: makePdf() } }), 400, 'invalid_filename'],
    ['a filename with a bidi override', () => three({ bizCard: { name: 'bizCard', filename: 'card\u202Efdp.exe', data: makePdf() } }), 400, 'invalid_filename'],
    ['an unknown text field', () => [{ name: 'admin', value: '1' }, ...three()], 400, 'unexpected_field'],
    ['a duplicated text field', () => [{ name: 'title', value: 'again' }, ...three()], 400, 'duplicate_field'],
    ['a file sent as a text field', () => [{ name: 'bizCard', value: 'not a file' }, { name: 'title', value: 't' }], 400, 'invalid_file'],
    ['a field failing the schema', () => [{ name: 'title', value: 'x'.repeat(41) }, ...three().slice(1)], 400, 'invalid_body'],
    ['a record that fails after its blobs were stored', () => [{ name: 'fail', value: 'after-store' }, ...three()], 409, 'record_failed'],
  ];
  for (const [what, parts, status, code] of refused) {
    it(`refuses ${what} (${status} ${code}) and leaves nothing behind`, async () => {
      const before = await blobCount();
      const r = await send('/test/applications', parts());
      expect(r.status).toBe(status);
      expect(r.body.error.code).toBe(code);
      expect(typeof r.body.error.message).toBe('string');
      expect(tempFiles()).toEqual([]);
      expect(await blobCount()).toBe(before);
    });
  }

  it('refuses a truncated body (400 truncated_body)', async () => {
    const { body, contentType } = multipart(three());
    const cut = body.subarray(0, body.length - 200);
    const r = await raw('POST', '/test/applications', cut, { 'content-type': contentType });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('truncated_body');
    expect(tempFiles()).toEqual([]);
  });

  it('refuses a multipart content type without a boundary, and a request over the request limit', async () => {
    const nb = await raw('POST', '/test/applications', 'x', { 'content-type': 'multipart/form-data' });
    expect([nb.status, nb.body.error.code]).toEqual([400, 'invalid_multipart']);
    const { body, contentType } = multipart([{ name: 'title', value: 'x' }, { name: 'bizCard', filename: 'a.pdf', data: makePdf(1 << 20) }]);
    const big = await raw('POST', '/test/applications', body, { 'content-type': contentType });
    expect([big.status, big.body.error.code, big.body.error.details]).toEqual([413, 'payload_too_large', { limit: 1 << 20 }]);
    expect(tempFiles()).toEqual([]);
  });

  it('counts a body without Content-Length (chunked) against the request limit while it streams', async () => {
    const parts = multipart(three());
    // a preamble before the first boundary (parsers skip it) makes the body large without tripping another limit
    const body = Buffer.concat([Buffer.alloc(1 << 20, 'p'), Buffer.from('\r\n'), parts.body]);
    const contentType = parts.contentType;
    const url = new URL(base);
    const answer = await new Promise<{ status: number; code: string }>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, method: 'POST', path: '/test/applications', headers: { 'content-type': contentType, 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, code: JSON.parse(text).error.code }));
      });
      // the server may close before all is sent: the status line is what counts
      req.on('error', (err) => (req.writableEnded ? undefined : reject(err)));
      for (let o = 0; o < body.length; o += 64 * 1024) req.write(body.subarray(o, o + 64 * 1024));
      req.end();
    });
    expect(answer).toEqual({ status: 413, code: 'payload_too_large' });
    await until('the temporary files to be removed', () => tempFiles().length === 0);
  });

  it('sweeps temporary files left by a crash once they are old enough', async () => {
    const left = join(tempDir, 'upload-0123456789abcdef0123456789abcdef');
    writeFileSync(left, 'partial');
    expect(await sweepTempUploads(tempDir, 3_600_000)).toBe(0);
    expect(await sweepTempUploads(tempDir, 3_600_000, Date.now() + 3_600_000)).toBe(1);
    expect(tempFiles()).toEqual([]);
  });

  it('refuses too many parts', async () => {
    const parts: Part[] = Array.from({ length: 40 }, (_, i) => ({ name: `f${i}`, value: 'x' }));
    const r = await send('/test/applications', parts);
    expect(r.status).toBe(400);
    expect(['unexpected_field', 'too_many_fields', 'too_many_parts']).toContain(r.body.error.code);
  });

  it('checks the credential of an upload route first: a refused upload never reaches the disk', async () => {
    const created: string[] = [];
    const watcher = watch(tempDir, (_event, name) => created.push(String(name)));
    const big = three({ bizCard: { name: 'bizCard', filename: 'a.pdf', data: makePdf(200_000) } });
    const none = await send('/test/partner-upload', big, {}, 'PUT');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await send('/test/partner-upload', big, { authorization: 'Bearer nope' }, 'PUT');
    expect(wrong.status).toBe(401);
    watcher.close();
    expect(created).toEqual([]);
    const ok = await send('/test/partner-upload', three(), { authorization: 'Bearer partner-token' }, 'PUT');
    expect(ok.status).toBe(200);
    expect(tempFiles()).toEqual([]);
  });

  it('keeps a keep-alive connection reading after uploads that paused it (held for the credential, backpressure)', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(base);
    const over = (method: string, path: string, parts: Part[], headers: Record<string, string> = {}) => {
      const { body, contentType } = multipart(parts);
      return new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
        const req = request({ host: url.hostname, port: url.port, method, path, agent, headers: { 'content-type': contentType, 'content-length': body.length, ...headers } }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: req.socket }));
        });
        req.on('error', reject);
        req.end(body);
      });
    };
    try {
      const small = await over('PUT', '/test/partner-upload', three(), { authorization: 'Bearer partner-token' });
      const bigFile = Buffer.alloc(8 << 20, 1);
      makePdf().copy(bigFile);
      const big = await over('POST', '/test/big', [{ name: 'doc', filename: 'big.pdf', data: bigFile }]);
      const again = await over('PUT', '/test/partner-upload', three(), { authorization: 'Bearer partner-token' });
      expect([small.status, big.status, again.status]).toEqual([200, 200, 200]);
      expect(again.socket).toBe(small.socket);
    } finally {
      agent.destroy();
    }
  });

  it('removes the temporary file of a client that goes away mid-upload', async () => {
    const { body, contentType } = multipart(three({ bizCard: { name: 'bizCard', filename: 'a.pdf', data: makePdf(200_000) } }));
    const url = new URL(base);
    await new Promise<void>((resolve) => {
      const req = request({ host: url.hostname, port: url.port, method: 'POST', path: '/test/applications', headers: { 'content-type': contentType, 'content-length': body.length } });
      req.on('error', () => resolve());
      req.write(body.subarray(0, 150_000), () => {
        // the server has started a temporary file; now vanish
        until('a temporary file', () => tempFiles().length > 0).then(() => {
          req.destroy();
          resolve();
        });
      });
    });
    await until('the temporary files to be removed', () => tempFiles().length === 0);
    // the hub still serves
    expect((await send('/test/applications', three())).status).toBe(201);
  });
});
