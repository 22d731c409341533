import type { StoredUpload } from '../hub/declare.js';

/**
 * What the rental service takes from the upload pipeline (src/hub/keep.ts with src/uploads'
 * `blobKeeper`): files whose type is decided by content, scanned, and already stored in the
 * BlobStore (`putFile`: durable under a new unguessable key). From there they are the service's:
 * the record that names them is written after, and when it is not, the service deletes the blobs,
 * so a request that fails half-way leaves nothing behind. A crash between the two leaves an
 * unreferenced blob, which the orphan sweep removes.
 */

/** A validated, scanned, stored file, as the hub hands it to the handler (`multipart.keep`). */
export type StoredFile = StoredUpload;

/** File name extension for a detected media type (served names carry it). */
export const EXTENSIONS: Record<string, string> = {
  'application/x-hwp': 'hwp',
  'application/hwp+zip': 'hwpx',
  'application/pdf': 'pdf',
  'image/jpeg': 'jpg',
  'image/png': 'png',
};

/** The served name of a stored document: its blob key and the type's extension. */
export const STORED_NAME_RE = /^([A-Za-z0-9_-]{22})\.(hwp|hwpx|pdf|jpg|png)$/;

/** The blob key in a document's url (`/api/uploads/<subId>/<key>.<ext>`). */
export function blobKeyOf(url: string): string {
  return STORED_NAME_RE.exec(url.slice(url.lastIndexOf('/') + 1))?.[1] ?? '';
}
