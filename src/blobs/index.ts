import { join } from 'node:path';
import type { Config } from '../config.js';
import { FsBlobStore } from './fs.js';
import type { BlobStore } from './port.js';
import { S3BlobStore } from './s3.js';

export type { BlobInfo, BlobPutOptions, BlobStore } from './port.js';
export { BLOB_KEY } from './port.js';
export { FsBlobStore } from './fs.js';
export { S3BlobStore } from './s3.js';
export { sweepOrphanBlobs } from './sweep.js';

/**
 * The configured blob store: S3 when S3_URL is set, else files under DATA_DIR/blobs. `area` keeps a
 * service's blobs apart from the others' (DATA_DIR/<area>, or the key prefix `<area>/` in the
 * bucket), so each service's orphan sweep sees only its own.
 */
export async function openBlobStore(config: Config, area = 'blobs'): Promise<BlobStore> {
  if (config.S3_URL) {
    return new S3BlobStore({
      url: config.S3_URL,
      bucket: config.S3_BUCKET,
      region: config.S3_REGION,
      accessKeyId: config.S3_ACCESS_KEY_ID,
      secretAccessKey: config.S3_SECRET_ACCESS_KEY,
      prefix: `${area}/`,
    });
  }
  return new FsBlobStore(join(config.DATA_DIR, area)).init();
}

/** The hub's temporary upload directory: next to the blobs, so a file system commit is one rename. */
export const uploadTempDir = (config: Config) => join(config.DATA_DIR, 'tmp', 'uploads');
