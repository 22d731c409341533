import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FsBlobStore } from '../../src/blobs/index.js';
import { AppError } from '../../src/errors.js';
import { Hub, Reply } from '../../src/hub/index.js';
import { ClamdScanner, inspectUpload, type Scanner } from '../../src/uploads/index.js';
import { clamdAvailable, startClamd, type RunningClamd } from '../support/clamd.js';
import { EICAR, makeHwp, makePdf, multipart, type Part } from '../support/uploads.js';

/** Virus scanning against a real clamd on loopback, with a local one-line signature database. */
const available = clamdAvailable();
let clamd: RunningClamd;
let hub: Hub;
let base: string;
let blobs: FsBlobStore;
let scanner: Scanner;
const root = mkdtempSync(join(tmpdir(), 'maru-scan-'));
const tempDir = join(root, 'tmp');

const blobCount = async () => {
  let n = 0;
  for await (const _ of blobs.list()) n++;
  return n;
};

beforeAll(async () => {
  if (!available) return;
  clamd = await startClamd();
  scanner = new ClamdScanner(clamd.url, { timeoutMs: 10_000 });
  blobs = await new FsBlobStore(join(root, 'blobs')).init();
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: root, shutdownGraceMs: 500, uploads: { tempDir, maxFileBytes: 16 << 20 } });
  hub.route({
    method: 'POST',
    path: '/test/scanned',
    body: { schema: z.object({}), multipart: { files: ['a', 'b'] } },
    handler: async (ctx) => {
      const kinds = [];
      for (const f of ctx.files!) kinds.push((await inspectUpload(f, scanner)).kind);
      for (const f of ctx.files!) await blobs.putFile(f.tempPath);
      return Reply.json({ kinds }, 201);
    },
  });
  base = `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}`;
}, 60_000);

afterAll(async () => {
  await hub?.stop();
  await clamd?.stop();
  rmSync(root, { recursive: true, force: true });
});

const send = async (parts: Part[]) => {
  const { body, contentType } = multipart(parts);
  const res = await fetch(`${base}/test/scanned`, { method: 'POST', headers: { 'content-type': contentType }, body: new Uint8Array(body) });
  return { status: res.status, body: (await res.json()) as any };
};

describe.runIf(available)('clamd INSTREAM scanning', () => {
  it('reports a clean file clean and the EICAR test file by its signature', async () => {
    const clean = join(root, 'clean.pdf');
    writeFileSync(clean, makePdf(3 << 20)); // several INSTREAM chunks
    expect(await scanner.scan(clean)).toEqual({ clean: true });
    const bad = join(root, 'eicar.com');
    writeFileSync(bad, EICAR);
    const v = await scanner.scan(bad);
    expect(v.clean).toBe(false);
    expect(!v.clean && v.signature).toMatch(/^Eicar-Test-Signature/);
  });

  it('stores clean uploads, and refuses an infected one with 422 naming the signature, storing nothing', async () => {
    const ok = await send([
      { name: 'a', filename: 'a.pdf', data: makePdf() },
      { name: 'b', filename: 'b.hwp', data: makeHwp() },
    ]);
    expect(ok.status).toBe(201);
    expect(ok.body.kinds).toEqual(['pdf', 'hwp']);
    const before = await blobCount();
    const r = await send([
      { name: 'a', filename: 'a.pdf', data: makePdf() },
      { name: 'b', filename: 'resume.pdf', data: EICAR },
    ]);
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('infected');
    expect(r.body.error.details).toMatchObject({ field: 'b', filename: 'resume.pdf' });
    expect(r.body.error.details.signature).toMatch(/^Eicar-Test-Signature/);
    expect(await blobCount()).toBe(before);
    expect(readdirSync(tempDir)).toEqual([]);
  });

  it('bounds the scans of one process: past the waiting room, 503 scanner_busy at once', async () => {
    const narrow = new ClamdScanner(clamd.url, { maxConcurrent: 1, maxWaiting: 1 });
    const path = join(root, 'narrow.pdf');
    writeFileSync(path, makePdf(1 << 20));
    const results = await Promise.allSettled([narrow.scan(path), narrow.scan(path), narrow.scan(path)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ status: 503, code: 'scanner_busy' });
  });

  it('answers 503 naming the cause when clamd refuses a stream longer than its StreamMaxLength', async () => {
    const small = await startClamd({ streamMaxLength: '1M' });
    try {
      const path = join(root, 'long.pdf');
      writeFileSync(path, makePdf(3 << 20));
      const err = await new ClamdScanner(small.url).scan(path).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ status: 503, code: 'scanner_unavailable' });
      expect((err as AppError).details).toMatchObject({ reason: expect.stringMatching(/size limit|StreamMaxLength/) });
    } finally {
      await small.stop();
    }
  });

  it('answers 503 and stores nothing when clamd is down', async () => {
    const down = new ClamdScanner(`tcp://127.0.0.1:${clamd.port}`, { timeoutMs: 5000 });
    await clamd.stop();
    const clean = join(root, 'clean2.pdf');
    writeFileSync(clean, makePdf());
    const err = await down.scan(clean).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect([(err as AppError).status, (err as AppError).code]).toEqual([503, 'scanner_unavailable']);
    const before = await blobCount();
    const r = await send([{ name: 'a', filename: 'a.pdf', data: makePdf() }]);
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe('scanner_unavailable');
    expect(await blobCount()).toBe(before);
    expect(readdirSync(tempDir)).toEqual([]);
  });
});
