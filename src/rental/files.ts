/**
 * What the rental service takes from the upload pipeline (src/hub/multipart.ts, src/uploads):
 * files whose type is decided by content, scanned, and already stored in the BlobStore
 * (`putFile`: durable under a new unguessable key). The record that names them is written after;
 * when it is not, the service deletes the blobs, so a request that fails half-way leaves nothing
 * behind. A crash between the two leaves an unreferenced blob, which the orphan sweep removes.
 */

/** A validated, scanned, stored file. */
export interface StoredFile {
  /** The form field: bizCard, uniqueNumber or internalResolution. */
  field: string;
  /** The client's file name (no path), as shown to people. */
  filename: string;
  size: number;
  /** Decided from the content, never from the name or the client's Content-Type. */
  mediaType: string;
  /** The BlobStore key. */
  blobKey: string;
}

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
