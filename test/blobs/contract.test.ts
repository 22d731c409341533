import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOB_KEY, FsBlobStore, S3BlobStore, sweepOrphanBlobs, type BlobStore } from '../../src/blobs/index.js';
import { AppError } from '../../src/errors.js';
import { startS3, type RunningS3 } from '../support/s3.js';

/** One contract, two adapters: the file system under a temp DATA_DIR, and S3 against a real s3rver on loopback. */
const scratch = mkdtempSync(join(tmpdir(), 'maru-blobs-'));
let s3: RunningS3;
let s3store: S3BlobStore;

beforeAll(async () => {
  s3 = await startS3();
  s3store = new S3BlobStore({ url: s3.url, bucket: s3.bucket, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey });
});
afterAll(async () => {
  s3store?.destroy();
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const adapters: Array<[string, () => Promise<BlobStore>]> = [
  ['file system', () => new FsBlobStore(mkdtempSync(join(scratch, 'fs-'))).init()],
  ['S3 (s3rver)', async () => s3store],
];

let n = 0;
const tempFile = (data: Buffer) => {
  const p = join(scratch, `temp-${n++}`);
  writeFileSync(p, data);
  return p;
};
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe.each(adapters)('BlobStore contract: %s', (_name, open) => {
  let blobs: BlobStore;
  beforeAll(async () => {
    blobs = await open();
  });

  it('puts a temporary file under a new unguessable key, consuming it, and gives it back whole', async () => {
    const data = randomBytes(300_000);
    const temp = tempFile(data);
    const a = await blobs.putFile(temp, { contentType: 'application/pdf' });
    expect(a.size).toBe(data.length);
    expect(a.key).toMatch(BLOB_KEY);
    expect(existsSync(temp)).toBe(false);
    const got = await blobs.get(a.key);
    expect(got.size).toBe(data.length);
    expect(sha(await buffer(got.stream))).toBe(sha(data));
    const b = await blobs.putFile(tempFile(data));
    expect(b.key).not.toBe(a.key);
  });

  it('puts a stream', async () => {
    const data = randomBytes(70_000);
    const { key, size } = await blobs.put(Readable.from([data.subarray(0, 1000), data.subarray(1000)]));
    expect(size).toBe(data.length);
    expect((await buffer((await blobs.get(key)).stream)).equals(data)).toBe(true);
  });

  it('answers 404 blob_not_found for a missing or malformed key, without touching storage for the latter', async () => {
    for (const key of ['AAAAAAAAAAAAAAAAAAAAAA', '../../etc/passwd', '']) {
      const err = await blobs.get(key).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AppError);
      expect([(err as AppError).status, (err as AppError).code]).toEqual([404, 'blob_not_found']);
    }
  });

  it('deletes (idempotently) and lists what is stored', async () => {
    const { key } = await blobs.putFile(tempFile(Buffer.from('to be deleted')));
    let listed = [];
    for await (const b of blobs.list()) listed.push(b);
    const entry = listed.find((b) => b.key === key);
    expect(entry?.size).toBe(13);
    expect(entry!.modifiedAt).toBeGreaterThan(Date.now() - 600_000);
    await blobs.delete(key);
    await blobs.delete(key);
    listed = [];
    for await (const b of blobs.list()) listed.push(b.key);
    expect(listed).not.toContain(key);
    await expect(blobs.get(key)).rejects.toMatchObject({ status: 404 });
  });

  it('sweeps orphans: unreferenced blobs past the grace period only', async () => {
    const kept = await blobs.putFile(tempFile(Buffer.from('referenced')));
    const orphan = await blobs.putFile(tempFile(Buffer.from('orphan')));
    const referenced = new Set<string>();
    for await (const b of blobs.list()) if (b.key !== orphan.key) referenced.add(b.key);
    // within the grace period nothing goes (an upload may be between its blob and its record)
    expect(await sweepOrphanBlobs(blobs, async (k) => referenced.has(k), { graceMs: 3_600_000, now: Date.now() })).toEqual([]);
    const removed = await sweepOrphanBlobs(blobs, async (k) => referenced.has(k), { graceMs: 0, now: Date.now() + 10_000 });
    expect(removed).toEqual([orphan.key]);
    expect((await blobs.get(kept.key)).size).toBe(10);
  });
});

describe('S3 adapter failures', () => {
  it('answers 503 storage_unavailable when S3 does not answer, and keeps the temporary file', async () => {
    const dead = new S3BlobStore({ url: 'http://127.0.0.1:9', bucket: 'none', accessKeyId: 'x', secretAccessKey: 'y' });
    try {
      const temp = tempFile(Buffer.from('kept for a retry'));
      await expect(dead.putFile(temp)).rejects.toMatchObject({ status: 503, code: 'storage_unavailable' });
      expect(existsSync(temp)).toBe(true);
      await expect(dead.get('AAAAAAAAAAAAAAAAAAAAAA')).rejects.toMatchObject({ status: 503, code: 'storage_unavailable' });
    } finally {
      dead.destroy();
    }
  });
});
