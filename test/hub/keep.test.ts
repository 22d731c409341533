/**
 * Uploads a route declares with `multipart.keep` (src/hub/keep.ts): the hub inspects every file and
 * stores it before the handler, which gets stored references (`ctx.stored`) and owns them from then
 * on. A refusal before the handler (fields, guards, inspection, a store failing half-way, a replayed
 * Idempotency-Key) leaves no blob and no temporary file behind.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../src/clock.js';
import { FsBlobStore } from '../../src/blobs/index.js';
import { AppError } from '../../src/errors.js';
import { Hub, Reply } from '../../src/hub/index.js';
import type { StoredUpload, UploadedFile } from '../../src/hub/declare.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { blobKeeper } from '../../src/uploads/index.js';
import type { Answer } from '../support/http.js';
import { until } from '../support/wait.js';
import { makeExe, makeHwp, makePdf, multipart, type Part } from '../support/uploads.js';

let hub: Hub;
let base: string;
let blobs: FsBlobStore;
const root = mkdtempSync(join(tmpdir(), 'maru-keep-'));
const tempDir = join(root, 'tmp');
/** What the keeper was asked, and a put that fails at a given call. */
let inspected: string[] = [];
let puts = 0;
let failPutAt = 0;
/** What the handlers received. */
const received: StoredUpload[][] = [];

beforeAll(async () => {
  blobs = await new FsBlobStore(join(root, 'blobs')).init();
  const store = await openLmdbStore({ path: join(root, 'store') });
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: root, shutdownGraceMs: 500, uploads: { tempDir, maxFileBytes: 256 * 1024 } });
  hub.useState(store, new ManualClock(1_000_000_000_000));
  const real = blobKeeper(blobs);
  const keep = {
    inspect: (file: UploadedFile) => {
      inspected.push(file.field);
      return real.inspect(file);
    },
    put: (file: UploadedFile, mediaType: string) => {
      if (++puts === failPutAt) return Promise.reject(new AppError('unavailable', 'storage_unavailable', 'the blob store is down'));
      return real.put(file, mediaType);
    },
    discard: real.discard,
  };
  const body = { schema: z.object({ title: z.string().min(1) }), multipart: { files: ['a', 'b'], fields: ['title'], keep } };
  hub.route({
    method: 'POST',
    path: '/kept',
    body,
    // a guard that refuses by a field: it runs before anything is inspected
    guards: [
      (ctx) => {
        if ((ctx.body as { title: string }).title === 'no') throw new AppError('forbidden', 'forbidden', 'refused by the guard');
      },
    ],
    idempotency: { key: 'optional' },
    handler: (ctx) => {
      received.push(ctx.stored!);
      return Reply.json({ stored: ctx.stored }, 201);
    },
  });
  base = `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}`;
});

afterAll(async () => {
  await hub?.stop();
  rmSync(root, { recursive: true, force: true });
});

beforeEach(() => {
  inspected = [];
  puts = 0;
  failPutAt = 0;
  received.length = 0;
});

async function send(parts: Part[], headers: Record<string, string> = {}): Promise<Answer> {
  const { body, contentType } = multipart(parts);
  const res = await fetch(`${base}/kept`, { method: 'POST', headers: { 'content-type': contentType, ...headers }, body: new Uint8Array(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}
const blobKeys = async () => {
  const keys: string[] = [];
  for await (const b of blobs.list()) keys.push(b.key);
  return keys.sort();
};
const two = (title = 'ok'): Part[] => [
  { name: 'title', value: title },
  { name: 'a', filename: '명함.pdf', data: makePdf(), type: 'application/octet-stream' },
  { name: 'b', filename: '결재.hwp', data: makeHwp(), type: 'text/plain' },
];
const tempsGone = () => until('temporary files gone', () => readdirSync(tempDir).length === 0);

describe('uploads the hub keeps for the handler (multipart.keep)', () => {
  it('hands the handler stored references, typed by content; no temporary file stays', async () => {
    const before = await blobKeys();
    const r = await send(two());
    expect(r.status).toBe(201);
    const stored = (r.body as { stored: StoredUpload[] }).stored;
    expect(stored.map((s) => [s.field, s.filename, s.mediaType])).toEqual([
      ['a', '명함.pdf', 'application/pdf'],
      ['b', '결재.hwp', 'application/x-hwp'],
    ]);
    expect(stored.every((s) => s.size > 0 && /^[A-Za-z0-9_-]{22}$/.test(s.blobKey))).toBe(true);
    expect(await blobKeys()).toEqual([...before, ...stored.map((s) => s.blobKey)].sort());
    expect(inspected).toEqual(['a', 'b']);
    await tempsGone();
  });

  it('inspects every file before storing any: one refused file stores nothing and names its field', async () => {
    const before = await blobKeys();
    const r = await send([...two().slice(0, 2), { name: 'b', filename: 'setup.hwp', data: makeExe() }]);
    expect(r.status).toBe(415);
    expect(r.body).toMatchObject({ error: { code: 'unsupported_file_type', details: { field: 'b' } } });
    expect(puts).toBe(0);
    expect(received).toEqual([]);
    expect(await blobKeys()).toEqual(before);
    await tempsGone();
  });

  it('discards what it stored when storing fails half-way; the handler never runs', async () => {
    const before = await blobKeys();
    failPutAt = 2;
    const r = await send(two());
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ error: { code: 'storage_unavailable' } });
    expect(puts).toBe(2);
    expect(received).toEqual([]);
    expect(await blobKeys()).toEqual(before);
    await tempsGone();
  });

  it('runs after the fields and the guards: a refused request is never inspected', async () => {
    const bad = await send([{ name: 'title', value: '' }, ...two().slice(1)]);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { code: 'invalid_body' } });
    const guarded = await send(two('no'));
    expect(guarded.status).toBe(403);
    expect(inspected).toEqual([]);
    await tempsGone();
  });

  it('runs after the Idempotency-Key: a replay stores nothing new', async () => {
    const parts = two('once');
    const first = await send(parts, { 'idempotency-key': 'keep-1' });
    expect(first.status).toBe(201);
    const after = await blobKeys();
    const again = await send(parts, { 'idempotency-key': 'keep-1' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await blobKeys()).toEqual(after);
    expect(inspected).toEqual(['a', 'b']);
    await tempsGone();
  });

  it('takes a JSON request on the same route: ctx.stored is empty', async () => {
    const res = await fetch(`${base}/kept`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'json' }) });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ stored: [] });
    expect(inspected).toEqual([]);
  });
});
