import type { Readable } from 'node:stream';

/** A stored blob as listed (for the orphan sweep). */
export interface BlobInfo {
  key: string;
  size: number;
  /** Epoch ms of the last write. */
  modifiedAt: number;
}

export interface BlobPutOptions {
  /** Stored with the blob where the backend can (S3 Content-Type); the record keeps its own copy. */
  contentType?: string;
}

/**
 * Where uploaded files live. Keys are made by the store: unguessable (128 random bits, base64url),
 * so a key is never derived from a client's file name. Two adapters: the file system under DATA_DIR
 * (default; fsync + atomic rename) and S3 (S3_URL/S3_BUCKET) for hub processes on several machines.
 *
 * Commit order for an upload: `putFile` (the blob is durable under its new key), then the record
 * that names the key; when the record fails, `delete(key)`. A crash between the two leaves an
 * unreferenced blob, which `sweepOrphanBlobs` removes after a grace period; never a record whose
 * file is missing.
 */
export interface BlobStore {
  readonly kind: 'fs' | 's3';
  /** Stores a temporary file and consumes it (moved or deleted). Returns the new key and size. */
  putFile(tempPath: string, opts?: BlobPutOptions): Promise<{ key: string; size: number }>;
  /** Stores a stream (spooled to a temporary file first where the backend needs a length). */
  put(body: Readable, opts?: BlobPutOptions): Promise<{ key: string; size: number }>;
  /** The blob as a stream with its size; AppError 404 `blob_not_found` when there is none. */
  get(key: string): Promise<{ stream: Readable; size: number }>;
  /** Removes a blob; removing a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** Every stored blob, in no particular order. */
  list(): AsyncIterable<BlobInfo>;
}

/** The shape of a key (22 base64url characters = 128 bits); anything else is refused before any I/O. */
export const BLOB_KEY = /^[A-Za-z0-9_-]{22}$/;
