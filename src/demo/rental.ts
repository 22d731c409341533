import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import CFB from 'cfb';
import { deflateSync } from 'node:zlib';
import type { BlobStore } from '../blobs/index.js';
import { parseIntakeInput } from '../intake/index.js';
import type { Actor, RentalService, StoredFile, DocType } from '../rental/index.js';

/**
 * The demo's rental applications, one in each status the partner sees (pending, documents_submitted,
 * under_review, rejected with a reason, approved), each with real files (an HWP compound file, a
 * PDF, a PNG) stored in the rental service's blob store and the partner's checks made through the
 * service, so the review history and audit trail are the service's own.
 */

export interface RentalDemoState {
  /** Application ids in the order of APPLICATIONS (the receipt numbers come from intake). */
  applications: string[];
  receipts: string[];
  /** The access key of the rejected application (index 3), so the demo applicant can replace its document. */
  applicant_key?: string;
}

/** The demo partner (signs in to /partner.html); the checks are made in its name. */
export const DEMO_PARTNER: Actor = { id: 'demo-partner', name: '렌탈 검토자' };

type Plan = { organization: string; type: 'rental-ipa' | 'rental-db'; buildingType: string; files: DocType[]; checks: [DocType, 'approved' | 'rejected', string?][] };

const ALL: DocType[] = ['bizCard', 'uniqueNumber', 'internalResolution'];
export const APPLICATIONS: Plan[] = [
  { organization: '마루시청 총무과', type: 'rental-ipa', buildingType: 'office', files: ['bizCard'], checks: [] },
  { organization: '한빛초등학교', type: 'rental-db', buildingType: 'school', files: ALL, checks: [] },
  { organization: '누리구청 안전과', type: 'rental-ipa', buildingType: 'office', files: ALL, checks: [['bizCard', 'approved']] },
  { organization: '가람중학교', type: 'rental-db', buildingType: 'school', files: ALL, checks: [['bizCard', 'approved'], ['internalResolution', 'rejected', '내부결재 문서에 결재자 서명이 없습니다']] },
  { organization: '다온도서관', type: 'rental-ipa', buildingType: 'culture', files: ALL, checks: ALL.map((d) => [d, 'approved'] as [DocType, 'approved']) },
];

/**
 * An HWP 5 compound file, as the cfb package writes it: a FileHeader stream (256 bytes: the
 * signature, version 5.1.0.1, `flags`), a DocInfo and a body section of `bodyBytes` (the tests'
 * upload fixtures are made by it too).
 */
export function demoHwp(flags = 1, bodyBytes = 4096): Buffer {
  const header = Buffer.alloc(256);
  header.write('HWP Document File', 0, 'latin1');
  header.writeUInt32LE(0x05010001, 32);
  header.writeUInt32LE(flags, 36);
  const cfb = CFB.utils.cfb_new();
  CFB.utils.cfb_add(cfb, '/FileHeader', header);
  CFB.utils.cfb_add(cfb, '/DocInfo', randomBytes(64));
  CFB.utils.cfb_add(cfb, '/BodyText/Section0', randomBytes(bodyBytes));
  return Buffer.from(CFB.write(cfb, { type: 'buffer' }) as Uint8Array);
}

/** A one-page PDF with a line of text. */
export function demoPdf(text: string): Buffer {
  const content = `BT /F1 18 Tf 72 720 Td (${text.replace(/[()\\]/g, '')}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

/** A small PNG (a two-colour 32x32 stamp). */
export function demoPng(): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Buffer) => {
    let c = 0xffffffff;
    for (const x of b) c = crcTable[(c ^ x) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const size = 32;
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.writeUInt8(8, 8); // bit depth
  ihdr.writeUInt8(2, 9); // RGB
  const rows: Buffer[] = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 3);
    for (let x = 0; x < size; x++) row.set((x + y) % 8 < 4 ? [0xc0, 0x39, 0x2b] : [0xff, 0xff, 0xff], 1 + x * 3);
    rows.push(row);
  }
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.concat(rows))), chunk('IEND', Buffer.alloc(0))]);
}

/** The file each document is made of: the business card as PNG, the unique number as PDF, the resolution as HWP. */
const FILES: Record<DocType, { name: string; mediaType: string; make: (org: string) => Buffer }> = {
  bizCard: { name: '사업자등록증.png', mediaType: 'image/png', make: () => demoPng() },
  uniqueNumber: { name: '고유번호증.pdf', mediaType: 'application/pdf', make: () => demoPdf('Unique number certificate (demo)') },
  internalResolution: { name: '내부결재.hwp', mediaType: 'application/x-hwp', make: () => demoHwp() },
};

async function store(blobs: BlobStore, field: DocType, org: string): Promise<StoredFile> {
  const f = FILES[field];
  const body = f.make(org);
  const { key, size } = await blobs.put(Readable.from([body]), { contentType: f.mediaType });
  return { field, filename: f.name, size, mediaType: f.mediaType, blobKey: key };
}

/**
 * Seeds the applications missing from `state` (by index), through RentalService.submit and
 * RentalService.check; `save` is called after each so a crash half-way seeds only the rest.
 */
export async function seedRental(rental: RentalService, blobs: BlobStore, state: RentalDemoState, save: () => Promise<unknown>): Promise<void> {
  for (let i = state.applications.length; i < APPLICATIONS.length; i++) {
    const plan = APPLICATIONS[i]!;
    const files: StoredFile[] = [];
    for (const field of plan.files) files.push(await store(blobs, field, plan.organization));
    const { application, accessKey } = await rental.submit(
      parseIntakeInput({
        type: plan.type,
        applicantType: 'government',
        organization: plan.organization,
        department: '시설관리팀',
        contactName: '담당자',
        contactPhone: `010-5550-${String(1000 + i)}`,
        buildingType: plan.buildingType,
        remarks: '데모 신청',
      }),
      files,
    );
    state.applications.push(application.id);
    state.receipts.push(application.receiptNo);
    if (plan.checks.some(([, r]) => r === 'rejected')) state.applicant_key = accessKey;
    await save();
    for (const [doc, result, reason] of plan.checks) {
      await rental.check(application.id, doc, { result, ...(reason ? { reason } : {}) }, DEMO_PARTNER, 'demo');
    }
  }
}
