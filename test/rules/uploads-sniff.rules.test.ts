import CFB from 'cfb';
import { describe, expect, it, vi } from 'vitest';
import { makeHwp, makeJpg, makePdf, makePng, makeZip, fileWriter } from '../support/uploads.js';
import { refusal as refused } from '../support/refusal.js';

// What an upload is, by content alone (src/uploads/sniff.ts; doc 1, rental documents): HWP 5 by the
// `FileHeader` stream of a compound file (signature, 40 bytes at least, version, password and DRM
// flags), HWPX by a first stored `mimetype` entry, PDF, JPEG, PNG; a file shorter than 4 bytes is
// refused; a name's extension (1 to 8 characters) may only claim the type found; at most 2 compound
// files are read at once. readFile and open are the real ones, watched (and readFile held when a
// test says so) to see the bound.
const fsWatch = vi.hoisted(() => ({ reads: 0, inFlight: 0, closes: 0, gate: undefined as Promise<void> | undefined }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...real,
    readFile: async (...args: Parameters<typeof real.readFile>) => {
      fsWatch.reads++;
      fsWatch.inFlight++;
      try {
        if (fsWatch.gate) await fsWatch.gate;
        return await real.readFile(...args);
      } finally {
        fsWatch.inFlight--;
      }
    },
    open: async (...args: Parameters<typeof real.open>) => {
      const fh = await real.open(...args);
      const close = fh.close.bind(fh);
      fh.close = async () => {
        await close();
        fsWatch.closes++;
      };
      return fh;
    },
  };
});

const load = async () => {
  vi.resetModules();
  return import('../../src/uploads/sniff.js');
};

const file = fileWriter('maru-sniff-rules-');
const refusal = (p: Promise<unknown>) => refused(p, { details: true });
const ACCEPTED = ['hwp', 'hwpx', 'pdf', 'jpg', 'png'];

/** A compound file whose FileHeader stream is `header`. */
function cfbWith(header: Buffer): Buffer {
  const cfb = CFB.utils.cfb_new();
  CFB.utils.cfb_add(cfb, '/FileHeader', header);
  CFB.utils.cfb_add(cfb, '/BodyText/Section0', Buffer.alloc(4096, 1));
  return Buffer.from(CFB.write(cfb, { type: 'buffer' }) as Uint8Array);
}
function fileHeader(opts: { length?: number; signature?: string; version?: number; flags?: number } = {}): Buffer {
  const h = Buffer.alloc(opts.length ?? 256);
  h.write(opts.signature ?? 'HWP Document File', 0, 'latin1');
  if (h.length >= 40) {
    h.writeUInt32LE(opts.version ?? 0x05010001, 32);
    h.writeUInt32LE(opts.flags ?? 0, 36);
  }
  return h;
}
/** A ZIP whose first local entry is `name` with `data`, stored or (method 8) said to be deflated, with an extra field and a size as given. */
function zipFirst(name: string, data: string, opts: { method?: number; extra?: number; size?: number } = {}): Buffer {
  const zip = makeZip([
    [name, data],
    ['version.xml', '<x/>'],
  ]);
  const extra = opts.extra ?? 0;
  const n0 = Buffer.from(name).length;
  const local = Buffer.from(zip.subarray(0, 30));
  local.writeUInt16LE(opts.method ?? 0, 8);
  if (opts.size !== undefined) local.writeUInt32LE(opts.size, 18);
  local.writeUInt16LE(extra, 28);
  return Buffer.concat([local, zip.subarray(30, 30 + n0), Buffer.alloc(extra, 0x41), zip.subarray(30 + n0)]);
}

describe('too short, or nothing known', () => {
  it('an empty file and one of 1 to 3 bytes are refused as such; 4 bytes are looked at', async () => {
    const { sniff } = await load();
    const r = await refusal(sniff(file(Buffer.alloc(0))));
    expect(r).toEqual({
      status: 415,
      code: 'unsupported_file_type',
      message: 'the file is empty; accepted are HWP, HWPX, PDF, JPEG and PNG',
      details: { detected: 'empty', accepted: ACCEPTED },
    });
    for (const len of [1, 3]) expect((await refusal(sniff(file(Buffer.alloc(len, 0x41))))).details).toEqual({ detected: 'too short to be a document', accepted: ACCEPTED });
    expect((await refusal(sniff(file(Buffer.alloc(4, 0x41))))).details).toEqual({ detected: 'unknown binary or text', accepted: ACCEPTED });
  });
});

describe('HWP 5', () => {
  it('reads the version from the 4 bytes at offset 32, most significant first', async () => {
    const { sniff } = await load();
    expect(await sniff(file(cfbWith(fileHeader({ version: 0x05010203 }))))).toEqual({
      kind: 'hwp',
      mediaType: 'application/x-hwp',
      hwp: { version: '5.1.2.3', compressed: false, distribution: false },
    });
    expect((await sniff(file(cfbWith(fileHeader({ version: 0xfe0a0b0c }))))).hwp?.version).toBe('254.10.11.12');
  });

  it('a FileHeader of 40 bytes is read; of 39 bytes, or with another signature, it is not HWP', async () => {
    const { sniff } = await load();
    expect((await sniff(file(cfbWith(fileHeader({ length: 40 }))))).kind).toBe('hwp');
    const notHwp = { detected: 'a compound file (cfb) that is not HWP', accepted: ACCEPTED };
    expect((await refusal(sniff(file(cfbWith(fileHeader({ length: 39 })))))).details).toEqual(notHwp);
    expect((await refusal(sniff(file(cfbWith(fileHeader({ signature: 'HWP Document Filx' })))))).details).toEqual(notHwp);
    expect((await refusal(sniff(file(cfbWith(Buffer.alloc(0))))))).toMatchObject({ status: 415, details: notHwp });
  });

  it('each flag is its own bit: 1 compressed, 2 password, 4 distribution, 16 DRM; 8 alone is nothing', async () => {
    const { sniff, HWP_FLAGS } = await load();
    expect(HWP_FLAGS).toEqual({ compressed: 1, password: 2, distribution: 4, drm: 16 });
    expect((await sniff(file(cfbWith(fileHeader({ flags: 1 }))))).hwp).toMatchObject({ compressed: true, distribution: false });
    expect((await sniff(file(cfbWith(fileHeader({ flags: 4 }))))).hwp).toMatchObject({ compressed: false, distribution: true });
    expect((await sniff(file(cfbWith(fileHeader({ flags: 8 }))))).hwp).toMatchObject({ compressed: false, distribution: false });
    expect(await refusal(sniff(file(cfbWith(fileHeader({ flags: 2 })))))).toEqual({
      status: 422,
      code: 'document_encrypted',
      message: 'the HWP document is password-protected; save it without a password and upload it again',
      details: { flag: 'password' },
    });
    expect(await refusal(sniff(file(cfbWith(fileHeader({ flags: 16 })))))).toEqual({
      status: 422,
      code: 'document_drm',
      message: 'the HWP document is DRM-protected; export it without DRM and upload it again',
      details: { flag: 'drm' },
    });
  });

  it('a damaged compound file is refused as such', async () => {
    const { sniff } = await load();
    const b = Buffer.from(makeHwp());
    b.fill(0xff, 8, 512);
    expect((await refusal(sniff(file(b)))).details).toEqual({ detected: 'a damaged compound file (cfb)', accepted: ACCEPTED });
  });

  it('reads at most 2 compound files at once, and every one in the end', async () => {
    const { sniff } = await load();
    const paths = [0, 1, 2, 3].map(() => file(makeHwp()));
    let open!: () => void;
    fsWatch.gate = new Promise<void>((r) => (open = r));
    fsWatch.reads = 0;
    fsWatch.closes = 0;
    try {
      const all = Promise.all(paths.map((p) => sniff(p)));
      // every sniff has read its first bytes (and closed the file): all four are at the compound file
      await vi.waitFor(() => expect(fsWatch.closes).toBe(4));
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      expect([fsWatch.reads, fsWatch.inFlight]).toEqual([2, 2]);
      open();
      expect((await all).map((s) => s.kind)).toEqual(['hwp', 'hwp', 'hwp', 'hwp']);
      expect(fsWatch.reads).toBe(4);
    } finally {
      fsWatch.gate = undefined;
    }
  });
});

describe('HWPX', () => {
  it('a first stored entry named mimetype holding application/hwp+zip, after any extra field, spaces trimmed', async () => {
    const { sniff } = await load();
    const hwpx = { kind: 'hwpx', mediaType: 'application/hwp+zip' };
    expect(await sniff(file(zipFirst('mimetype', 'application/hwp+zip')))).toEqual(hwpx);
    expect(await sniff(file(zipFirst('mimetype', 'application/hwp+zip', { extra: 9 })))).toEqual(hwpx);
    expect(await sniff(file(zipFirst('mimetype', 'application/hwp+zip\n')))).toEqual(hwpx);
    // a size of 0 (written after the data): the mimetype's own length is read
    expect(await sniff(file(zipFirst('mimetype', 'application/hwp+zip', { size: 0 })))).toEqual(hwpx);
  });

  it('is not HWPX when the entry is deflated, named otherwise, or holds another type', async () => {
    const { sniff } = await load();
    for (const [name, data, method] of [
      ['mimetype', 'application/hwp+zip', 8],
      ['mimetypes', 'application/hwp+zip', 0],
      ['mimetyp', 'application/hwp+zip', 0],
      ['mimetype', 'application/hwp+zipx', 0],
      ['mimetype', 'application/x-other', 0],
    ] as const) {
      const r = await refusal(sniff(file(zipFirst(name, data, { method }))));
      expect([r.status, r.code, (r.details as { detected: string }).detected], `${name} ${data} ${method}`).toEqual([415, 'unsupported_file_type', 'zip (not HWPX)']);
    }
    // the local header signature alone, too short for a header
    const stub = Buffer.alloc(29);
    stub.writeUInt32LE(0x04034b50, 0);
    expect((await refusal(sniff(file(stub)))).status).toBe(415);
  });
});

describe('names', () => {
  it('an extension of 1 to 8 letters or digits, in any case, may only claim the type found', async () => {
    const { sniff } = await load();
    const pdf = file(makePdf());
    expect(await refusal(sniff(pdf, 'application.HWP'))).toEqual({
      status: 415,
      code: 'type_mismatch',
      message: 'the file is named .hwp but its content is PDF',
      details: { detected: 'pdf', named: 'hwp' },
    });
    expect((await refusal(sniff(pdf, 'scan.pdf.jpeg'))).details).toEqual({ detected: 'pdf', named: 'jpeg' });
    for (const name of ['scan.pdf', 'scan.PDF', 'scan.txt', 'scan.abcdefghi', 'scan.hwp ', 'scan', 'scan.', undefined]) expect((await sniff(pdf, name)).kind, String(name)).toBe('pdf');
    expect((await sniff(file(makeHwp()), 'x.hwpx')).kind).toBe('hwp');
    expect((await sniff(file(zipFirst('mimetype', 'application/hwp+zip')), 'x.hwp')).kind).toBe('hwpx');
    expect((await refusal(sniff(file(makeHwp()), 'x.pdf'))).code).toBe('type_mismatch');
  });

  it('a JPEG and a PNG are served as image/jpeg and image/png, and taken under their own extensions', async () => {
    const { sniff } = await load();
    const jpg = file(makeJpg());
    const png = file(makePng());
    for (const name of ['photo.jpg', 'photo.jpeg']) expect(await sniff(jpg, name), name).toEqual({ kind: 'jpg', mediaType: 'image/jpeg' });
    expect(await sniff(png, 'scan.png')).toEqual({ kind: 'png', mediaType: 'image/png' });
    expect((await refusal(sniff(png, 'scan.jpg'))).details).toEqual({ detected: 'png', named: 'jpg' });
    expect((await refusal(sniff(jpg, 'scan.png'))).details).toEqual({ detected: 'jpg', named: 'png' });
  });
});
