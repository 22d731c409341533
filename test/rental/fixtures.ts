/** The rental form and its three documents, made by the tests (HWP 5 written with `cfb`: test/support/uploads.ts). */
import { makeHwp, makePdf, makePng, multipart } from '../support/uploads.js';

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

/** The same, byte for byte (for bodies fetch would not send: truncated ones). */
export function rawMultipart(fields: Record<string, string>, files: FilePart[]) {
  return multipart([
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
    ...files.map((f) => ({ name: f.field, filename: f.filename, data: f.data, type: f.type })),
  ]);
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
  { field: 'bizCard', filename: '명함.png', data: makePng(), type: 'image/png' },
  { field: 'uniqueNumber', filename: '고유번호증.pdf', data: makePdf(), type: 'application/pdf' },
  // named .hwpx but really HWP 5: accepted, served as HWP
  { field: 'internalResolution', filename: '내부결의서.hwpx', data: makeHwp(), type: 'application/haansofthwp' },
];
