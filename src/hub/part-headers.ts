import { createRequire } from 'node:module';
import { AppError } from '../errors.js';

/**
 * A check of every multipart part's headers, run on the raw body before the parser sees it. The
 * parser (busboy) skips a part whose Content-Disposition does not parse (a file name with a raw
 * `"`) and so the file would be lost without a word; here such a part is refused with 400
 * `invalid_filename` naming its field. Only the bytes right after a boundary delimiter are read as
 * headers (a file's content cannot hold the boundary), so file content is never mistaken for them.
 */

const MAX_HEADER_BLOCK = 16 * 1024;
/** One Content-Disposition value: form-data and parameters, each a token or a quoted string without a raw quote. */
const DISPOSITION = /^form-data(\s*;\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+\*?\s*=\s*("([^"\\]|\\[^\r\n])*"|[^\s;"]+))*\s*;?\s*$/i;
const HEADER_LINE = /^([!-9;-~]+):[ \t]*(.*)$/;

/** busboy's own content-type parser: the check must find the boundary the parser splits on. */
const { parseContentType } = createRequire(import.meta.url)('busboy/lib/utils.js') as {
  parseContentType(value: string): { params: Record<string, string | undefined> } | undefined;
};

/**
 * The boundary of a multipart content-type, or undefined, read by busboy's parser: parameters are
 * tokens or quoted strings (a `; boundary=` inside another parameter's quoted value is that value),
 * and a boundary of any length is the boundary.
 */
export function boundaryOf(contentType: string | undefined): string | undefined {
  return parseContentType(contentType ?? '')?.params.boundary || undefined;
}

export class PartHeaderCheck {
  private readonly delimiter: Buffer;
  /** Bytes not yet examined (a delimiter or a header block may span chunks). */
  private pending: Buffer;
  private inHeaders = false;
  private done = false;

  constructor(boundary: string) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    // the body's first delimiter has no CRLF before it
    this.pending = Buffer.from('\r\n', 'latin1');
  }

  /** Examines the next chunk; throws the 400 of a malformed part header. */
  push(chunk: Buffer): void {
    if (this.done) return;
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    for (;;) {
      if (!this.inHeaders) {
        const at = this.pending.indexOf(this.delimiter);
        if (at < 0) {
          // keep what could be the start of a delimiter
          this.pending = this.pending.subarray(Math.max(0, this.pending.length - this.delimiter.length + 1));
          return;
        }
        this.pending = this.pending.subarray(at + this.delimiter.length);
        this.inHeaders = true;
      }
      const end = this.pending.indexOf('\r\n\r\n');
      if (end < 0) {
        // a header block this long: the parser's own limits answer it
        if (this.pending.length > MAX_HEADER_BLOCK) this.done = true;
        return;
      }
      const block = this.pending.subarray(0, end).toString('latin1');
      this.pending = this.pending.subarray(end + 4);
      this.inHeaders = false;
      // `--` right after the delimiter: the closing one
      if (block.startsWith('--')) {
        this.done = true;
        return;
      }
      check(block.replace(/^[ \t]*\r\n/, ''));
    }
  }
}

function check(block: string): void {
  const lines = block.split('\r\n');
  const disposition = lines.find((l) => /^content-disposition:/i.test(l));
  const field = disposition ? /\bname="([^"\r\n]{0,100})"/i.exec(disposition)?.[1] : undefined;
  const refuse = () => {
    throw new AppError('invalid', 'invalid_filename', `the part${field !== undefined ? ` of field ${JSON.stringify(field)}` : ''} has a malformed header: a file name may not hold a raw quote, CR or LF (encode it, e.g. filename*=UTF-8''...)`, {
      field: field ?? null,
    });
  };
  for (const line of lines) {
    const m = HEADER_LINE.exec(line);
    // a bare CR or LF inside a header splits it: the rest is no header line
    if (!m || /[\r\n]/.test(line)) refuse();
    if (/^content-disposition$/i.test(m![1]!) && !DISPOSITION.test(m![2]!)) refuse();
  }
}
