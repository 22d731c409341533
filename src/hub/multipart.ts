import { createWriteStream, type WriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import busboy from 'busboy';
import { AppError } from '../errors.js';
import { requestScoped } from './request-scoped.js';
import { boundaryOf, PartHeaderCheck } from './part-headers.js';
import { newTempPath } from './upload-dir.js';
import type { UploadedFile, UploadKeeper } from './upload-files.js';
import type { HttpResponse } from './uws.js';

export { prepareUploadDir, sweepTempUploads } from './upload-dir.js';

/**
 * Streaming multipart/form-data for hub routes. A route opts in with `body: { schema, multipart }`:
 * the uWS body is fed to busboy chunk by chunk as it arrives (each chunk copied, since uWS reuses its
 * memory; the response paused while busboy or the disk is behind), every file part is written to a
 * temporary file, and nothing is ever held whole in memory.
 *
 * The handler then sees the text fields validated by the route's schema as `ctx.body` and the files
 * as `ctx.files`. A file the handler wants to keep must be moved out of its `tempPath` (BlobStore
 * `putFile` does that) before the handler returns: the hub deletes every temporary file of the
 * request once the handler has answered or failed, so a failing request leaves nothing behind.
 */

/** The route option: which parts a multipart request may carry, and its bounds. */
export interface MultipartOptions {
  /** File fields the route accepts, each at most once. Another or a repeated file field is 400. */
  files: readonly string[];
  /** Text fields the route accepts; another name is 400. Omitted: any name (the schema still validates). */
  fields?: readonly string[];
  /** Largest file in bytes; larger is 413 `file_too_large`. Default the hub's `uploads.maxFileBytes` (UPLOAD_MAX_BYTES). */
  maxFileBytes?: number;
  /** Largest whole request in bytes; larger is 413 `payload_too_large`. Default files x maxFileBytes + 1 MiB. */
  maxRequestBytes?: number;
  /** Most text fields; more is 400 `too_many_fields`. Default 32. */
  maxFields?: number;
  /** Largest text field value in bytes; larger is 413 `field_too_large`. Default 16 KiB. */
  maxFieldBytes?: number;
  /**
   * What becomes of the files before the handler runs (src/hub/keep.ts): each is inspected, then
   * all are stored, and the handler gets them as `ctx.stored` (stored references, no temporary
   * files). Omitted: the handler gets the temporary files as `ctx.files`.
   */
  keep?: UploadKeeper;
}

/** Hub-wide upload settings (HubOptions.uploads). */
export interface UploadSettings {
  /** Directory of temporary upload files; put it on the file system of the blob store so moving is a rename. */
  tempDir: string;
  /** Default per-file limit (UPLOAD_MAX_BYTES). */
  maxFileBytes: number;
}

export interface MultipartResult {
  /** Text fields by name (a null-prototype object). */
  fields: Record<string, string>;
  files: UploadedFile[];
}

interface AbortHook {
  aborted: boolean;
  onAbort?: () => void;
}

const MiB = 1 << 20;

/** Refuses file names that carry a path, control or bidi-override characters (`../../x`, `C:\x`, NUL); returns the name in NFC. */
export function checkFilename(name: string): string {
  const bad =
    name.length === 0 ||
    Buffer.byteLength(name) > 255 ||
    /[/\\]/.test(name) ||
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f]/.test(name) ||
    // bidirectional overrides make "gpj.exe" look like "exe.jpg" in a reviewer's list
    /[\u202a-\u202e\u2066-\u2069]/.test(name) ||
    name === '.' ||
    name === '..' ||
    name.trim() !== name;
  if (bad) {
    throw new AppError('invalid', 'invalid_filename', 'a file name may not contain a path, control characters or surrounding spaces, and is at most 255 bytes', {
      filename: name.slice(0, 255),
    });
  }
  // macOS sends Korean names decomposed (NFD): keep them composed, as every other client shows them
  return name.normalize('NFC');
}

/**
 * Streams one multipart request to temporary files. Throws synchronously (413) when the declared
 * length is already over the limit. `done` settles only once the request body has been read to its
 * end (or the client went away), so an error answer never races the client's upload; a body over
 * the request limit is the exception: it is refused at once.
 */
export class MultipartReader {
  readonly done: Promise<MultipartResult>;
  private readonly files: UploadedFile[] = [];
  private readonly writers = new Set<WriteStream>();
  private readonly fields: Record<string, string> = Object.create(null);
  private readonly seenFiles = new Set<string>();
  private error: AppError | undefined;
  private inputEnded = false;
  private parserClosed = false;
  private paused = false;
  private queue: Array<{ chunk: Buffer; isLast: boolean }> | undefined;
  private resolve!: (r: MultipartResult) => void;
  private reject!: (e: AppError) => void;
  private readonly bb: busboy.Busboy;
  private readonly headerCheck: PartHeaderCheck;
  private readonly maxFileBytes: number;

  constructor(
    private readonly res: HttpResponse,
    headers: Record<string, string>,
    private readonly opts: MultipartOptions,
    private readonly settings: UploadSettings,
    private readonly pending: AbortHook,
    hold = false,
  ) {
    this.maxFileBytes = opts.maxFileBytes ?? settings.maxFileBytes;
    const maxRequest = opts.maxRequestBytes ?? opts.files.length * this.maxFileBytes + MiB;
    const declared = headers['content-length'];
    if (declared !== undefined && Number(declared) > maxRequest) {
      throw new AppError('too_large', 'payload_too_large', `the request is larger than ${maxRequest} bytes`, { limit: maxRequest });
    }
    const maxFields = opts.maxFields ?? 32;
    try {
      this.bb = busboy({
        headers: { 'content-type': headers['content-type'] },
        preservePath: true,
        defParamCharset: 'utf8',
        limits: {
          // busboy reports a part as over its limit once it *reaches* the limit: one byte more, so a
          // file or field of exactly the limit is taken and only a larger one is refused
          fileSize: this.maxFileBytes + 1,
          // one more than accepted, so a fourth file is named (unexpected_file / duplicate_file) before the count refuses it
          files: opts.files.length + 1,
          fields: maxFields,
          parts: opts.files.length + 1 + maxFields,
          fieldSize: (opts.maxFieldBytes ?? 16 * 1024) + 1,
          // (busboy 1.6 reads neither fieldNameSize nor headerPairs for multipart bodies: a part's
          // headers are bounded by its own 16 KiB, see hub/part-headers.ts)
        },
      });
    } catch {
      throw new AppError('invalid', 'invalid_multipart', 'the multipart content-type needs a boundary');
    }
    // busboy took the content type, so it holds `; boundary=` and a value: boundaryOf finds one too
    this.headerCheck = new PartHeaderCheck(boundaryOf(headers['content-type'])!);
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    requestScoped(this.done); // observed by the hub; never an unhandled rejection
    this.listen();

    pending.onAbort = () => {
      this.inputEnded = true;
      this.fail(new AppError('invalid', 'aborted', 'the client went away'));
    };
    let received = 0;
    if (hold) {
      // nothing is parsed or written before release(): chunks uWS still delivers wait in memory
      this.queue = [];
      res.pause();
    }
    res.onData((chunk, isLast) => {
      if (this.inputEnded) return;
      received += chunk.byteLength;
      if (received > maxRequest) {
        // refused at once: the rest of the body is not waited for
        this.inputEnded = true;
        this.fail(new AppError('too_large', 'payload_too_large', `the request is larger than ${maxRequest} bytes`, { limit: maxRequest }));
        return;
      }
      // uWS reuses the chunk's memory once this callback returns: copy it
      const copy = this.error ? undefined : Buffer.from(chunk.slice(0));
      if (this.queue && copy) this.queue.push({ chunk: copy, isLast });
      else this.feed(copy, isLast);
    });
  }

  /**
   * Routes with a credential: the reader starts held (the response paused, nothing written), and the
   * hub releases it once the credential is checked, so an unauthenticated upload never reaches disk.
   */
  release(): void {
    const queued = this.queue;
    if (!queued) return;
    this.queue = undefined;
    for (const { chunk, isLast } of queued) this.feed(chunk, isLast);
    // resumed even when the whole body is in: a paused socket would never read its next request
    if (!this.paused) this.resumeSocket();
  }

  private feed(chunk: Buffer | undefined, isLast: boolean): void {
    if (chunk && !this.error) {
      // a part the parser would skip without a word is refused first (hub/part-headers.ts)
      try {
        this.headerCheck.push(chunk);
      } catch (err) {
        this.fail(err as AppError);
      }
    }
    if (chunk && !this.error) {
      let ok = true;
      try {
        ok = this.bb.write(chunk);
      } catch (err) {
        this.fail(new AppError('invalid', 'invalid_multipart', `the multipart body is malformed: ${(err as Error).message}`));
      }
      if (!ok && !this.error && !this.paused && !isLast) {
        this.paused = true;
        this.res.pause();
        this.bb.once('drain', () => this.resumeInput());
      }
    }
    if (isLast) {
      this.inputEnded = true;
      // end() never throws: a body that ends early is reported by the parser's 'error' event
      if (!this.error) this.bb.end();
      this.trySettle();
    }
  }

  /**
   * Stops reading (when not yet settled), waits for the temporary files to be closed, and deletes
   * every one that is still there. Safe to call more than once. With `drain`, first waits until the
   * rest of the body has been read and discarded, so an error answer reaches a client still sending.
   */
  async dispose(drain = false): Promise<void> {
    this.fail(new AppError('invalid', 'request_failed', 'the request failed before its body was read'));
    if (drain) await this.done.catch(() => undefined);
    else await this.writersClosed();
    await Promise.all(this.files.map((f) => unlink(f.tempPath).catch(() => undefined)));
  }

  private resumeInput(): void {
    if (!this.paused) return;
    this.paused = false;
    this.resumeSocket();
  }

  private resumeSocket(): void {
    if (this.pending.aborted) return;
    try {
      this.res.resume();
    } catch {
      // the response is already gone
    }
  }

  private listen(): void {
    const bb = this.bb;
    bb.on('file', (name, stream, info) => {
      stream.on('error', () => undefined); // a truncated body destroys the part stream; reported by bb
      if (this.error) return void stream.resume();
      try {
        if (!this.opts.files.includes(name)) {
          throw new AppError('invalid', 'unexpected_file', `file field ${JSON.stringify(name)} is not accepted`, { field: name, accepted: this.opts.files });
        }
        if (this.seenFiles.has(name)) throw new AppError('invalid', 'duplicate_file', `file field ${name} was sent twice`, { field: name });
        this.seenFiles.add(name);
        if (info.filename === undefined) {
          // a file input left empty: browsers still send the part, with filename="" and no bytes
          // (busboy gives an empty file name as none)
          return void stream.resume();
        }
        info.filename = checkFilename(info.filename);
      } catch (err) {
        stream.resume();
        return this.fail(err as AppError);
      }
      const file: UploadedFile = {
        field: name,
        filename: info.filename,
        size: 0,
        mediaType: info.mimeType,
        tempPath: newTempPath(this.settings.tempDir),
      };
      this.files.push(file);
      const out = createWriteStream(file.tempPath, { flags: 'wx', mode: 0o600 });
      this.writers.add(out);
      out.on('error', (err) => {
        this.fail(new AppError('unavailable', 'storage_unavailable', 'the upload could not be written', { reason: (err as NodeJS.ErrnoException).code }));
      });
      out.on('close', () => {
        this.writers.delete(out);
        this.trySettle();
      });
      stream.on('data', (c: Buffer) => {
        file.size += c.length;
      });
      stream.on('limit', () => {
        this.fail(new AppError('too_large', 'file_too_large', `${name} is larger than ${this.maxFileBytes} bytes`, { field: name, limit: this.maxFileBytes }));
      });
      stream.pipe(out);
    });
    bb.on('field', (name, value, info) => {
      if (this.error) return;
      // a part with no name= (busboy passes it on as a field named undefined)
      if ((name as string | undefined) === undefined) return this.fail(new AppError('invalid', 'invalid_field', 'a part has no name'));
      if (this.opts.files.includes(name)) {
        return this.fail(new AppError('invalid', 'invalid_file', `${name} must be sent as a file`, { field: name }));
      }
      if (this.opts.fields && !this.opts.fields.includes(name)) {
        return this.fail(new AppError('invalid', 'unexpected_field', `field ${JSON.stringify(name.slice(0, 100))} is not accepted`, { field: name.slice(0, 100), accepted: this.opts.fields }));
      }
      if (info.valueTruncated) return this.fail(new AppError('too_large', 'field_too_large', `field ${name} is too long`, { field: name }));
      if (name in this.fields) return this.fail(new AppError('invalid', 'duplicate_field', `field ${name} was sent twice`, { field: name }));
      this.fields[name] = value;
    });
    // no 'filesLimit' handler: the file after the accepted ones is already refused by its name
    // (unexpected_file or duplicate_file), and busboy only reports the one after that
    bb.on('fieldsLimit', () => this.fail(new AppError('invalid', 'too_many_fields', 'too many fields')));
    bb.on('partsLimit', () => this.fail(new AppError('invalid', 'too_many_parts', 'too many parts')));
    bb.on('error', (err: Error) => {
      const truncated = /unexpected end/i.test(err.message);
      this.fail(
        truncated
          ? new AppError('invalid', 'truncated_body', 'the multipart body ended before its closing boundary')
          : new AppError('invalid', 'invalid_multipart', `the multipart body is malformed: ${err.message}`),
      );
    });
    bb.on('close', () => {
      this.parserClosed = true;
      this.trySettle();
    });
  }

  /** The first refusal wins; a promise settles once, so a call after `done` settled changes nothing. */
  private fail(err: AppError): void {
    if (!this.error) {
      this.error = err;
      // stop writing files: close them now (they are deleted by dispose)
      for (const w of this.writers) w.destroy();
      // keep reading the rest of the body (discarded) so the answer reaches the client
      if (this.queue) {
        if (this.queue.some((q) => q.isLast)) this.inputEnded = true;
        this.queue = undefined;
        // (never paused while held: nothing is parsed before release)
        this.resumeSocket();
      }
      this.resumeInput();
    }
    // also after a refusal: the client gone or the body over its limit ends the input that it waited for
    this.trySettle();
  }

  private trySettle(): void {
    if (this.error) {
      if (!this.inputEnded || this.writers.size > 0) return;
      this.reject(this.error);
      return;
    }
    if (!this.parserClosed || !this.inputEnded || this.writers.size > 0) return;
    this.resolve({ fields: this.fields, files: this.files });
  }

  private writersClosed(): Promise<void> {
    return Promise.all(
      [...this.writers].map((w) => new Promise<void>((r) => (w.closed ? r() : w.once('close', () => r())))),
    ).then(() => undefined);
  }
}
