import { DOC_TYPES, type DocType, type RentalStatus } from './catalog.js';

/**
 * The status machine of a rental application (docs/rental.md#status), as pure functions of the
 * documents: every move is computed from the record read inside one atomic store update.
 *
 *   pending --(all three documents present)--> documents_submitted
 *   documents_submitted --(a check)--> under_review
 *   under_review --(all three approved)--> approved     (automatic: the document's rule)
 *   any but approved --(a document rejected)--> rejected
 *   rejected --(the applicant replaces the rejected document(s))--> documents_submitted
 *
 * `approved` is final: no more checks or replacements.
 */

export type Check = 'approved' | 'rejected';

export interface DocumentEntry {
  filename: string;
  size: number;
  mediaType: string;
  check: Check | null;
  reason: string | null;
  checkedAt: string | null;
  uploadedAt: string;
  /** Where the file is served: /api/uploads/:subId/:stored. */
  url: string;
}

export type Documents = Record<DocType, DocumentEntry | null>;

export const emptyDocuments = (): Documents => ({ bizCard: null, uniqueNumber: null, internalResolution: null });

const present = (docs: Documents) => DOC_TYPES.every((t) => docs[t] !== null);

/** Status after an upload (a first upload or a replacement, which clears that document's check). */
export function statusAfterUpload(docs: Documents): RentalStatus {
  if (!present(docs)) return 'pending';
  if (DOC_TYPES.some((t) => docs[t]!.check === 'rejected')) return 'rejected';
  return 'documents_submitted';
}

/** Status after a partner's check. */
export function statusAfterCheck(docs: Documents): RentalStatus {
  if (!present(docs)) return 'pending';
  if (DOC_TYPES.every((t) => docs[t]!.check === 'approved')) return 'approved';
  if (DOC_TYPES.some((t) => docs[t]!.check === 'rejected')) return 'rejected';
  return 'under_review';
}
