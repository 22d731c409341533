/** Upload fixtures made by the tests themselves, and a raw multipart/form-data builder. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import CFB from 'cfb';
import { demoHwp } from '../../src/demo/rental.js';

/** An HWP 5 compound file: a `FileHeader` stream (signature, version 5.1.0.1, flags) and a body stream of 4096 + `extraBytes`. */
export const makeHwp = (flags = 1, extraBytes = 0): Buffer => demoHwp(flags, 4096 + extraBytes);

/** A compound file that is not HWP (no FileHeader stream), as a Word 97 document would be. */
export function makeOtherCfb(): Buffer {
  const cfb = CFB.utils.cfb_new();
  CFB.utils.cfb_add(cfb, '/WordDocument', randomBytes(8192));
  return Buffer.from(CFB.write(cfb, { type: 'buffer' }) as Uint8Array);
}

/** One stored (method 0) ZIP entry: local header + data; `central` collects the directory entries. */
function zipEntry(name: string, data: Buffer, offset: number, central: Buffer[]): Buffer {
  const crc = crc32(data);
  const n = Buffer.from(name, 'utf8');
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(0, 6);
  local.writeUInt16LE(0, 8); // stored
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(n.length, 26);
  local.writeUInt16LE(0, 28);
  const dir = Buffer.alloc(46);
  dir.writeUInt32LE(0x02014b50, 0);
  dir.writeUInt16LE(20, 4);
  dir.writeUInt16LE(20, 6);
  dir.writeUInt32LE(crc, 16);
  dir.writeUInt32LE(data.length, 20);
  dir.writeUInt32LE(data.length, 24);
  dir.writeUInt16LE(n.length, 28);
  dir.writeUInt32LE(offset, 42);
  central.push(Buffer.concat([dir, n]));
  return Buffer.concat([local, n, data]);
}

/** A ZIP of stored entries, written by hand. */
export function makeZip(entries: Array<[string, Buffer | string]>): Buffer {
  const central: Buffer[] = [];
  const parts: Buffer[] = [];
  let offset = 0;
  for (const [name, data] of entries) {
    const e = zipEntry(name, Buffer.isBuffer(data) ? data : Buffer.from(data), offset, central);
    parts.push(e);
    offset += e.length;
  }
  const dir = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, dir, end]);
}

/** HWPX: first entry `mimetype` (stored) = application/hwp+zip, then the package files. */
export function makeHwpx(): Buffer {
  return makeZip([
    ['mimetype', 'application/hwp+zip'],
    ['version.xml', '<?xml version="1.0" encoding="UTF-8"?><hv:HCFVersion xmlns:hv="http://www.hancom.co.kr/hwpml/2011/version" major="5" minor="1"/>'],
    ['Contents/content.hpf', '<?xml version="1.0" encoding="UTF-8"?><opf:package xmlns:opf="http://www.idpf.org/2007/opf/"/>'],
    ['Contents/section0.xml', '<?xml version="1.0" encoding="UTF-8"?><hs:sec xmlns:hs="http://www.hancom.co.kr/hwpml/2011/section"/>'],
  ]);
}

export function makePdf(padding = 0): Buffer {
  const body = '%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [] /Count 0>> endobj\n';
  return Buffer.concat([Buffer.from(body), Buffer.alloc(padding, 0x20), Buffer.from('trailer <</Root 1 0 R>>\n%%EOF\n')]);
}

export function makePng(): Buffer {
  return Buffer.from(
    '89504e470d0a1a0a0000000d4948445200000001000000010806000000' + '1f15c4890000000d4944415478da63f8cfc0f01f0005000201a2dd2d1a0000000049454e44ae426082',
    'hex',
  );
}

export function makeJpg(): Buffer {
  return Buffer.concat([Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex'), randomBytes(256), Buffer.from('ffd9', 'hex')]);
}

/** The start of a Windows executable (MZ ... PE). */
export function makeExe(): Buffer {
  const b = Buffer.alloc(512);
  b.write('MZ', 0, 'latin1');
  b.writeUInt32LE(0x80, 0x3c);
  b.write('PE\0\0', 0x80, 'latin1');
  return b;
}

/** The EICAR anti-virus test file (harmless; every scanner reports it). */
export const EICAR = Buffer.from('X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*', 'latin1');

export type Part =
  | { name: string; value: string }
  | { name: string; filename: string; data: Buffer; type?: string };

/** A multipart/form-data body, byte for byte (file names are written as given, paths included). */
export function multipart(parts: Part[], boundary = `----maru${randomBytes(8).toString('hex')}`): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    if ('filename' in p) {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: ${p.type ?? 'application/octet-stream'}\r\n\r\n`,
        ),
        p.data,
        Buffer.from('\r\n'),
      );
    } else {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A writer of files in a temporary directory of the test file's own (removed after its tests): each call writes one and returns its path. */
export function fileWriter(prefix: string): (data: Buffer) => string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  return (data) => {
    const p = join(dir, `f${n++}`);
    writeFileSync(p, data);
    return p;
  };
}
