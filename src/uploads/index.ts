import { AppError } from '../errors.js';
import type { UploadedFile } from '../hub/multipart.js';
import { assertClean, type Scanner } from './scan.js';
import { sniff, type Sniffed } from './sniff.js';

export { sniff, MEDIA_TYPES, HWP_FLAGS, type DocumentKind, type Sniffed } from './sniff.js';
export { ClamdScanner, assertClean, parseClamdUrl, type Scanner, type ScanVerdict } from './scan.js';

/**
 * The checks every uploaded file passes before its record commits: the type by content (415 / 422
 * for an encrypted HWP), then, when a scanner is configured, the virus scan (422 `infected`, 503
 * `scanner_unavailable`). Errors name the form field in `details.field`.
 */
export async function inspectUpload(file: UploadedFile, scanner?: Scanner): Promise<Sniffed> {
  try {
    const sniffed = await sniff(file.tempPath);
    if (scanner) assertClean(await scanner.scan(file.tempPath), file.filename);
    return sniffed;
  } catch (err) {
    if (err instanceof AppError && err.status < 500 && typeof err.details === 'object') {
      throw new AppError(err.status, err.code, `${file.field}: ${err.message}`, { field: file.field, ...(err.details as object) });
    }
    throw err;
  }
}
