import type { BlobStore } from '../blobs/index.js';
import { AppError } from '../errors.js';
import type { UploadKeeper } from '../hub/declare.js';
import { assertClean, type Scanner } from './scan.js';
import { sniff, type Sniffed } from './sniff.js';

export { sniff, MEDIA_TYPES, HWP_FLAGS, type DocumentKind, type Sniffed } from './sniff.js';
export { ClamdScanner, assertClean, parseClamdUrl, type Scanner, type ScanVerdict } from './scan.js';

/** An uploaded file as the transport hands it over: in a temporary file, with its form field and name. */
export interface UploadPart {
  field: string;
  filename: string;
  tempPath: string;
}

/**
 * The checks every uploaded file passes before its record commits: when a scanner is configured,
 * the virus scan first (422 `infected` naming the signature, 503 `scanner_unavailable`), so anything
 * malicious is reported as such whatever its type; then the type by content (415, or 422 for an
 * encrypted HWP). Errors name the form field in `details.field`.
 */
export async function inspectUpload(file: UploadPart, scanner?: Scanner): Promise<Sniffed> {
  try {
    if (scanner) assertClean(await scanner.scan(file.tempPath), file.filename);
    return await sniff(file.tempPath, file.filename);
  } catch (err) {
    if (err instanceof AppError && err.status < 500 && typeof err.details === 'object') {
      throw new AppError(err.kind, err.code, `${file.field}: ${err.message}`, { field: file.field, ...(err.details as object) });
    }
    throw err;
  }
}

/**
 * The keeper a route declares (`multipart.keep`) to have the hub inspect every file (`inspectUpload`)
 * and store it in the BlobStore before its handler runs.
 */
export function blobKeeper(blobs: Pick<BlobStore, 'putFile' | 'delete'>, scanner?: Scanner): UploadKeeper {
  return {
    inspect: (file) => inspectUpload(file, scanner),
    put: (file, mediaType) => blobs.putFile(file.tempPath, { contentType: mediaType }),
    discard: (key) => blobs.delete(key),
  };
}
