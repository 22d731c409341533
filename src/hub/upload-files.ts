/**
 * What a route's handler receives of a multipart request's files (src/hub/multipart.ts streams
 * them, src/hub/keep.ts keeps them when the route declares it), and the keeper a route declares.
 */

/** One received file, on disk in the hub's temporary upload directory. */
export interface UploadedFile {
  /** The form field it came in (one of the route's `multipart.files`). */
  field: string;
  /** The client's file name: checked (no path, no control characters, at most 255 bytes), never trusted for the type. */
  filename: string;
  /** Bytes received. */
  size: number;
  /** What the client declared; informative only: decide the type by content (`sniff(tempPath)`). */
  mediaType: string;
  /** Absolute path of the temporary file; deleted by the hub after the handler unless moved away. */
  tempPath: string;
}

/**
 * The service's part of an upload, which the hub runs for a route that declares `multipart.keep`:
 * after the credential, the fields, the guards and the Idempotency-Key, before the handler.
 */
export interface UploadKeeper {
  /** Decides the file's type by its content (and scans it); throws the refusal, naming the field. */
  inspect(file: UploadedFile): Promise<{ mediaType: string }>;
  /** Stores an inspected file durably, consuming its temporary file; its new key and size. */
  put(file: UploadedFile, mediaType: string): Promise<{ key: string; size: number }>;
  /** Removes a stored file (removing a missing one is no error). */
  discard(key: string): Promise<void>;
}

/**
 * A file the hub inspected and stored for the handler. From the handler on it is the service's: the
 * service records it, or discards it when its record is not written; one no record names (a crash in
 * between) is the orphan sweep's.
 */
export interface StoredUpload {
  /** The form field it came in. */
  field: string;
  /** The client's file name (checked: no path, no control characters), as shown to people. */
  filename: string;
  size: number;
  /** Decided from the content, never from the name or the client's Content-Type. */
  mediaType: string;
  /** The key it is stored under. */
  blobKey: string;
}
