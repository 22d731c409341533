import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DOC_TYPES, type DocType } from '../../src/rental/catalog.js';
import { emptyDocuments, statusAfterCheck, statusAfterUpload, type Check, type DocumentEntry, type Documents } from '../../src/rental/status.js';

// The rental status machine as pure functions of the three documents (doc1 "Rental application
// status"; docs/rental.md#status): all three approved -> approved, automatically.

const entry = (check: Check | null): DocumentEntry => ({
  filename: 'a.pdf',
  size: 1,
  mediaType: 'application/pdf',
  check,
  reason: check === 'rejected' ? 'blurred' : null,
  checkedAt: check ? '2026-11-22T00:00:00.000Z' : null,
  uploadedAt: '2026-11-22T00:00:00.000Z',
  url: '/api/uploads/s/a.pdf',
});
const docs = (...checks: (Check | null | 'absent')[]): Documents => {
  const d = emptyDocuments();
  DOC_TYPES.forEach((t, i) => {
    const c = i < checks.length ? checks[i]! : 'absent';
    d[t] = c === 'absent' ? null : entry(c);
  });
  return d;
};

describe('rental status', () => {
  it('there are three documents and they start empty', () => {
    expect(DOC_TYPES).toEqual(['bizCard', 'uniqueNumber', 'internalResolution']);
    expect(emptyDocuments()).toEqual({ bizCard: null, uniqueNumber: null, internalResolution: null });
    expect(emptyDocuments()).not.toBe(emptyDocuments());
  });

  it('after an upload: pending until all three are present, then submitted (or rejected while one stays rejected)', () => {
    expect(statusAfterUpload(docs())).toBe('pending');
    expect(statusAfterUpload(docs(null))).toBe('pending');
    expect(statusAfterUpload(docs(null, null))).toBe('pending');
    expect(statusAfterUpload(docs(null, null, null))).toBe('documents_submitted');
    expect(statusAfterUpload(docs('absent', null, null))).toBe('pending');
    expect(statusAfterUpload(docs(null, 'absent', null))).toBe('pending');
    expect(statusAfterUpload(docs('approved', 'approved', null))).toBe('documents_submitted');
    expect(statusAfterUpload(docs('rejected', null, null))).toBe('rejected');
    expect(statusAfterUpload(docs(null, null, 'rejected'))).toBe('rejected');
    expect(statusAfterUpload(docs('rejected', 'absent', null))).toBe('pending');
  });

  it('after a check: approved needs all three approved (two are not enough)', () => {
    expect(statusAfterCheck(docs('approved', 'approved', 'approved'))).toBe('approved');
    expect(statusAfterCheck(docs('approved', 'approved', null))).toBe('under_review');
    expect(statusAfterCheck(docs(null, 'approved', 'approved'))).toBe('under_review');
    expect(statusAfterCheck(docs('approved', 'approved', 'rejected'))).toBe('rejected');
    expect(statusAfterCheck(docs('rejected', null, null))).toBe('rejected');
    expect(statusAfterCheck(docs(null, null, null))).toBe('under_review');
    expect(statusAfterCheck(docs('approved', 'approved'))).toBe('pending');
    expect(statusAfterCheck(docs('absent', 'approved', 'approved'))).toBe('pending');
  });

  it('matches the model for every combination of the three documents', () => {
    const state = fc.constantFrom<Check | null | 'absent'>('absent', null, 'approved', 'rejected');
    fc.assert(
      fc.property(state, state, state, (a, b, c) => {
        const all = [a, b, c];
        const d = docs(a, b, c);
        const present = all.every((x) => x !== 'absent');
        const rejected = all.some((x) => x === 'rejected');
        const approved = all.every((x) => x === 'approved');
        expect(statusAfterUpload(d)).toBe(!present ? 'pending' : rejected ? 'rejected' : 'documents_submitted');
        expect(statusAfterCheck(d)).toBe(!present ? 'pending' : approved ? 'approved' : rejected ? 'rejected' : 'under_review');
      }),
    );
  });

  it('document order does not matter', () => {
    const types: DocType[] = [...DOC_TYPES];
    for (const rejectedAt of types) {
      const d = docs('approved', 'approved', 'approved');
      d[rejectedAt] = entry('rejected');
      expect(statusAfterCheck(d)).toBe('rejected');
      expect(statusAfterUpload(d)).toBe('rejected');
    }
  });
});
