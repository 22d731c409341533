import { describe, expect, it } from 'vitest';
import { EXTENSIONS, STORED_NAME_RE, blobKeyOf } from '../../src/rental/files.js';

// The served name of a stored document is exactly `<22-character blob key>.<extension>`
// (src/rental/files.ts): the download route refuses anything else, and the key read back from a
// document's url names the blob the service deletes on re-upload.

const KEY = 'AbCdEfGhIjKlMnOpQrSt_-';

describe('stored document names', () => {
  it('maps each accepted media type to its extension', () => {
    expect(EXTENSIONS).toEqual({
      'application/x-hwp': 'hwp',
      'application/hwp+zip': 'hwpx',
      'application/pdf': 'pdf',
      'image/jpeg': 'jpg',
      'image/png': 'png',
    });
  });

  it('accepts a 22-character key with each extension', () => {
    expect(KEY).toHaveLength(22);
    for (const ext of ['hwp', 'hwpx', 'pdf', 'jpg', 'png']) {
      expect(STORED_NAME_RE.test(`${KEY}.${ext}`), ext).toBe(true);
    }
  });

  it('refuses anything before the key or after the extension (both anchors hold)', () => {
    expect(STORED_NAME_RE.test(`x${KEY}.pdf`)).toBe(false);
    expect(STORED_NAME_RE.test(`../${KEY}.pdf`)).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY}.pdfx`)).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY}.pdf/x`)).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY}.pdf\n`)).toBe(false);
  });

  it('refuses keys of another length or alphabet, and other extensions', () => {
    expect(STORED_NAME_RE.test(`${KEY.slice(1)}.pdf`)).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY}a.pdf`)).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY.slice(1)}.pdf`.replace(/^/, '.'))).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY.slice(0, 21)}+.pdf`)).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY}.exe`)).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY}.PDF`)).toBe(false);
    expect(STORED_NAME_RE.test(`${KEY}pdf`)).toBe(false);
  });

  it('reads the blob key from the last segment of a document url', () => {
    expect(blobKeyOf(`/api/uploads/SUB-1/${KEY}.pdf`)).toBe(KEY);
    expect(blobKeyOf(`${KEY}.hwpx`)).toBe(KEY);
    expect(blobKeyOf(`/api/uploads/SUB-1/x${KEY}.pdf`)).toBe('');
    expect(blobKeyOf(`/api/uploads/SUB-1/${KEY}.pdf.exe`)).toBe('');
    expect(blobKeyOf('')).toBe('');
  });
});
