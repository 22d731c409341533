import { open, readFile } from 'node:fs/promises';
import CFB from 'cfb';
import { fileTypeFromFile } from 'file-type';
import { AppError } from '../errors.js';

/**
 * What an uploaded file is, decided by its content alone (never by its name or the browser's MIME
 * type): HWP 5 (an OLE2 compound file with a `FileHeader` stream), HWPX (a ZIP whose first, stored
 * entry `mimetype` holds `application/hwp+zip`), PDF, JPEG, PNG. A file named .hwpx that is really
 * HWP 5 is HWP.
 */
export type DocumentKind = 'hwp' | 'hwpx' | 'pdf' | 'jpg' | 'png';

export interface Sniffed {
  kind: DocumentKind;
  /** The media type the file is served with. */
  mediaType: string;
  /** HWP 5 only: the format version (e.g. "5.1.0.1") and the header flags that matter. */
  hwp?: { version: string; compressed: boolean; distribution: boolean };
}

export const MEDIA_TYPES: Record<DocumentKind, string> = {
  hwp: 'application/x-hwp',
  hwpx: 'application/hwp+zip',
  pdf: 'application/pdf',
  jpg: 'image/jpeg',
  png: 'image/png',
};

const CFB_MAGIC = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
const HWP_SIGNATURE = 'HWP Document File';
const HWPX_MIMETYPE = 'application/hwp+zip';
/** HWP FileHeader flags (u32 at offset 36). */
export const HWP_FLAGS = { compressed: 1 << 0, password: 1 << 1, distribution: 1 << 2, drm: 1 << 4 } as const;

/**
 * Reading a compound file holds it in memory (the `cfb` package parses whole files): at most this
 * many at once, so concurrent uploads of large HWP files keep a bounded footprint.
 */
const CFB_PARALLEL = 2;
let cfbRunning = 0;
const cfbWaiting: Array<() => void> = [];

async function withCfbSlot<T>(f: () => Promise<T>): Promise<T> {
  if (cfbRunning >= CFB_PARALLEL) await new Promise<void>((r) => cfbWaiting.push(r));
  cfbRunning++;
  try {
    return await f();
  } finally {
    cfbRunning--;
    cfbWaiting.shift()?.();
  }
}

const unsupported = (detected: string) =>
  new AppError('unsupported_media', 'unsupported_file_type', `the file is ${detected}; accepted are HWP, HWPX, PDF, JPEG and PNG`, {
    detected,
    accepted: Object.keys(MEDIA_TYPES),
  });

async function readHead(path: string, bytes: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** Reads the FileHeader stream of an HWP 5 compound file; throws 415 when it is another compound file. */
async function sniffHwp(path: string): Promise<Sniffed> {
  const header = await withCfbSlot(async () => {
    let container: CFB.CFB$Container;
    try {
      container = CFB.read(await readFile(path), { type: 'buffer' });
    } catch {
      throw unsupported('a damaged compound file (cfb)');
    }
    const entry = CFB.find(container, 'FileHeader');
    return entry?.content ? Buffer.from(entry.content as Uint8Array) : undefined;
  });
  if (!header || header.length < 40 || header.subarray(0, HWP_SIGNATURE.length).toString('latin1') !== HWP_SIGNATURE) {
    throw unsupported('a compound file (cfb) that is not HWP');
  }
  const v = header.readUInt32LE(32);
  const version = [(v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff].join('.');
  const flags = header.readUInt32LE(36);
  if (flags & HWP_FLAGS.password) {
    throw new AppError('unprocessable', 'document_encrypted', 'the HWP document is password-protected; save it without a password and upload it again', { flag: 'password' });
  }
  if (flags & HWP_FLAGS.drm) {
    throw new AppError('unprocessable', 'document_drm', 'the HWP document is DRM-protected; export it without DRM and upload it again', { flag: 'drm' });
  }
  return {
    kind: 'hwp',
    mediaType: MEDIA_TYPES.hwp,
    hwp: { version, compressed: (flags & HWP_FLAGS.compressed) !== 0, distribution: (flags & HWP_FLAGS.distribution) !== 0 },
  };
}

/** HWPX: the ZIP's first local entry is `mimetype`, stored (not deflated), holding application/hwp+zip. */
async function isHwpx(path: string): Promise<boolean> {
  const head = await readHead(path, 30 + 64 + 64);
  if (head.length < 30 || head.readUInt32LE(0) !== 0x04034b50) return false;
  const method = head.readUInt16LE(8);
  const size = head.readUInt32LE(18);
  const nameLen = head.readUInt16LE(26);
  const extraLen = head.readUInt16LE(28);
  const name = head.subarray(30, 30 + nameLen).toString('latin1');
  if (method !== 0 || name !== 'mimetype') return false;
  const start = 30 + nameLen + extraLen;
  const value = head.subarray(start, start + (size || HWPX_MIMETYPE.length)).toString('latin1');
  return value.trim() === HWPX_MIMETYPE;
}

/** Which detected kinds a file name's extension admits (HWP and HWPX are one family: .hwpx files are often HWP 5). */
const NAME_ADMITS: Record<string, readonly DocumentKind[]> = {
  hwp: ['hwp', 'hwpx'],
  hwpx: ['hwpx', 'hwp'],
  pdf: ['pdf'],
  jpg: ['jpg'],
  jpeg: ['jpg'],
  png: ['png'],
};

/**
 * The type of the file at `path`, by content. Throws AppError 415 `unsupported_file_type` naming
 * what was detected, or 422 `document_encrypted` / `document_drm` for an HWP a reviewer cannot open.
 * Distribution HWP documents (read-only, still viewable) are accepted and reported in `hwp`.
 * With `filename`, a name whose extension claims another accepted type (a PDF called .hwp) is 415
 * `type_mismatch`; a name without such an extension leaves the decision to the content.
 */
export async function sniff(path: string, filename?: string): Promise<Sniffed> {
  const found = await sniffContent(path);
  const ext = /\.([A-Za-z0-9]{1,8})$/.exec(filename ?? '')?.[1]?.toLowerCase();
  const admits = ext ? NAME_ADMITS[ext] : undefined;
  if (admits && !admits.includes(found.kind)) {
    throw new AppError('unsupported_media', 'type_mismatch', `the file is named .${ext} but its content is ${found.kind.toUpperCase()}`, {
      detected: found.kind,
      named: ext,
    });
  }
  return found;
}

async function sniffContent(path: string): Promise<Sniffed> {
  const head = await readHead(path, 8);
  if (head.length < 4) throw unsupported(head.length === 0 ? 'empty' : 'too short to be a document');
  if (head.equals(CFB_MAGIC)) return sniffHwp(path);
  if (head.readUInt32LE(0) === 0x04034b50 && (await isHwpx(path))) return { kind: 'hwpx', mediaType: MEDIA_TYPES.hwpx };
  const found = await fileTypeFromFile(path);
  if (!found) throw unsupported('unknown binary or text');
  switch (found.ext) {
    case 'pdf':
    case 'png':
    case 'jpg':
      return { kind: found.ext, mediaType: MEDIA_TYPES[found.ext] };
    case 'zip':
      throw unsupported('zip (not HWPX)');
    default:
      throw unsupported(`${found.ext} (${found.mime})`);
  }
}
