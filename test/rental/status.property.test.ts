import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/blobs/fs.js';
import { createBus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { parseIntakeInput } from '../../src/intake/input.js';
import { IntakeService } from '../../src/intake/service.js';
import { DOC_TYPES, STATUSES, type DocType } from '../../src/rental/catalog.js';
import { Review } from '../../src/rental/review.js';
import { RentalService } from '../../src/rental/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// Random sequences of partner checks and applicant uploads against a simple model of the rules:
// the status always follows the documents, `approved` is final, and the per-status indexes (the
// counters and the status filter) always agree with the records.
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

type Op =
  | { kind: 'check'; doc: DocType; result: 'approved' | 'rejected' }
  | { kind: 'upload'; doc: DocType };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('check' as const), doc: fc.constantFrom(...DOC_TYPES), result: fc.constantFrom('approved' as const, 'rejected' as const) }),
  fc.record({ kind: fc.constant('upload' as const), doc: fc.constantFrom(...DOC_TYPES) }),
);

interface ModelDoc {
  present: boolean;
  check: 'approved' | 'rejected' | null;
}

function modelStatus(docs: Record<DocType, ModelDoc>, prev: string, after: 'check' | 'upload'): string {
  const all = DOC_TYPES.map((d) => docs[d]);
  if (all.some((d) => !d.present)) return 'pending';
  if (all.some((d) => d.check === 'rejected')) return 'rejected';
  if (after === 'check' && all.every((d) => d.check === 'approved')) return 'approved';
  return after === 'check' ? 'under_review' : 'documents_submitted';
}

describe('rental status machine (property)', () => {
  it('follows the documents, keeps approved final, and keeps the status indexes true', async () => {
    const store = await openLmdbStore({ path: tempDir('rental-prop') });
    stores.push(store);
    const blobs = await new FsBlobStore(tempDir('rental-prop-blobs')).init();
    const clock = new ManualClock(Date.parse('2026-11-22T10:00:00+09:00'));
    const intake = new IntakeService({ store, clock });
    const service = new RentalService({ intake, store, clock, bus: createBus(store, 'prop'), blobs });
    const review = new Review(store, intake);
    const file = async (doc: DocType) => {
      const { key, size } = await blobs.put(Readable.from([Buffer.from(doc)]));
      return { field: doc, filename: `${doc}.pdf`, size, mediaType: 'application/pdf', blobKey: key };
    };
    const partner = { id: 'partner', name: 'p' };

    await fc.assert(
      fc.asyncProperty(fc.subarray([...DOC_TYPES]), fc.array(op, { maxLength: 12 }), async (initial, ops) => {
        clock.advance(1000);
        const files = await Promise.all(initial.map(file));
        const { application, accessKey } = await service.submit(
          parseIntakeInput({ type: 'rental-ipa', applicantType: 'government', contactPhone: '010-1234-5678' }),
          files,
        );
        const docs = Object.fromEntries(DOC_TYPES.map((d) => [d, { present: initial.includes(d), check: null }])) as Record<DocType, ModelDoc>;
        let status = DOC_TYPES.every((d) => docs[d].present) ? 'documents_submitted' : 'pending';
        expect(application.status).toBe(status);
        for (const o of ops) {
          let refused: string | undefined;
          let got: string | undefined;
          try {
            got =
              o.kind === 'check'
                ? (await service.check(application.id, o.doc, { result: o.result, reason: o.result === 'rejected' ? '다시' : undefined }, partner, 'c')).status
                : (await service.replace(application.id, o.doc, accessKey, await file(o.doc))).status;
          } catch (err) {
            if (!(err instanceof AppError)) throw err;
            refused = err.code;
          }
          // the model's answer
          if (status === 'approved') {
            expect(refused).toBe('application_closed');
            continue;
          }
          if (o.kind === 'check') {
            if (!docs[o.doc].present) {
              expect(refused).toBe('document_missing');
              continue;
            }
            if (docs[o.doc].check === o.result) {
              expect(got).toBe(status); // the same decision again changes nothing
              continue;
            }
            docs[o.doc].check = o.result;
            status = modelStatus(docs, status, 'check');
          } else {
            if (docs[o.doc].check === 'approved') {
              expect(refused).toBe('document_approved');
              continue;
            }
            docs[o.doc] = { present: true, check: null };
            status = modelStatus(docs, status, 'upload');
          }
          expect(refused).toBeUndefined();
          expect(got).toBe(status);
        }
        // the indexes agree with the records
        const counters = await review.counters();
        let sum = 0;
        for (const s of STATUSES) {
          const listed = await review.list({ status: s, page: 1, pageSize: 100 });
          for (const item of listed.items) expect(item.status).toBe(s);
          expect(listed.matched).toBe(counters[s]);
          sum += counters[s];
        }
        expect(sum).toBe(counters.total);
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});
