import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { AppError } from '../../src/errors.js';
import { tempDir } from '../support/process.js';

// Streaming multipart/form-data (src/hub/multipart.ts), driven in process through a stand-in for the
// uWS response: file names are checked (no path, control or bidi characters, no surrounding spaces,
// at most 255 bytes, NFC); a declared or streamed body over the request limit is 413
// payload_too_large (default files x file limit + 1 MiB); files only in the accepted fields, each
// once, at most the file limit (413 file_too_large); text fields by the route's list, once, bounded
// in size and number; a body that ends early is truncated_body; the answer waits for the body's
// end; a held reader writes nothing before release; dispose deletes every temporary file. The
// module is loaded afresh per test. Back-pressure, uWS's reused chunk memory, a client gone
// mid-write and a temporary directory that fails are driven through `uwsRes`, a stand-in that keeps
// uWS's rules (below).
const load = async () => {
  vi.resetModules();
  return { ...(await import('../../src/hub/multipart.js')), AppError: (await import('../../src/errors.js')).AppError };
};

const B = 'rules-boundary';
const CT = `multipart/form-data; boundary=${B}`;
type Part = { name: string; value: string } | { name: string; filename: string; content: string | Buffer; type?: string };
const body = (parts: Part[], close = true) =>
  Buffer.concat([
    ...parts.map((p) =>
      'filename' in p
        ? Buffer.concat([
            Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: ${p.type ?? 'application/octet-stream'}\r\n\r\n`),
            Buffer.isBuffer(p.content) ? p.content : Buffer.from(p.content),
            Buffer.from('\r\n'),
          ])
        : Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`),
    ),
    Buffer.from(close ? `--${B}--\r\n` : ''),
  ]);

function fakeRes() {
  let onData: ((chunk: ArrayBuffer, isLast: boolean) => void) | undefined;
  const log: string[] = [];
  const res = {
    onData: (cb: (chunk: ArrayBuffer, isLast: boolean) => void) => void (onData = cb),
    pause: () => void log.push('pause'),
    resume: () => void log.push('resume'),
  };
  const push = (buf: Buffer, isLast: boolean) => {
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
    onData!(ab, isLast);
  };
  return { res, log, push };
}

/**
 * A stand-in for uWS's response that keeps uWS's rules: a delivered chunk's memory is reused (here
 * overwritten) once onData returns, and nothing is delivered while the response is paused (`send`
 * waits for the resume). `deliverNow` is a chunk uWS had already read when it was paused.
 */
function uwsRes() {
  let onData: ((chunk: ArrayBuffer, isLast: boolean) => void) | undefined;
  const log: string[] = [];
  let paused = false;
  let wake: (() => void) | undefined;
  const res = {
    onData: (cb: (chunk: ArrayBuffer, isLast: boolean) => void) => void (onData = cb),
    pause: () => {
      log.push('pause');
      paused = true;
    },
    resume: () => {
      log.push('resume');
      paused = false;
      wake?.();
    },
  };
  const deliverNow = (buf: Buffer, isLast: boolean) => {
    const ab = new ArrayBuffer(buf.length);
    new Uint8Array(ab).set(buf);
    onData!(ab, isLast);
    new Uint8Array(ab).fill(0x2a);
  };
  const deliver = async (buf: Buffer, isLast: boolean) => {
    while (paused) await new Promise<void>((r) => (wake = r));
    deliverNow(buf, isLast);
  };
  const send = async (buf: Buffer, size: number) => {
    for (let i = 0; i < buf.length; i += size) await deliver(buf.subarray(i, i + size), i + size >= buf.length);
  };
  return { res, log, deliver, deliverNow, send };
}
/** Bytes that differ from one offset to the next (a shifted or overwritten chunk shows). */
const pattern = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + (i >> 8)) & 0xff));
/** The next turn of the event loop: anything settled within the current one has been seen. */
const nextTurn = () => new Promise<void>((r) => setImmediate(r));
const KiB = 1024;

async function read(
  parts: Part[] | Buffer,
  opts: Record<string, unknown> = { files: ['doc'] },
  more: { headers?: Record<string, string>; chunk?: number; maxFileBytes?: number; tempDir?: string } = {},
) {
  const { MultipartReader, AppError } = await load();
  const dir = more.tempDir ?? tempDir('multipart-rules');
  const { res, push, log } = fakeRes();
  const pending = { aborted: false } as { aborted: boolean; onAbort?: () => void };
  const reader = new MultipartReader(res as never, { 'content-type': CT, ...more.headers }, opts as never, { tempDir: dir, maxFileBytes: more.maxFileBytes ?? 1024 }, pending);
  const buf = Buffer.isBuffer(parts) ? parts : body(parts);
  const size = more.chunk ?? buf.length;
  for (let i = 0; i < buf.length; i += size) push(buf.subarray(i, i + size), i + size >= buf.length);
  const result = await reader.done.then(
    (r) => ({ ok: r, err: undefined }),
    (e: unknown) => ({ ok: undefined, err: e as AppError }),
  );
  if (result.err) expect(result.err).toBeInstanceOf(AppError);
  return { ...result, reader, dir, log };
}
const code = (r: { err?: AppError }) => [r.err?.status, r.err?.code];
/** A reader on the uWS stand-in; `abort()` is uWS telling of a client gone. */
async function open(opts: Record<string, unknown> = { files: ['doc'] }, hold = false, dir = tempDir('mp-uws')) {
  const { MultipartReader } = await load();
  const u = uwsRes();
  const pending = { aborted: false } as { aborted: boolean; onAbort?: () => void };
  const reader = new MultipartReader(u.res as never, { 'content-type': CT }, opts as never, { tempDir: dir, maxFileBytes: 1 << 20 }, pending, hold);
  const abort = () => {
    pending.aborted = true;
    pending.onAbort!();
  };
  return { ...u, reader, dir, abort };
}
/** The refusal a reader's `done` rejects with (a test fails when it resolves). */
const refusedWith = (p: Promise<unknown>): Promise<AppError> =>
  p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e as AppError,
  );

describe('file names', () => {
  it('are taken in NFC when they hold no path, control or bidi characters and no surrounding spaces', async () => {
    const { checkFilename } = await load();
    expect(checkFilename('보고서.pdf'.normalize('NFD'))).toBe('보고서.pdf');
    expect(checkFilename('a b.txt')).toBe('a b.txt');
    expect(checkFilename('...')).toBe('...');
    expect(checkFilename('.env')).toBe('.env');
    expect(checkFilename('x'.repeat(255))).toBe('x'.repeat(255));
    expect(checkFilename('가'.repeat(85))).toBe('가'.repeat(85)); // 255 bytes
  });

  it('are refused otherwise, with 400 invalid_filename naming the first 255 characters', async () => {
    const { checkFilename, AppError } = await load();
    const bad = ['', 'x'.repeat(256), '가'.repeat(86), '../x', 'a/b', 'C:\\x', 'a\u0000b', 'a\u001fb', 'a\u007fb', 'a\tb', 'gpj\u202e.exe', 'a\u202ab', 'a\u2066b', 'a\u2069b', '.', '..', ' a', 'a ', '\u3000a'];
    for (const name of bad) {
      let e: unknown;
      try {
        checkFilename(name);
      } catch (err) {
        e = err;
      }
      expect(e, JSON.stringify(name)).toBeInstanceOf(AppError);
      const a = e as AppError;
      expect([a.status, a.code, a.message]).toEqual([400, 'invalid_filename', 'a file name may not contain a path, control characters or surrounding spaces, and is at most 255 bytes']);
      expect(a.details).toEqual({ filename: name.slice(0, 255) });
    }
    for (const ok of ['a\u2065b', 'a\u2029b'.replace('\u2029', '\u2070'), 'a\u202fb'.replace('\u202f', 'x')]) expect(() => checkFilename(ok)).not.toThrow();
  });
});

describe('a request', () => {
  it('gives the text fields and the files on disk, with their sizes and declared types', async () => {
    const r = await read([{ name: 'title', value: '제목' }, { name: 'doc', filename: 'a.pdf', content: '%PDF-1.4 hello', type: 'application/pdf' }], { files: ['doc'] });
    expect(r.err).toBeUndefined();
    expect({ ...r.ok!.fields }).toEqual({ title: '제목' });
    expect(Object.getPrototypeOf(r.ok!.fields)).toBeNull();
    expect(r.ok!.files).toEqual([{ field: 'doc', filename: 'a.pdf', size: 14, mediaType: 'application/pdf', tempPath: expect.stringContaining(r.dir) }]);
    expect(readFileSync(r.ok!.files[0]!.tempPath, 'utf8')).toBe('%PDF-1.4 hello');
    expect(statSync(r.ok!.files[0]!.tempPath).mode & 0o777).toBe(0o600); // only the hub may read it
    await r.reader.dispose();
    expect(existsSync(r.ok!.files[0]!.tempPath)).toBe(false);
  });

  it('splits on the boundary the parser splits on: a long bare one, not a quoted decoy', async () => {
    const parts: Part[] = [{ name: 'title', value: 't' }, { name: 'doc', filename: 'a.pdf', content: '%PDF-1.4 x' }];
    const long = 'L'.repeat(250);
    const withLong = Buffer.from(body(parts).toString('latin1').replaceAll(B, long), 'latin1');
    const a = await read(withLong, { files: ['doc'] }, { headers: { 'content-type': `multipart/form-data; boundary=${long}` } });
    expect(a.err).toBeUndefined();
    expect(a.ok!.files.map((f) => [f.field, f.filename, f.size])).toEqual([['doc', 'a.pdf', 10]]);
    await a.reader.dispose();
    const b = await read(parts, { files: ['doc'] }, { headers: { 'content-type': `multipart/form-data; note="; boundary=fake"; boundary=${B}` } });
    expect(b.err).toBeUndefined();
    expect({ ...b.ok!.fields }).toEqual({ title: 't' });
    await b.reader.dispose();
  });

  it('reads the same whatever the chunking', async () => {
    const parts: Part[] = [{ name: 'a', value: 'x'.repeat(100) }, { name: 'doc', filename: 'b.bin', content: Buffer.alloc(700, 7) }];
    for (const chunk of [1, 7, 64]) {
      const r = await read(parts, { files: ['doc'] }, { chunk });
      expect(r.ok?.files[0]?.size, `chunks of ${chunk}`).toBe(700);
      expect(r.ok?.fields.a).toBe('x'.repeat(100));
    }
  });

  it('skips a file input left empty', async () => {
    const r = await read([{ name: 'doc', filename: '', content: '' }], { files: ['doc'] });
    expect(r.ok?.files).toEqual([]);
  });

  it('needs a boundary', async () => {
    const { MultipartReader } = await load();
    const { res } = fakeRes();
    let e: unknown;
    try {
      new MultipartReader(res as never, { 'content-type': 'multipart/form-data' }, { files: ['doc'] }, { tempDir: tempDir('mp'), maxFileBytes: 10 }, { aborted: false });
    } catch (err) {
      e = err;
    }
    expect([(e as AppError).status, (e as AppError).code, (e as AppError).message]).toEqual([400, 'invalid_multipart', 'the multipart content-type needs a boundary']);
  });
});

describe('the request limit', () => {
  const construct = async (headers: Record<string, string>, opts: Record<string, unknown>, maxFileBytes = 1000) => {
    const { MultipartReader } = await load();
    const { res } = fakeRes();
    try {
      new MultipartReader(res as never, { 'content-type': CT, ...headers }, opts as never, { tempDir: tempDir('mp'), maxFileBytes }, { aborted: false });
      return undefined;
    } catch (err) {
      return err as AppError;
    }
  };

  it('refuses a declared length over files x file limit + 1 MiB at once, and takes one at it', async () => {
    const limit = 2 * 1000 + (1 << 20);
    const e = await construct({ 'content-length': String(limit + 1) }, { files: ['a', 'b'] });
    expect([e?.status, e?.code, e?.message, e?.details]).toEqual([413, 'payload_too_large', `the request is larger than ${limit} bytes`, { limit }]);
    expect(await construct({ 'content-length': String(limit) }, { files: ['a', 'b'] })).toBeUndefined();
    // the route's own limits
    expect((await construct({ 'content-length': '101' }, { files: ['a'], maxRequestBytes: 100 }))?.details).toEqual({ limit: 100 });
    expect((await construct({ 'content-length': String(3 * 50 + (1 << 20) + 1) }, { files: ['a', 'b', 'c'], maxFileBytes: 50 }))?.code).toBe('payload_too_large');
    expect(await construct({ 'content-length': String(3 * 50 + (1 << 20)) }, { files: ['a', 'b', 'c'], maxFileBytes: 50 })).toBeUndefined();
  });

  it('refuses a body that grows past it, at once', async () => {
    const { MultipartReader } = await load();
    const { res, push } = fakeRes();
    const reader = new MultipartReader(res as never, { 'content-type': CT }, { files: ['doc'], maxRequestBytes: 300 }, { tempDir: tempDir('mp'), maxFileBytes: 10_000 }, { aborted: false });
    const buf = body([{ name: 'doc', filename: 'a.bin', content: Buffer.alloc(400, 1) }]);
    push(buf.subarray(0, 300), false);
    let settled = false;
    void reader.done.catch(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    push(buf.subarray(300, 301), false);
    const e = await refusedWith(reader.done);
    expect([e.status, e.code, e.message, e.details]).toEqual([413, 'payload_too_large', 'the request is larger than 300 bytes', { limit: 300 }]);
    await reader.dispose();
  });
});

describe('files', () => {
  it('come only in the accepted fields, each once', async () => {
    const r1 = await read([{ name: 'other', filename: 'a.txt', content: 'x' }], { files: ['doc', 'img'] });
    expect(code(r1)).toEqual([400, 'unexpected_file']);
    expect(r1.err?.message).toBe('file field "other" is not accepted');
    expect(r1.err?.details).toEqual({ field: 'other', accepted: ['doc', 'img'] });
    expect(r1.log).toEqual([]); // a refusal alone neither pauses nor resumes the response
    const r2 = await read([{ name: 'doc', filename: 'a.txt', content: 'x' }, { name: 'doc', filename: 'b.txt', content: 'y' }], { files: ['doc', 'img'] });
    expect([...code(r2), r2.err?.message, r2.err?.details]).toEqual([400, 'duplicate_file', 'file field doc was sent twice', { field: 'doc' }]);
    await r2.reader.dispose();
    expect(readdirSync(r2.dir)).toEqual([]);
    const r3 = await read([{ name: 'doc', filename: 'a.txt', content: 'x' }, { name: 'img', filename: 'b.png', content: 'y' }], { files: ['doc', 'img'] });
    expect(r3.ok?.files.map((f) => f.field)).toEqual(['doc', 'img']);
  });

  it('are at most the file limit: the route’s, else the hub’s', async () => {
    const at = await read([{ name: 'doc', filename: 'a.bin', content: Buffer.alloc(100) }], { files: ['doc'], maxFileBytes: 100 });
    expect(at.ok?.files[0]?.size).toBe(100);
    const over = await read([{ name: 'doc', filename: 'a.bin', content: Buffer.alloc(101) }], { files: ['doc'], maxFileBytes: 100 });
    expect([...code(over), over.err?.message, over.err?.details]).toEqual([413, 'file_too_large', 'doc is larger than 100 bytes', { field: 'doc', limit: 100 }]);
    await over.reader.dispose();
    expect(readdirSync(over.dir)).toEqual([]);
    const hub = await read([{ name: 'doc', filename: 'a.bin', content: Buffer.alloc(51) }], { files: ['doc'] }, { maxFileBytes: 50 });
    expect(hub.err?.details).toEqual({ field: 'doc', limit: 50 });
  });

  it('have names read as UTF-8, as browsers send them', async () => {
    const r = await read([{ name: 'doc', filename: '보고서 é.pdf', content: 'x' }], { files: ['doc'] });
    expect(r.ok?.files[0]?.filename).toBe('보고서 é.pdf');
  });

  it('after a refusal get no temporary file, even later in the same chunk', async () => {
    const r = await read([{ name: 'bad', filename: 'a.txt', content: 'x' }, { name: 'doc', filename: 'b.txt', content: 'y'.repeat(100) }], { files: ['doc'] });
    expect(code(r)).toEqual([400, 'unexpected_file']);
    expect(readdirSync(r.dir)).toEqual([]);
  });

  it('have their names checked, by the part-header check first', async () => {
    const r = await read([{ name: 'doc', filename: 'a/b.txt', content: 'x' }], { files: ['doc'] });
    expect([...code(r), r.err?.details]).toEqual([400, 'invalid_filename', { filename: 'a/b.txt' }]);
    const q = await read([{ name: 'doc', filename: 'a"b.txt', content: 'x' }], { files: ['doc'] });
    expect([...code(q), q.err?.details]).toEqual([400, 'invalid_filename', { field: 'doc' }]);
  });

  it('may not come as text', async () => {
    const r = await read([{ name: 'doc', value: 'x' }], { files: ['doc'] });
    expect([...code(r), r.err?.message, r.err?.details]).toEqual([400, 'invalid_file', 'doc must be sent as a file', { field: 'doc' }]);
  });
});

describe('text fields', () => {
  it('are those the route lists, or any when it lists none', async () => {
    const r = await read([{ name: 'x', value: '1' }], { files: ['doc'], fields: ['a', 'b'] });
    expect([...code(r), r.err?.message, r.err?.details]).toEqual([400, 'unexpected_field', 'field "x" is not accepted', { field: 'x', accepted: ['a', 'b'] }]);
    expect((await read([{ name: 'b', value: '1' }], { files: ['doc'], fields: ['a', 'b'] })).ok?.fields.b).toBe('1');
    expect((await read([{ name: 'x', value: '1' }], { files: ['doc'] })).ok?.fields.x).toBe('1');
  });

  it('come once each', async () => {
    const r = await read([{ name: 'a', value: '1' }, { name: 'a', value: '2' }], { files: [] });
    expect([...code(r), r.err?.message, r.err?.details]).toEqual([400, 'duplicate_field', 'field a was sent twice', { field: 'a' }]);
    // a name the null-prototype object would otherwise already "have"
    expect((await read([{ name: 'toString', value: '1' }], { files: [] })).ok?.fields.toString).toBe('1');
  });

  it('are at most 16 KiB each unless the route says otherwise', async () => {
    expect((await read([{ name: 'a', value: 'x'.repeat(16 * 1024) }], { files: [] })).ok?.fields.a).toHaveLength(16 * 1024);
    const over = await read([{ name: 'a', value: 'x'.repeat(16 * 1024 + 1) }], { files: [] });
    expect([...code(over), over.err?.message, over.err?.details]).toEqual([413, 'field_too_large', 'field a is too long', { field: 'a' }]);
    expect(code(await read([{ name: 'a', value: 'xxxxx' }], { files: [], maxFieldBytes: 4 }))).toEqual([413, 'field_too_large']);
    expect((await read([{ name: 'a', value: 'xxxx' }], { files: [], maxFieldBytes: 4 })).ok?.fields.a).toBe('xxxx');
  });

  it('are named by at most 100 characters in a refusal', async () => {
    // (busboy applies fieldNameSize to urlencoded bodies only: a long multipart name is not truncated)
    const listed = await read([{ name: 'n'.repeat(150), value: '1' }], { files: [], fields: ['a'] });
    expect(listed.err?.details).toEqual({ field: 'n'.repeat(100), accepted: ['a'] });
    expect(listed.err?.message).toBe(`field "${'n'.repeat(100)}" is not accepted`);
  });

  it('need a name: a part without one is invalid_field', async () => {
    const buf = Buffer.from(`--${B}\r\nContent-Disposition: form-data\r\n\r\n1\r\n--${B}--\r\n`);
    for (const opts of [{ files: [] }, { files: [], fields: ['a'] }]) {
      const r = await read(buf, opts);
      expect([...code(r), r.err?.message]).toEqual([400, 'invalid_field', 'a part has no name']);
    }
  });

  it('are at most 32 unless the route says otherwise', async () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `f${i}`, value: 'v' }));
    expect(Object.keys((await read(fields(32), { files: [] })).ok?.fields ?? {})).toHaveLength(32);
    expect(code(await read(fields(33), { files: [] }))).toEqual([400, 'too_many_fields']);
    expect(code(await read(fields(3), { files: [], maxFields: 2 }))).toEqual([400, 'too_many_fields']);
    expect((await read(fields(3), { files: [], maxFields: 2 })).err?.message).toBe('too many fields');
  });
});

describe('the body', () => {
  it('that ends before its closing boundary is truncated_body', async () => {
    const r = await read(body([{ name: 'doc', filename: 'a.txt', content: 'abc' }], false), { files: ['doc'] });
    expect([...code(r), r.err?.message]).toEqual([400, 'truncated_body', 'the multipart body ended before its closing boundary']);
    await r.reader.dispose();
    expect(readdirSync(r.dir)).toEqual([]);
  });

  it('of text fields only that ends before its closing boundary is truncated_body too', async () => {
    const r = await read(body([{ name: 'a', value: '1' }], false), { files: [] });
    expect(code(r)).toEqual([400, 'truncated_body']);
  });

  it('with a part header the parser cannot read is invalid_multipart', async () => {
    const buf = Buffer.from(`--${B}\r\nX(y): 1\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--${B}--\r\n`);
    const r = await read(buf, { files: [] });
    expect([...code(r), r.err?.message]).toEqual([400, 'invalid_multipart', 'the multipart body is malformed: Malformed part header']);
  });

  it('is read to its end before a refusal is answered', async () => {
    const { MultipartReader } = await load();
    const { res, push } = fakeRes();
    const reader = new MultipartReader(res as never, { 'content-type': CT }, { files: ['doc'] }, { tempDir: tempDir('mp'), maxFileBytes: 1000 }, { aborted: false });
    const buf = body([{ name: 'bad', filename: 'a.txt', content: 'x' }, { name: 'pad', value: 'y'.repeat(200) }]);
    let settled = false;
    void reader.done.catch(() => (settled = true));
    push(buf.subarray(0, buf.length - 50), false);
    await new Promise((r) => setTimeout(r, 30));
    expect(settled).toBe(false);
    push(buf.subarray(buf.length - 50), true);
    expect((await refusedWith(reader.done)).code).toBe('unexpected_file');
  });

  it('ends with the client going away', async () => {
    const { MultipartReader } = await load();
    const { res, push } = fakeRes();
    const pending = { aborted: false } as { aborted: boolean; onAbort?: () => void };
    const reader = new MultipartReader(res as never, { 'content-type': CT }, { files: ['doc'] }, { tempDir: tempDir('mp'), maxFileBytes: 1000 }, pending);
    push(body([{ name: 'doc', filename: 'a.txt', content: 'abc' }]).subarray(0, 60), false);
    pending.aborted = true;
    pending.onAbort!();
    const e = await refusedWith(reader.done);
    expect([e.status, e.code, e.message]).toEqual([400, 'aborted', 'the client went away']);
    await reader.dispose();
  });
});

describe('a held reader', () => {
  it('pauses the response and writes nothing before release; then reads all and resumes', async () => {
    const { MultipartReader } = await load();
    const dir = tempDir('mp-held');
    const { res, push, log } = fakeRes();
    const reader = new MultipartReader(res as never, { 'content-type': CT }, { files: ['doc'] }, { tempDir: dir, maxFileBytes: 1000 }, { aborted: false }, true);
    expect(log).toEqual(['pause']);
    const buf = body([{ name: 'doc', filename: 'a.txt', content: 'held' }]);
    push(buf.subarray(0, 40), false);
    push(buf.subarray(40), true);
    await new Promise((r) => setTimeout(r, 20));
    expect(readdirSync(dir)).toEqual([]);
    reader.release();
    expect(log).toEqual(['pause', 'resume']);
    const r = await reader.done;
    expect(readFileSync(r.files[0]!.tempPath, 'utf8')).toBe('held');
    reader.release();
    expect(log).toEqual(['pause', 'resume']);
    await reader.dispose();
  });

  it('that is refused while held writes nothing and resumes to read the rest', async () => {
    const { MultipartReader } = await load();
    const dir = tempDir('mp-held');
    const { res, push, log } = fakeRes();
    const reader = new MultipartReader(res as never, { 'content-type': CT }, { files: ['doc'] }, { tempDir: dir, maxFileBytes: 1000 }, { aborted: false }, true);
    push(body([{ name: 'doc', filename: 'a.txt', content: 'x' }]), true);
    await reader.dispose(true);
    expect(log).toEqual(['pause', 'resume']);
    expect((await refusedWith(reader.done)).code).toBe('request_failed');
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('dispose', () => {
  it('fails an unfinished request and deletes every temporary file, more than once safely', async () => {
    const { MultipartReader } = await load();
    const dir = tempDir('mp-dispose');
    const { res, push } = fakeRes();
    const reader = new MultipartReader(res as never, { 'content-type': CT }, { files: ['doc'] }, { tempDir: dir, maxFileBytes: 1000 }, { aborted: false });
    const buf = body([{ name: 'doc', filename: 'a.txt', content: 'y'.repeat(300) }]);
    push(buf.subarray(0, buf.length - 20), false);
    await reader.dispose();
    expect(readdirSync(dir)).toEqual([]);
    // the refusal is answered once the rest of the body is in
    push(buf.subarray(buf.length - 20), true);
    const e = await refusedWith(reader.done);
    expect([e.status, e.code, e.message]).toEqual([400, 'request_failed', 'the request failed before its body was read']);
    expect(readdirSync(dir)).toEqual([]);
    await reader.dispose();
  });
});

describe('the most a request may carry', () => {
  it('is each accepted file once and the route’s number of fields: a part more is refused by its name or the field count', async () => {
    // (so the parser's own file count, accepted files + 1, is never what refuses: the file after the
    // accepted ones is already unexpected_file or duplicate_file)
    const opts = { files: ['a', 'b'], maxFields: 2 };
    const files: Part[] = [{ name: 'a', filename: 'a.txt', content: 'a' }, { name: 'b', filename: 'b.txt', content: 'b' }];
    const fields: Part[] = [{ name: 'f1', value: '1' }, { name: 'f2', value: '2' }];
    const all = await read([...files, ...fields], opts);
    expect([all.ok?.files.map((f) => f.field), Object.keys(all.ok?.fields ?? {})]).toEqual([['a', 'b'], ['f1', 'f2']]);
    await all.reader.dispose();
    expect(code(await read([...files, ...fields, { name: 'a', filename: 'c.txt', content: 'c' }], opts))).toEqual([400, 'duplicate_file']);
    expect(code(await read([...files, ...fields, { name: 'c', filename: 'c.txt', content: 'c' }], opts))).toEqual([400, 'unexpected_file']);
    expect(code(await read([...files, ...fields, { name: 'f3', value: '3' }], opts))).toEqual([400, 'too_many_fields']);
    const repeated = Array.from({ length: 5 }, (_, i): Part => ({ name: 'a', filename: `${i}.txt`, content: 'x' }));
    expect(code(await read(repeated, opts))).toEqual([400, 'duplicate_file']);
  });

  it('is files + 1 + fields parts, counting the parts the parser skips (no Content-Disposition)', async () => {
    const skipped = (n: number) => Buffer.concat([...Array.from({ length: n }, () => Buffer.from(`--${B}\r\nX-Note: 1\r\n\r\nskip\r\n`)), Buffer.from(`--${B}--\r\n`)]);
    // one file and two fields: four parts
    expect((await read(skipped(3), { files: ['doc'], maxFields: 2 })).ok?.files).toEqual([]);
    const over = await read(skipped(4), { files: ['doc'], maxFields: 2 });
    expect([...code(over), over.err?.message]).toEqual([400, 'too_many_parts', 'too many parts']);
    // two files and the default 32 fields: 35
    expect((await read(skipped(34), { files: ['a', 'b'] })).err).toBeUndefined();
    expect(code(await read(skipped(35), { files: ['a', 'b'] }))).toEqual([400, 'too_many_parts']);
  });
});

describe('back-pressure', () => {
  const big = (n: number, name = 'doc') => body([{ name, filename: 'big.bin', content: pattern(n) }]);

  it('pauses the response while the parser or the disk is behind and resumes it on the drain, losing nothing', async () => {
    const c = await open();
    await c.send(big(256 * KiB), 64 * KiB);
    const r = await c.reader.done;
    expect(readFileSync(r.files[0]!.tempPath).equals(pattern(256 * KiB))).toBe(true);
    // paused more than once, each pause followed by its resume, and left running
    expect(c.log.filter((e) => e === 'pause').length).toBeGreaterThanOrEqual(2);
    expect(c.log).toEqual(c.log.map((_, i) => (i % 2 === 0 ? 'pause' : 'resume')));
    expect(c.log.length % 2).toBe(0);
    await c.reader.dispose();
  });

  it('never pauses on the last chunk: a body in one piece leaves the response running', async () => {
    const c = await open();
    await c.send(big(256 * KiB), 1 << 20);
    expect((await c.reader.done).files[0]!.size).toBe(256 * KiB);
    expect(c.log).toEqual([]);
    await c.reader.dispose();
  });

  it('does not pause a refused body: its rest is read as it comes', async () => {
    const c = await open();
    await c.send(big(200 * KiB, 'bad'), 64 * KiB);
    expect((await refusedWith(c.reader.done)).code).toBe('unexpected_file');
    expect(c.log).toEqual([]);
  });

  it('resumes a paused response when the request fails, to read the rest', async () => {
    const c = await open();
    const buf = big(256 * KiB);
    await c.deliver(buf.subarray(0, 64 * KiB), false);
    expect(c.log).toEqual(['pause']);
    const disposed = c.reader.dispose(true);
    expect(c.log).toEqual(['pause', 'resume']);
    await c.send(buf.subarray(64 * KiB), 64 * KiB);
    await disposed;
    expect((await refusedWith(c.reader.done)).code).toBe('request_failed');
    expect(c.log).toEqual(['pause', 'resume']);
    expect(readdirSync(c.dir)).toEqual([]);
  });

  it('of a held reader released with more queued than the parser takes at once: paused until the drain', async () => {
    const c = await open({ files: ['doc'] }, true);
    const buf = big(200 * KiB);
    c.deliverNow(buf.subarray(0, 64 * KiB), false);
    c.reader.release();
    expect(c.log).toEqual(['pause', 'pause']);
    await c.send(buf.subarray(64 * KiB), 64 * KiB);
    expect(readFileSync((await c.reader.done).files[0]!.tempPath).equals(pattern(200 * KiB))).toBe(true);
    expect(c.log.slice(0, 3)).toEqual(['pause', 'pause', 'resume']);
    await c.reader.dispose();
  });
});

describe('uWS chunk memory', () => {
  it('is copied before onData returns, whether read at once or held until release', async () => {
    const content = pattern(5000);
    const buf = body([{ name: 'a', value: 'v'.repeat(300) }, { name: 'doc', filename: 'a.bin', content }]);
    const c = await open();
    await c.send(buf, 100);
    const r = await c.reader.done;
    expect([readFileSync(r.files[0]!.tempPath).equals(content), r.fields.a]).toEqual([true, 'v'.repeat(300)]);
    const h = await open({ files: ['doc'] }, true);
    for (let i = 0; i < buf.length; i += 100) h.deliverNow(buf.subarray(i, i + 100), i + 100 >= buf.length);
    h.reader.release();
    const q = await h.reader.done;
    expect([readFileSync(q.files[0]!.tempPath).equals(content), q.fields.a]).toEqual([true, 'v'.repeat(300)]);
  });
});

describe('a client gone', () => {
  it('in the middle of a file: refused with aborted, the response not touched again, nothing left after dispose', async () => {
    const c = await open();
    await c.deliver(body([{ name: 'doc', filename: 'big.bin', content: pattern(256 * KiB) }]).subarray(0, 64 * KiB), false);
    c.abort();
    const e = await refusedWith(c.reader.done);
    expect([e.status, e.code, e.message]).toEqual([400, 'aborted', 'the client went away']);
    expect(c.log).toEqual(['pause']); // an aborted uWS response may not be resumed
    await c.reader.dispose();
    expect(readdirSync(c.dir)).toEqual([]);
  });

  it('before a held reader is released: refused, its response left paused', async () => {
    const c = await open({ files: ['doc'] }, true);
    c.deliverNow(body([{ name: 'doc', filename: 'a.txt', content: 'x' }]).subarray(0, 50), false);
    c.abort();
    expect((await refusedWith(c.reader.done)).code).toBe('aborted');
    expect(c.log).toEqual(['pause']);
    expect(readdirSync(c.dir)).toEqual([]);
  });

  it('after a refusal ends the wait for the rest of the body: the first refusal stands', async () => {
    const c = await open();
    await c.deliver(body([{ name: 'bad', filename: 'a.txt', content: 'x' }, { name: 'pad', value: 'y' }], false), false);
    c.abort();
    expect((await refusedWith(c.reader.done)).code).toBe('unexpected_file');
  });

  it('nor does a refused body that then grows past the request limit wait for its end: the first refusal stands', async () => {
    const c = await open({ files: ['doc'], maxRequestBytes: 300 });
    await c.deliver(body([{ name: 'bad', filename: 'a.txt', content: 'x' }], false), false);
    await c.deliver(Buffer.alloc(300, 0x41), false);
    expect((await refusedWith(c.reader.done)).code).toBe('unexpected_file');
  });
});

describe('the temporary directory', () => {
  it('that cannot be written fails the request with 503 storage_unavailable and its reason', async () => {
    const base = tempDir('mp-store');
    const file = join(base, 'a-file');
    writeFileSync(file, '');
    for (const [dir, reason] of [
      [join(base, 'gone'), 'ENOENT'],
      [file, 'ENOTDIR'],
    ] as const) {
      const r = await read([{ name: 'doc', filename: 'a.txt', content: 'x'.repeat(100) }], { files: ['doc'] }, { tempDir: dir });
      expect([...code(r), r.err?.message, r.err?.details]).toEqual([503, 'storage_unavailable', 'the upload could not be written', { reason }]);
    }
  });
});

describe('a refusal', () => {
  it('is answered only once the open temporary files are closed; dispose then deletes them', async () => {
    const c = await open({ files: ['doc'], fields: ['a'] });
    let settled = false;
    void c.reader.done.catch(() => (settled = true));
    c.deliverNow(body([{ name: 'doc', filename: 'a.txt', content: 'x'.repeat(100) }, { name: 'x', value: '1' }]), true);
    await Promise.resolve();
    await Promise.resolve();
    expect(settled).toBe(false); // closing the file is I/O: a later turn of the event loop
    expect((await refusedWith(c.reader.done)).code).toBe('unexpected_field');
    expect(readdirSync(c.dir)).toHaveLength(1); // closed, and left for dispose
    await c.reader.dispose(true);
    expect(readdirSync(c.dir)).toEqual([]);
  });

  it('of a held reader waits for the rest of the body, unless its last chunk was already queued', async () => {
    const buf = body([{ name: 'doc', filename: 'a.txt', content: 'x'.repeat(300) }]);
    const a = await open({ files: ['doc'] }, true);
    a.deliverNow(buf.subarray(0, 100), false);
    let settled = false;
    void a.reader.done.catch(() => (settled = true));
    const disposed = a.reader.dispose(true);
    await nextTurn();
    expect(settled).toBe(false);
    expect(a.log).toEqual(['pause', 'resume']);
    await a.send(buf.subarray(100), 100);
    await disposed;
    expect((await refusedWith(a.reader.done)).code).toBe('request_failed');
    const b = await open({ files: ['doc'] }, true);
    b.deliverNow(buf.subarray(0, 100), false);
    b.deliverNow(buf.subarray(100), true);
    await b.reader.dispose(true);
    expect((await refusedWith(b.reader.done)).code).toBe('request_failed');
    expect(readdirSync(b.dir)).toEqual([]);
  });
});

describe('dispose with drain', () => {
  it('returns only once the rest of the body has been read', async () => {
    const c = await open({ files: [] });
    const buf = body([{ name: 'a', value: 'x'.repeat(300) }]);
    await c.deliver(buf.subarray(0, 100), false);
    let disposed = false;
    const d = c.reader.dispose(true).then(() => (disposed = true));
    await nextTurn();
    expect(disposed).toBe(false);
    await c.deliver(buf.subarray(100), true);
    await d;
    expect((await refusedWith(c.reader.done)).code).toBe('request_failed');
  });
});
