import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { HWP_FLAGS, sniff } from '../../src/uploads/index.js';
import { makeExe, makeHwp, makeHwpx, makeJpg, makeOtherCfb, makePdf, makePng, makeZip, fileWriter } from '../support/uploads.js';
import { refusal as refused } from '../support/refusal.js';

const file = fileWriter('maru-sniff-');
const refusal = (p: Promise<unknown>) => refused(p, { details: true });

describe('sniff: the type by content', () => {
  it('reads an HWP 5 compound file through its FileHeader stream', async () => {
    const s = await sniff(file(makeHwp(HWP_FLAGS.compressed)), '신청서.hwp');
    expect(s).toEqual({ kind: 'hwp', mediaType: 'application/x-hwp', hwp: { version: '5.1.0.1', compressed: true, distribution: false } });
  });

  it('takes a file named .hwpx that is really HWP 5 as HWP', async () => {
    expect((await sniff(file(makeHwp()), 'resolution.hwpx')).kind).toBe('hwp');
  });

  it('recognises HWPX by its first stored mimetype entry', async () => {
    expect(await sniff(file(makeHwpx()), 'a.hwpx')).toEqual({ kind: 'hwpx', mediaType: 'application/hwp+zip' });
  });

  it('recognises PDF, JPEG and PNG whatever the name (or none)', async () => {
    expect((await sniff(file(makePdf()), 'scan.pdf')).mediaType).toBe('application/pdf');
    expect((await sniff(file(makeJpg()), 'card.JPEG')).kind).toBe('jpg');
    expect((await sniff(file(makePng()))).kind).toBe('png');
    expect((await sniff(file(makePdf()), 'noextension')).kind).toBe('pdf');
  });

  it('refuses password-protected and DRM HWP with 422, accepts distribution documents', async () => {
    const pw = await refusal(sniff(file(makeHwp(HWP_FLAGS.compressed | HWP_FLAGS.password)), 'x.hwp'));
    expect([pw.status, pw.code]).toEqual([422, 'document_encrypted']);
    const drm = await refusal(sniff(file(makeHwp(HWP_FLAGS.drm)), 'x.hwp'));
    expect([drm.status, drm.code]).toEqual([422, 'document_drm']);
    expect((await sniff(file(makeHwp(HWP_FLAGS.distribution)), 'x.hwp')).hwp?.distribution).toBe(true);
  });

  it('refuses anything else with 415 naming what was detected', async () => {
    const exe = await refusal(sniff(file(makeExe()), 'resume.hwp'));
    expect([exe.status, exe.code]).toEqual([415, 'unsupported_file_type']);
    expect((exe.details as { detected: string }).detected).toMatch(/^exe/);
    const zip = await refusal(sniff(file(makeZip([['a.txt', 'hello']])), 'a.hwpx'));
    expect((zip.details as { detected: string }).detected).toMatch(/zip/);
    const doc = await refusal(sniff(file(makeOtherCfb()), 'a.hwp'));
    expect((doc.details as { detected: string }).detected).toMatch(/not HWP/);
    const text = await refusal(sniff(file(Buffer.from('just some text, not a document')), 'a.pdf'));
    expect(text.status).toBe(415);
    const empty = await refusal(sniff(file(Buffer.alloc(0)), 'a.pdf'));
    expect((empty.details as { detected: string }).detected).toBe('empty');
    // an HWPX whose mimetype entry says something else is just a zip
    const fake = await refusal(sniff(file(makeZip([['mimetype', 'application/epub+zip']])), 'a.hwpx'));
    expect(fake.status).toBe(415);
  });

  it('refuses a PDF called .hwp (the name claims another accepted type)', async () => {
    const e = await refusal(sniff(file(makePdf()), 'application.hwp'));
    expect([e.status, e.code, e.details]).toEqual([415, 'type_mismatch', { detected: 'pdf', named: 'hwp' }]);
  });
});

describe('sniff on damaged compound files', () => {
  it('answers every mutation of an HWP file with a type or a 4xx, never another error', async () => {
    const { default: fc } = await import('fast-check');
    const base = makeHwp();
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ at: fc.oneof(fc.nat({ max: 511 }), fc.nat({ max: base.length - 1 })), byte: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 40 }),
        fc.option(fc.nat({ max: base.length }), { nil: undefined }),
        async (edits, cut) => {
          const b = Buffer.from(base);
          for (const e of edits) if (e.at >= 8) b[e.at] = e.byte; // keep the magic: exercise the compound file reader (half the edits hit its 512-byte header)
          const p = file(cut === undefined ? b : b.subarray(0, Math.max(8, cut)));
          try {
            const s = await sniff(p, 'x.hwp');
            expect(s.kind).toBe('hwp');
          } catch (err) {
            expect(err).toBeInstanceOf(AppError);
            expect([415, 422]).toContain((err as AppError).status);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
