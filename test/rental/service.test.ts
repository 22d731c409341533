import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/blobs/fs.js';
import { sweepOrphanBlobs } from '../../src/blobs/sweep.js';
import { createBus, type BusMessage } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { parseIntakeInput } from '../../src/intake/input.js';
import { IntakeService, K as IK, recordKey } from '../../src/intake/service.js';
import { OUTBOX_CREATED, outboxKey, outboxPartition } from '../../src/outbox.js';
import { PartnerAudit } from '../../src/rental/audit.js';
import { feesFor } from '../../src/rental/catalog.js';
import type { StoredFile } from '../../src/rental/files.js';
import { Review } from '../../src/rental/review.js';
import { PARTNER_TOPIC, RentalService } from '../../src/rental/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { across, mergedIndexRange, summedIndexCount, type Store } from '../../src/store/port.js';
import { openRedisStore } from '../../src/store/redis.js';
import { tempDir } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

const redis = await redisOrSkip();
const stores: Store[] = [];
const prefixes: string[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

const T0 = Date.parse('2026-11-22T10:00:00+09:00');
const partner = { id: 'partner', name: '렌탈 파트너' };

function harness(store: Store, blobs: FsBlobStore, clock = new ManualClock(T0)) {
  const bus = createBus(store, `t-${Math.random()}`);
  const messages: BusMessage[] = [];
  bus.onMessage((m) => messages.push(m));
  const intake = new IntakeService({ store, clock });
  const service = new RentalService({ intake, store, clock, bus, blobs });
  const review = new Review(store, intake);
  const stage = async (field: string, mediaType = 'application/x-hwp', filename = `${field}.hwp`): Promise<StoredFile> => {
    const { key, size } = await blobs.put(Readable.from([Buffer.from(`content of ${field}`)]));
    return { field, filename, size, mediaType, blobKey: key };
  };
  const three = () => Promise.all(['bizCard', 'uniqueNumber', 'internalResolution'].map((f) => stage(f)));
  return { store, blobs, clock, bus, messages, intake, service, review, stage, three };
}

async function lmdbHarness() {
  const store = await openLmdbStore({ path: tempDir('rental') });
  stores.push(store);
  return harness(store, await new FsBlobStore(tempDir('rental-blobs')).init());
}

// the service takes the input the hub's body schema parsed (src/intake/input.ts)
const form = (extra: Record<string, unknown> = {}) => parseIntakeInput({
  type: 'rental-ipa',
  applicantType: 'government',
  organization: '서울중앙초등학교',
  department: '행정실',
  contactName: '김담당',
  contactPhone: '010-1234-5678',
  email: 'kim@school.kr',
  buildingType: 'office',
  ...extra,
});

const error = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, code: err.code, message: err.message, details: err.details as any };
    throw err;
  }
  throw new Error('expected an AppError');
};

/** Keys of every stored blob. */
async function stored(blobs: FsBlobStore): Promise<string[]> {
  const out: string[] = [];
  for await (const b of blobs.list()) out.push(b.key);
  return out;
}

describe('fees', () => {
  it('SOL-702 is set by the building type from 300000; SOL-701 is 830000; total is fee x 36', () => {
    expect(feesFor('rental-ipa', null)).toEqual({ monthlyFee: 300_000, termMonths: 36, totalFee: 10_800_000 });
    expect(feesFor('rental-ipa', 'school').monthlyFee).toBe(300_000);
    expect(feesFor('rental-ipa', 'office')).toEqual({ monthlyFee: 350_000, termMonths: 36, totalFee: 12_600_000 });
    expect(feesFor('rental-db', 'office')).toEqual({ monthlyFee: 830_000, termMonths: 36, totalFee: 29_880_000 });
  });
});

describe('RentalService', () => {
  it('takes an application with three documents: product, fee, documents_submitted, receipt mail queued, files committed', async () => {
    const h = await lmdbHarness();
    const { application, accessKey } = await h.service.submit(form(), await h.three());
    expect(application).toMatchObject({
      type: 'rental-ipa',
      applicantType: 'government',
      product: { code: 'SOL-702', badge: 'ipa' },
      status: 'documents_submitted',
      monthlyFee: 350_000,
      termMonths: 36,
      totalFee: 12_600_000,
      buildingType: 'office',
    });
    expect(accessKey).toMatch(/^ak_/);
    const docs = application.documents as any;
    expect(docs.bizCard).toMatchObject({ filename: 'bizCard.hwp', mediaType: 'application/x-hwp', check: null, reason: null, checkedAt: null });
    expect(docs.bizCard.url).toMatch(new RegExp(`^/api/uploads/${application.id}/[\\w-]{22}\\.hwp$`));
    expect(await stored(h.blobs)).toHaveLength(3);
    for (const k of await stored(h.blobs)) expect(await h.service.references(k)).toBe(true);
    const file = await h.service.file(application.id, docs.bizCard.url.split('/').pop(), { partner: true });
    expect(file.size).toBe('content of bizCard'.length);
    file.stream.destroy();
    expect(await h.store.get(outboxKey(`mail:rental:${application.id}:receipt`, outboxPartition(recordKey(application.id))))).toMatchObject({ dest: 'mail', payload: { to: 'kim@school.kr' } });
    expect(h.messages.filter((m) => m.topic === PARTNER_TOPIC).map((m) => (m.message as any).kind)).toEqual(['application']);
    expect((await h.review.counters())).toMatchObject({ total: 1, documents_submitted: 1, pending: 0 });
  });

  it('the orphan sweep deletes blobs no application names (a crash between storing and recording) and keeps the rest', async () => {
    const h = await lmdbHarness();
    const { application } = await h.service.submit(form(), await h.three());
    const orphan = await h.stage('bizCard'); // stored, then the process died before the record
    const removed = await sweepOrphanBlobs(h.blobs, (k) => h.service.references(k), { graceMs: 0, now: Date.now() + 1000 });
    expect(removed).toEqual([orphan.blobKey]);
    expect(await stored(h.blobs)).toHaveLength(3);
    const url = (application.documents as any).uniqueNumber.url as string;
    const file = await h.service.file(application.id, url.split('/').pop()!, { partner: true });
    file.stream.destroy();
  });

  it('SOL-701 is 830000 a month whatever the building', async () => {
    const h = await lmdbHarness();
    const { application } = await h.service.submit(form({ type: 'rental-db', buildingType: undefined }), await h.three());
    expect(application).toMatchObject({ product: { code: 'SOL-701', badge: 'db' }, monthlyFee: 830_000, totalFee: 29_880_000, buildingType: null });
  });

  it.each([
    [{ applicantType: 'business' }, 400, 'applicant_type_mismatch'],
    [{ applicantType: undefined }, 400, 'applicant_type_mismatch'],
    [{ buildingType: 'castle' }, 400, 'invalid_body'],
    [{ type: 'chat' }, 400, 'unexpected_files'],
  ])('refuses %j with %i %s; nothing stored, staged files removed', async (extra, status, code) => {
    const h = await lmdbHarness();
    const files = await h.three();
    expect(await stored(h.blobs)).toHaveLength(3);
    expect(await error(h.service.submit(form(extra), files))).toMatchObject({ status, code });
    expect(await stored(h.blobs)).toEqual([]);
    expect(await summedIndexCount(h.store, across(IK.all))).toBe(0);
    expect(await summedIndexCount(h.store, across(OUTBOX_CREATED))).toBe(0);
  });

  it('refuses a duplicated or unknown file field and files on an intake type without documents', async () => {
    const h = await lmdbHarness();
    expect(await error(h.service.submit(form(), [await h.stage('bizCard'), await h.stage('bizCard')]))).toMatchObject({ status: 400, code: 'duplicate_field' });
    expect(await error(h.service.submit(form(), [await h.stage('photo')]))).toMatchObject({ status: 400, code: 'unknown_field' });
    expect(await error(h.service.submit(parseIntakeInput({ type: 'chat', contactPhone: '010-1234-5678' }), [await h.stage('bizCard')]))).toMatchObject({ status: 400, code: 'unexpected_files' });
    expect(await stored(h.blobs)).toEqual([]);
    expect(await summedIndexCount(h.store, across(IK.all))).toBe(0);
  });

  it('walks the status machine: pending, documents_submitted, under_review, rejected, replacement, approved', async () => {
    const h = await lmdbHarness();
    const { application: a, accessKey } = await h.service.submit(form(), [await h.stage('bizCard')]);
    expect(a.status).toBe('pending');
    expect(await error(h.service.check(a.id, 'uniqueNumber', { result: 'approved' }, partner, '127.0.0.1'))).toMatchObject({ status: 409, code: 'document_missing' });

    const wrongKey = await error(h.service.replace(a.id, 'uniqueNumber', 'ak_wrong', await h.stage('uniqueNumber')));
    expect(wrongKey).toMatchObject({ status: 403, code: 'invalid_key' });
    await h.service.replace(a.id, 'uniqueNumber', accessKey, await h.stage('uniqueNumber', 'application/pdf', '고유번호증.pdf'));
    let app = await h.service.replace(a.id, 'internalResolution', accessKey, await h.stage('internalResolution'));
    expect(app.status).toBe('documents_submitted');

    app = await h.service.check(a.id, 'bizCard', { result: 'approved' }, partner, '127.0.0.1');
    expect(app.status).toBe('under_review');
    expect((app.documents as any).bizCard).toMatchObject({ check: 'approved', checkedAt: new Date(T0).toISOString() });

    app = await h.service.check(a.id, 'uniqueNumber', { result: 'rejected', reason: '사본이 흐립니다' }, partner, '127.0.0.1');
    expect(app.status).toBe('rejected');
    expect((app.documents as any).uniqueNumber).toMatchObject({ check: 'rejected', reason: '사본이 흐립니다' });
    const rejectedMail = await h.store.get(outboxKey(`mail:rental:${a.id}:rejected:5`, outboxPartition(recordKey(a.id))));
    expect(rejectedMail).toMatchObject({ payload: { to: 'kim@school.kr' } });
    expect(JSON.stringify(rejectedMail)).toContain('사본이 흐립니다');

    expect(await error(h.service.replace(a.id, 'bizCard', accessKey, await h.stage('bizCard')))).toMatchObject({ status: 409, code: 'document_approved' });
    app = await h.service.replace(a.id, 'uniqueNumber', accessKey, await h.stage('uniqueNumber'));
    expect(app.status).toBe('documents_submitted');
    expect((app.documents as any).uniqueNumber).toMatchObject({ check: null, reason: null, filename: 'uniqueNumber.hwp' });
    expect((app.documents as any).bizCard.check).toBe('approved');

    await h.service.check(a.id, 'uniqueNumber', { result: 'approved' }, partner, '127.0.0.1');
    app = await h.service.check(a.id, 'internalResolution', { result: 'approved' }, partner, '127.0.0.1');
    expect(app.status).toBe('approved');
    expect(await error(h.service.check(a.id, 'internalResolution', { result: 'rejected', reason: 'x' }, partner, '1'))).toMatchObject({ status: 409, code: 'application_closed' });
    expect(await error(h.service.replace(a.id, 'internalResolution', accessKey, await h.stage('internalResolution')))).toMatchObject({ status: 409, code: 'application_closed' });
    expect(await error(h.service.check(a.id, 'photo', { result: 'approved' }, partner, '1'))).toMatchObject({ status: 404, code: 'unknown_document_type' });
    expect(await error(h.service.check('sub_000000000000', 'bizCard', { result: 'approved' }, partner, '1'))).toMatchObject({ status: 404, code: 'subscription_not_found' });

    const moves = (await h.service.events()).map((e) => `${e.from}>${e.to}`);
    expect(moves).toEqual([
      'pending>documents_submitted',
      'documents_submitted>under_review',
      'under_review>rejected',
      'rejected>documents_submitted',
      'documents_submitted>under_review',
      'under_review>approved',
    ]);
    const approvedMails = (await mergedIndexRange(h.store, across(OUTBOX_CREATED))).filter((e) => e.member.includes(':approved:'));
    expect(approvedMails).toHaveLength(1);
    expect(await h.review.counters()).toMatchObject({ total: 1, approved: 1, pending: 0, documents_submitted: 0, rejected: 0, under_review: 0 });
    const left = await stored(h.blobs);
    expect(left).toHaveLength(3); // the three current documents; replaced and refused files are gone
    for (const k of left) expect(await h.service.references(k)).toBe(true);
    const audit = (await new PartnerAudit(h.store, () => 0).entries(100)).reverse();
    expect(audit).toHaveLength(8);
    expect((audit as any[]).map((e) => e.result)).toEqual([
      'refused:document_missing', 'approved', 'rejected', 'approved', 'approved',
      'refused:application_closed', 'refused:unknown_document_type', 'refused:subscription_not_found',
    ]);
  });

  it('a repeated identical check changes nothing and publishes nothing', async () => {
    const h = await lmdbHarness();
    const { application: a } = await h.service.submit(form(), await h.three());
    await h.service.check(a.id, 'bizCard', { result: 'approved' }, partner, '1');
    const before = h.messages.length;
    await h.service.check(a.id, 'bizCard', { result: 'approved' }, partner, '1');
    expect(h.messages.length).toBe(before);
    expect((await h.service.events()).map((e) => e.to)).toEqual(["under_review"]);
  });

  it('lists rental applications only, newest first, by status and search, paginated, and exports CSV with a BOM', async () => {
    const h = await lmdbHarness();
    await h.intake.register({ type: 'chat', contactPhone: '010-9999-9999', organization: '채팅고객' });
    const made = [];
    for (let i = 0; i < 5; i++) {
      h.clock.advance(60_000);
      const { application } = await h.service.submit(
        form({ organization: i === 3 ? '부산해운대구청' : `학교 ${i}`, contactPhone: `010-2000-000${i}`, contactName: `담당${i}` }),
        i % 2 === 0 ? await h.three() : [],
      );
      made.push(application);
    }
    const all = await h.review.list({ page: 1, pageSize: 2 });
    expect(all.items.map((a) => a.id)).toEqual([made[4]!.id, made[3]!.id]);
    expect(all).toMatchObject({ matched: 5, pages: 3, counters: { total: 5, pending: 2, documents_submitted: 3, approved: 0 } });
    const page3 = await h.review.list({ page: 3, pageSize: 2 });
    expect(page3.items.map((a) => a.id)).toEqual([made[0]!.id]);
    const pending = await h.review.list({ status: 'pending', page: 1, pageSize: 20 });
    expect(pending.items.map((a) => a.id)).toEqual([made[3]!.id, made[1]!.id]);
    expect((await h.review.list({ q: '해운대', page: 1, pageSize: 20 })).items.map((a) => a.id)).toEqual([made[3]!.id]);
    expect((await h.review.list({ q: '01020000002', page: 1, pageSize: 20 })).items.map((a) => a.id)).toEqual([made[2]!.id]);
    expect((await h.review.list({ q: made[1]!.receiptNo.toLowerCase(), page: 1, pageSize: 20 })).matched).toBe(1);
    expect((await h.review.list({ q: '채팅고객', page: 1, pageSize: 20 })).matched).toBe(0);

    const csv = await h.review.csv({ status: 'pending' });
    expect(csv.startsWith('\uFEFF접수번호,상품,')).toBe(true);
    const lines = csv.trim().split('\r\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain('부산해운대구청');
    expect(lines[1]).toContain('미제출');
  });

  it.runIf(redis.available)('two partners checking the last two documents at once on two connections: one move to approved, one event', async () => {
    const prefix = uniquePrefix('rental');
    prefixes.push(prefix);
    const blobs = await new FsBlobStore(tempDir('rental-race')).init();
    const [s1, s2] = await Promise.all([0, 1].map(() => openRedisStore({ url: redis.url, prefix })));
    stores.push(s1!, s2!);
    const a = harness(s1!, blobs);
    const b = harness(s2!, blobs);
    for (let round = 0; round < 10; round++) {
      const { application } = await a.service.submit(form(), await a.three());
      await a.service.check(application.id, 'bizCard', { result: 'approved' }, partner, '1');
      const [x, y] = await Promise.all([
        a.service.check(application.id, 'uniqueNumber', { result: 'approved' }, partner, '1'),
        b.service.check(application.id, 'internalResolution', { result: 'approved' }, { id: 'partner2', name: 'p2' }, '2'),
      ]);
      expect([x.status, y.status].filter((s) => s === 'approved')).toHaveLength(1);
      const moves = (await a.service.events()).filter((e) => e.id === application.id && e.to === 'approved');
      expect(moves).toHaveLength(1);
      const published = [...a.messages, ...b.messages].filter(
        (m) => (m.message as any).kind === 'status' && (m.message as any).id === application.id && (m.message as any).to === 'approved',
      );
      expect(published).toHaveLength(1);
    }
  });
});

describe('RentalService after store_unavailable', () => {
  it('keeps the uploaded files when the write may have happened (a WAIT shortfall), so the record never names deleted files', async () => {
    const { storeUnavailable } = await import('../../src/store/redis-unavailable.js');
    const inner = await openLmdbStore({ path: tempDir('rental-wait') });
    stores.push(inner);
    // the update lands, then the answer is store_unavailable, as WAIT with too few replicas answers
    let shortfall = true;
    const store = new Proxy(inner, {
      get(target, prop, recv) {
        if (prop === 'update') {
          return async (...args: Parameters<Store['update']>) => {
            const out = await target.update(...args);
            if (shortfall) throw storeUnavailable('the write reached 0 of 1 required replica(s)');
            return out;
          };
        }
        const v = Reflect.get(target, prop, recv);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as Store;
    const h = harness(store, await new FsBlobStore(tempDir('rental-wait-blobs')).init());
    const files = await h.three();
    expect(await error(h.service.submit(form(), files))).toMatchObject({ status: 503, code: 'store_unavailable' });
    shortfall = false;
    const ids = await h.intake.ids('rental-ipa');
    expect(ids).toHaveLength(1);
    const app = await h.service.application(ids[0]!);
    const urls = Object.values(app.documents as Record<string, { url: string } | null>).flatMap((d) => (d ? [d.url] : []));
    expect(urls).toHaveLength(3);
    for (const url of urls) (await h.service.file(ids[0]!, url.split('/').pop()!, { partner: true })).stream.destroy();
    expect((await stored(h.blobs)).sort()).toEqual(files.map((f) => f.blobKey).sort());

    // any other failure still deletes the files it was given
    const more = await h.three();
    expect(await error(h.service.submit(form({ applicantType: 'individual' }), more))).toMatchObject({ status: 400, code: 'applicant_type_mismatch' });
    expect((await stored(h.blobs)).sort()).toEqual(files.map((f) => f.blobKey).sort());
  });
});
