import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openBlobStore, S3BlobStore, uploadTempDir } from '../../src/blobs/index.js';
import { loadConfig } from '../../src/config.js';
import { parseClamdUrl } from '../../src/uploads/index.js';

const dir = mkdtempSync(join(tmpdir(), 'maru-blobconf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('upload configuration', () => {
  it('defaults: 20 MiB per file, blobs under DATA_DIR, temporary files next to them, no scanner', async () => {
    const config = loadConfig({ DATA_DIR: dir });
    expect(config.UPLOAD_MAX_BYTES).toBe(20 * 1024 * 1024);
    expect(config.CLAMD_URL).toBeUndefined();
    const blobs = await openBlobStore(config);
    expect(blobs.kind).toBe('fs');
    expect(existsSync(join(dir, 'blobs'))).toBe(true);
    expect(uploadTempDir(config)).toBe(join(dir, 'tmp', 'uploads'));
  });

  it('S3_URL selects the S3 adapter', async () => {
    const blobs = await openBlobStore(loadConfig({ DATA_DIR: dir, S3_URL: 'http://127.0.0.1:4569', S3_BUCKET: 'uploads' }));
    expect(blobs.kind).toBe('s3');
    (blobs as S3BlobStore).destroy();
  });

  it('refuses a CLAMD_URL that is not tcp://host:port', () => {
    expect(() => loadConfig({ CLAMD_URL: 'http://127.0.0.1:3310' })).toThrow(/CLAMD_URL/);
    expect(() => loadConfig({ CLAMD_URL: 'tcp://127.0.0.1' })).toThrow(/CLAMD_URL/);
    expect(loadConfig({ CLAMD_URL: 'tcp://127.0.0.1:3310' }).CLAMD_URL).toBe('tcp://127.0.0.1:3310');
    expect(parseClamdUrl('tcp://[::1]:3310')).toEqual({ host: '::1', port: 3310 });
  });
});
