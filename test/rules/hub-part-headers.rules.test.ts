import { describe, expect, it, vi } from 'vitest';
import type { AppError } from '../../src/errors.js';

// The check of multipart part headers run on the raw body before busboy (src/hub/part-headers.ts):
// a part whose Content-Disposition does not parse, or whose header holds a bare CR or LF, is
// refused with 400 invalid_filename naming its field; only the bytes right after a boundary
// delimiter are read as headers; the closing delimiter ends the check; a header block longer than
// 16 KiB is left to the parser's own limits. The module builds its patterns at load: each test
// imports it afresh.
const load = async () => {
  vi.resetModules();
  const [m, e] = await Promise.all([import('../../src/hub/part-headers.js'), import('../../src/errors.js')]);
  return { ...m, AppError: e.AppError };
};

const B = 'XyZ-b0undary';
/** A multipart body of parts, each given as its header lines and its content. */
const body = (...parts: [string[], string][]) =>
  Buffer.from(parts.map(([h, c]) => `--${B}\r\n${h.join('\r\n')}\r\n\r\n${c}\r\n`).join('') + `--${B}--\r\n`, 'latin1');
const file = (disposition: string, content = 'hello') => [[`Content-Disposition: ${disposition}`, 'Content-Type: text/plain'], content] as [string[], string];

/** Runs the check over `buf` cut into chunks of `size` bytes; returns the error thrown, if any. */
async function run(buf: Buffer, size = buf.length, boundary = B): Promise<AppError | undefined> {
  const { PartHeaderCheck, AppError } = await load();
  const c = new PartHeaderCheck(boundary);
  try {
    for (let i = 0; i < buf.length; i += size) c.push(buf.subarray(i, i + size));
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    return e as AppError;
  }
  return undefined;
}

describe('the boundary of a content type', () => {
  it('is read quoted or bare, after a semicolon, in any case, of any length, as the parser reads it', async () => {
    const { boundaryOf } = await load();
    expect(boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
    expect(boundaryOf('multipart/form-data;boundary="a b;c"')).toBe('a b;c');
    expect(boundaryOf('multipart/form-data; BOUNDARY=abc; charset=x')).toBe('abc');
    expect(boundaryOf('multipart/form-data;  \tboundary=q')).toBe('q');
    expect(boundaryOf(`multipart/form-data; boundary=${'a'.repeat(250)}`)).toBe('a'.repeat(250));
    expect(boundaryOf(`multipart/form-data; boundary="${'b'.repeat(201)}"`)).toBe('b'.repeat(201));
    // a `; boundary=` inside another parameter's quoted value is that value, not the boundary
    expect(boundaryOf('multipart/form-data; note="; boundary=fake"; boundary=real')).toBe('real');
    expect(boundaryOf('multipart/form-data; note="; boundary=fake"')).toBeUndefined();
  });

  it('is undefined without one', async () => {
    const { boundaryOf } = await load();
    expect(boundaryOf(undefined)).toBeUndefined();
    expect(boundaryOf('multipart/form-data')).toBeUndefined();
    expect(boundaryOf('multipart/form-data boundary=abc')).toBeUndefined();
    expect(boundaryOf('multipart/form-data; boundary=')).toBeUndefined();
  });
});

describe('well-formed parts pass', () => {
  it('takes quoted, bare, escaped and extended parameters, and a trailing semicolon', async () => {
    const ok = [
      'form-data; name="a"',
      'form-data; name="f"; filename="x.pdf"',
      'form-data; name=bare; filename=x.txt',
      'form-data; name="f"; filename="a\\"b.txt"',
      "form-data; name=\"f\"; filename*=UTF-8''%ED%95%9C.pdf",
      'FORM-DATA ; name = "f" ;',
      'form-data',
      'form-data; name="f";',
      'form-data;name="a";filename="b.txt"',
    ];
    for (const d of ok) expect(await run(body(file(d))), d).toBeUndefined();
    expect(await run(body(file('form-data; name="a"'), file('form-data; name="b"; filename="b.png"')))).toBeUndefined();
    // header names of any case; a header without a value
    expect(await run(body([['content-disposition: form-data; name="a"', 'X-Empty:'], 'v']))).toBeUndefined();
    expect(await run(body([['Content-Disposition:form-data; name="a"'], 'v']))).toBeUndefined();
  });

  it('reads a file whose content starts like a delimiter as content', async () => {
    const content = `--${B}\r\nContent-Disposition: form-data; filename="a"b"\r\n\r\n`;
    expect(await run(body(file('form-data; name="f"; filename="ok.txt"', content)))).toBeUndefined();
    expect(await run(body(file('form-data; name="f"; filename="ok.txt"', content)), 3)).toBeUndefined();
  });

  it('reads the disposition header by its whole name only', async () => {
    // another header whose name holds the words is neither the disposition nor checked as one
    const e = await run(body([['X-Content-Disposition: form-data; name="zz"', 'Content-Disposition: form-data; name="real"; filename="a"b"'], 'v']));
    expect(e?.details).toEqual({ field: 'real' });
    expect(await run(body([['X-Content-Disposition: attachment', 'Content-Disposition: form-data; name="a"'], 'v']))).toBeUndefined();
    expect(await run(body([['Content-Disposition-Note: attachment', 'Content-Disposition: form-data; name="a"'], 'v']))).toBeUndefined();
  });

  it('matches the boundary byte for byte, as latin1', async () => {
    const b = 'b\u00e9x';
    const buf = Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="q"; filename="x"y"\r\n\r\nv\r\n--${b}--\r\n`, 'latin1');
    expect((await run(buf, buf.length, b))?.details).toEqual({ field: 'q' });
  });

  it('refuses a part without any header', async () => {
    const buf = Buffer.from(`--${B}\r\n\r\nv\r\n--${B}--\r\n`, 'latin1');
    expect((await run(buf))?.details).toEqual({ field: null });
  });

  it('never reads file content as headers, however it looks', async () => {
    const content = 'Content-Disposition: form-data; filename="a"b"\r\nbad line\r\n\r\n--not-the-boundary\r\n';
    expect(await run(body(file('form-data; name="f"; filename="ok.txt"', content)))).toBeUndefined();
  });

  it('skips transport padding after the delimiter', async () => {
    const buf = Buffer.from(`--${B} \t\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--${B}--\r\n`, 'latin1');
    expect(await run(buf)).toBeUndefined();
  });
});

describe('malformed part headers are refused', () => {
  it('refuses a raw quote in a file name, naming the field', async () => {
    const e = await run(body(file('form-data; name="doc"; filename="a"b.pdf"')));
    expect([e?.status, e?.code, e?.details]).toEqual([400, 'invalid_filename', { field: 'doc' }]);
    expect(e?.message).toBe(
      'the part of field "doc" has a malformed header: a file name may not hold a raw quote, CR or LF (encode it, e.g. filename*=UTF-8\'\'...)',
    );
  });

  it('says field null when the part names none', async () => {
    const e = await run(body(file('form-data; filename="a"b"')));
    expect(e?.details).toEqual({ field: null });
    expect(e?.message).toBe(
      'the part has a malformed header: a file name may not hold a raw quote, CR or LF (encode it, e.g. filename*=UTF-8\'\'...)',
    );
    // only a quoted name is read, and only one of at most 100 characters
    expect((await run(body(file('form-data; name=bare; filename="a"b"'))))?.details).toEqual({ field: null });
    expect((await run(body(file(`form-data; name="${'n'.repeat(100)}"; filename="a"b"`))))?.details).toEqual({ field: 'n'.repeat(100) });
    expect((await run(body(file(`form-data; name="${'n'.repeat(101)}"; filename="a"b"`))))?.details).toEqual({ field: null });
    expect((await run(body(file('form-data; xname="q"; filename="a"b"'))))?.details).toEqual({ field: null });
    expect((await run(body(file('form-data; NAME="Q"; filename="a"b"'))))?.details).toEqual({ field: 'Q' });
  });

  it('refuses a disposition other than form-data, and parameters that do not parse', async () => {
    const bad = [
      'attachment; name="a"',
      'x form-data; name="a"',
      'form-data; name="a" trailing',
      'form-data; name="a"; filename="x',
      'form-data; name="a"; filename=',
      'form-data; name="a"; file name="x"',
      'form-data; name="a"; filename="a\\',
      'form-data; name="a"; filename=a"b',
      'form-data; name="a"; filename=a b',
      'form-datax; name="a"',
    ];
    for (const d of bad) expect((await run(body(file(d))))?.code, d).toBe('invalid_filename');
  });

  it('refuses a header line split by a bare CR or LF, or a line that is no header', async () => {
    expect((await run(body(file('form-data; name="f"; filename="a\nb.txt"'))))?.details).toEqual({ field: 'f' });
    expect((await run(body(file('form-data; name="f"; filename="a\rb.txt"'))))?.code).toBe('invalid_filename');
    expect((await run(body([['Content-Disposition: form-data; name="f"', 'no header here'], 'v'])))?.code).toBe('invalid_filename');
    expect((await run(body([['Content-Disposition: form-data; name="f"', 'Bad Name: x'], 'v'])))?.code).toBe('invalid_filename');
    expect((await run(body([['Content-Disposition: form-data; name="f"', ':x'], 'v'])))?.code).toBe('invalid_filename');
    expect((await run(body([['Content-Disposition: form-data; name="f"', 'X-Ok: a\nb'], 'v'])))?.code).toBe('invalid_filename');
    // a bare CR or LF in another header too
    expect((await run(body([['Content-Disposition: form-data; name="f"', 'Content-Type: text/plain\rX'], 'v'])))?.code).toBe('invalid_filename');
  });

  it('refuses a bad part after good ones, and the disposition header of any case', async () => {
    expect((await run(body(file('form-data; name="a"'), file('form-data; name="b"; filename="x"y"'))))?.details).toEqual({ field: 'b' });
    expect((await run(body([['content-DISPOSITION: form-data; name="c"; filename="x"y"'], 'v'])))?.details).toEqual({ field: 'c' });
  });

  it('finds it whatever the chunking: delimiters and header blocks may span chunks', async () => {
    const buf = body(file('form-data; name="a"', 'x'.repeat(50)), file('form-data; name="b"; filename="x"y"'));
    for (const size of [1, 2, 3, 5, 7, 13, 16, 31, 64]) expect((await run(buf, size))?.details, `chunks of ${size}`).toEqual({ field: 'b' });
    const good = body(file('form-data; name="a"', `--${B.slice(0, 5)}`), file('form-data; name="b"; filename="y"'));
    for (const size of [1, 2, 3, 7, 16]) expect(await run(good, size), `chunks of ${size}`).toBeUndefined();
  });
});

describe('where the check stops', () => {
  it('stops at the closing delimiter', async () => {
    const buf = Buffer.concat([body(file('form-data; name="a"')), Buffer.from(`\r\n--${B}\r\nContent-Disposition: form-data; filename="a"b"\r\n\r\n`, 'latin1')]);
    expect(await run(buf)).toBeUndefined();
    expect(await run(buf, 1)).toBeUndefined();
    // an epilogue that holds a delimiter, pushed after the closing one, is not read either
    const { PartHeaderCheck } = await load();
    const c = new PartHeaderCheck(B);
    c.push(body(file('form-data; name="a"')));
    expect(() => c.push(Buffer.from(`epilogue\r\n--${B}\r\nContent-Disposition: form-data; filename="a"b"\r\n\r\n`, 'latin1'))).not.toThrow();
  });

  it('stops for good at a closing delimiter whose line ends the header block', async () => {
    const { PartHeaderCheck } = await load();
    const c = new PartHeaderCheck(B);
    c.push(Buffer.concat([body(file('form-data; name="a"')), Buffer.from('\r\n', 'latin1')]));
    expect(() => c.push(Buffer.from(`x\r\n--${B}\r\nContent-Disposition: form-data; filename="a"b"\r\n\r\n`, 'latin1'))).not.toThrow();
  });

  it('takes only a block that starts with -- as the closing delimiter', async () => {
    const buf = body([['Content-Disposition: form-data; name="a"', 'X-Note: --'], 'v'], file('form-data; name="b"; filename="x"y"'));
    expect((await run(buf))?.details).toEqual({ field: 'b' });
  });

  it('leaves a header block over 16 KiB to the parser, but checks one of 16 KiB', async () => {
    const { PartHeaderCheck, AppError } = await load();
    const head = (pending: number) => {
      // after the delimiter: "\r\n" + disposition + "\r\nX-Pad: " + padding, `pending` bytes in all
      const start = `\r\nContent-Disposition: form-data; name="p"; filename="a"b"\r\nX-Pad: `;
      return `--${B}${start}${'p'.repeat(pending - start.length)}`;
    };
    const at = (pending: number) => {
      const c = new PartHeaderCheck(B);
      c.push(Buffer.from(head(pending), 'latin1'));
      return () => c.push(Buffer.from('\r\n\r\nv', 'latin1'));
    };
    expect(at(16 * 1024)).toThrow(AppError);
    expect(at(16 * 1024 + 1)).not.toThrow();
    // once given up, later parts are not checked either
    const c = new PartHeaderCheck(B);
    c.push(Buffer.from(head(16 * 1024 + 1), 'latin1'));
    expect(() => c.push(body(file('form-data; name="q"; filename="x"y"')))).not.toThrow();
  });

  it('checks nothing before the first delimiter', async () => {
    const preamble = Buffer.from('preamble\r\nContent-Disposition: attachment\r\n\r\n', 'latin1');
    expect(await run(Buffer.concat([preamble, Buffer.from('\r\n'), body(file('form-data; name="a"'))]))).toBeUndefined();
  });
});
