/** Documents made by the tests themselves: a real HWP 5 compound file, a PDF, a PNG, an executable. */
import { randomBytes } from 'node:crypto';
import CFB from 'cfb';

/** An HWP 5 compound file written with `cfb`: a 256-byte `FileHeader` stream ("HWP Document File", version 5.1.0.1, flags) and a body. */
export function hwp(flags = 1, bodyBytes = 4096): Buffer {
  const header = Buffer.alloc(256);
  header.write('HWP Document File', 0, 'latin1');
  header.writeUInt32LE(0x05010001, 32);
  header.writeUInt32LE(flags, 36);
  const doc = CFB.utils.cfb_new();
  CFB.utils.cfb_add(doc, '/FileHeader', header);
  CFB.utils.cfb_add(doc, '/DocInfo', randomBytes(64));
  CFB.utils.cfb_add(doc, '/BodyText/Section0', randomBytes(bodyBytes));
  return Buffer.from(CFB.write(doc, { type: 'buffer' }) as Uint8Array);
}

export function pdf(): Buffer {
  return Buffer.from(
    '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
    'latin1',
  );
}

export function png(): Buffer {
  // 1x1 transparent PNG
  return Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
}

/** A Windows executable's first bytes (MZ, PE header): what a renamed .exe looks like. */
export function exe(): Buffer {
  const b = Buffer.alloc(512);
  b.write('MZ', 0, 'latin1');
  b.writeUInt32LE(0x80, 0x3c);
  b.write('PE\0\0', 0x80, 'latin1');
  b.writeUInt16LE(0x14c, 0x84);
  return b;
}

export interface FilePart {
  field: string;
  filename: string;
  data: Buffer;
  type?: string;
}

/** A multipart/form-data body as fetch sends it. */
export function form(fields: Record<string, string | undefined>, files: FilePart[]): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) fd.append(k, v);
  for (const f of files) fd.append(f.field, new Blob([new Uint8Array(f.data)], { type: f.type ?? 'application/octet-stream' }), f.filename);
  return fd;
}

/** The same, written by hand (for bodies fetch would not send: truncated ones). */
export function rawMultipart(fields: Record<string, string>, files: FilePart[], boundary = `----maru${randomBytes(8).toString('hex')}`) {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  for (const f of files) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${f.field}"; filename="${f.filename}"\r\nContent-Type: ${f.type ?? 'application/octet-stream'}\r\n\r\n`));
    parts.push(f.data, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

export const applicant = {
  type: 'rental-ipa',
  applicantType: 'government',
  organization: '서울중앙초등학교',
  department: '행정실',
  contactName: '김담당',
  contactPhone: '010-1234-5678',
  email: 'kim@school.kr',
  buildingType: 'office',
  remarks: '3층 건물',
};

export const threeFiles = (): FilePart[] => [
  { field: 'bizCard', filename: '명함.png', data: png(), type: 'image/png' },
  { field: 'uniqueNumber', filename: '고유번호증.pdf', data: pdf(), type: 'application/pdf' },
  // named .hwpx but really HWP 5: accepted, served as HWP
  { field: 'internalResolution', filename: '내부결의서.hwpx', data: hwp(), type: 'application/haansofthwp' },
];
