import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { AppError } from '../errors.js';
import { blobNotFound, newBlobKey } from './fs.js';
import { BLOB_KEY, type BlobInfo, type BlobPutOptions, type BlobStore } from './port.js';

export interface S3BlobOptions {
  /** Endpoint, e.g. http://127.0.0.1:4569 (S3_URL); path-style addressing is always used. */
  url: string;
  bucket: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Key prefix inside the bucket (default `blobs/`). */
  prefix?: string;
}

/**
 * Blobs as objects of one S3 bucket (any S3-compatible server), for hub processes on several
 * machines. A PUT is atomic on S3's side: an object is visible whole or not at all.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(opts: S3BlobOptions) {
    const config: S3ClientConfig = {
      endpoint: opts.url,
      region: opts.region ?? 'us-east-1',
      forcePathStyle: true,
      // checksums only where S3 requires them: the default streams bodies as aws-chunked with a
      // trailing checksum, which S3-compatible servers (s3rver, older MinIO, Ceph) store verbatim
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    };
    if (opts.accessKeyId && opts.secretAccessKey) {
      config.credentials = { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey };
    }
    this.client = new S3Client(config);
    this.bucket = opts.bucket;
    this.prefix = opts.prefix ?? 'blobs/';
  }

  async putFile(tempPath: string, opts: BlobPutOptions = {}): Promise<{ key: string; size: number }> {
    const key = newBlobKey();
    const { size } = await stat(tempPath);
    await guard(
      this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.prefix + key,
          Body: createReadStream(tempPath),
          ContentLength: size,
          ContentType: opts.contentType ?? 'application/octet-stream',
        }),
      ),
    );
    await unlink(tempPath).catch(() => undefined);
    return { key, size };
  }

  async put(body: Readable, opts: BlobPutOptions = {}): Promise<{ key: string; size: number }> {
    // a PUT needs the length up front: spool the stream to a temporary file first
    const dir = await mkdtemp(join(tmpdir(), 'maru-s3-'));
    try {
      const temp = join(dir, 'body');
      await pipeline(body, createWriteStream(temp, { mode: 0o600 }));
      return await this.putFile(temp, opts);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async get(key: string): Promise<{ stream: Readable; size: number }> {
    if (!BLOB_KEY.test(key)) throw blobNotFound(key);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
      return { stream: out.Body as Readable, size: Number(out.ContentLength ?? 0) };
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) throw blobNotFound(key);
      throw unavailable(err);
    }
  }

  async delete(key: string): Promise<void> {
    if (!BLOB_KEY.test(key)) return;
    await guard(this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + key })));
  }

  async *list(): AsyncIterable<BlobInfo> {
    let token: string | undefined;
    do {
      const page = await guard(
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token })),
      );
      for (const o of page.Contents ?? []) {
        const key = (o.Key ?? '').slice(this.prefix.length);
        if (!BLOB_KEY.test(key)) continue;
        yield { key, size: Number(o.Size ?? 0), modifiedAt: o.LastModified ? o.LastModified.getTime() : 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  destroy(): void {
    this.client.destroy();
  }
}

/** S3 not answering (or refusing) is 503 `storage_unavailable`, never a bare 500. */
async function guard<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    throw unavailable(err);
  }
}

function unavailable(err: unknown): AppError {
  const e = err as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  return new AppError('unavailable', 'storage_unavailable', 'file storage is not available; try again later', {
    reason: e.name ?? e.code ?? 'unknown',
    status: e.$metadata?.httpStatusCode,
  });
}
