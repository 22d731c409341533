import type { Readable } from 'node:stream';

/**
 * What the rental service needs from the upload pipeline and the blob storage. The pipeline
 * (multipart reader, content sniffing, virus scan) hands over files that are validated, scanned
 * and written under a temporary (staged) key; the service commits them to their final key only
 * after the record is written, and discards them when the request fails, so a request that fails
 * half-way leaves nothing behind.
 */

/** A validated, scanned, stored file. `blobKey` is its staged key until the record commits. */
export interface StoredFile {
  /** The form field: bizCard, uniqueNumber or internalResolution. */
  field: string;
  /** The client's file name (no path), as shown to people. */
  filename: string;
  size: number;
  /** Decided from the content, never from the name or the client's Content-Type. */
  mediaType: string;
  blobKey: string;
}

export interface BlobInfo {
  size: number;
}

/** The blob operations the rental service uses. */
export interface RentalBlobs {
  /** Moves a staged blob to its final key (durably: the final blob survives kill -9 afterwards). */
  commit(stagedKey: string, finalKey: string): Promise<void>;
  /** Removes a blob (staged or final); a missing one is fine. */
  remove(key: string): Promise<void>;
  /** Reads a final blob; undefined when it does not exist. */
  open(key: string): Promise<{ stream: Readable; info: BlobInfo } | undefined>;
}

/** File name extension for a detected media type (stored names carry it). */
export const EXTENSIONS: Record<string, string> = {
  'application/x-hwp': 'hwp',
  'application/hwp+zip': 'hwpx',
  'application/pdf': 'pdf',
  'image/jpeg': 'jpg',
  'image/png': 'png',
};

/** The final blob key of a stored document: `rental/<subId>/<stored name>`. */
export const finalBlobKey = (subId: string, stored: string) => `rental/${subId}/${stored}`;

/** A stored name is unguessable: the docType, 16 random hex characters and the type's extension. */
export const STORED_NAME_RE = /^(bizCard|uniqueNumber|internalResolution)-[0-9a-f]{16}\.(hwp|hwpx|pdf|jpg|png)$/;
