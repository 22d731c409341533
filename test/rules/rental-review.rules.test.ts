import { describe, expect, it, vi } from 'vitest';
import type { SubscriptionRecord } from '../../src/intake/service.js';
import type { IndexEntry, RangeOptions } from '../../src/store/port.js';

// The partner's list and CSV export (src/rental/review.ts): rental applications newest first, by
// status and search (organization, contact name, receipt number, phone; digits of a phone without
// its hyphens from 3 digits on), by source, paginated, with the counters; a search reads at most the
// newest 10,000 records in batches of 200; the CSV is UTF-8 with a BOM and CRLF, cells quoted per
// RFC 4180 and formulas neutralised. Over an in-memory index and record map, so that 10,000
// records cost nothing; the module is loaded afresh in each test.
const load = () => {
  vi.resetModules();
  return import('../../src/rental/review.js');
};

const T0 = Date.UTC(2026, 10, 24, 1, 0, 0);
const STATUSES = ['pending', 'documents_submitted', 'under_review', 'approved', 'rejected'];
const doc = (check: 'approved' | 'rejected' | null, reason: string | null = null) => ({
  filename: 'f.pdf',
  size: 1,
  mediaType: 'application/pdf',
  check,
  reason,
  checkedAt: null,
  uploadedAt: new Date(T0).toISOString(),
  url: '/x',
});

function record(i: number, over: Partial<SubscriptionRecord> = {}, ext: Record<string, unknown> = {}): SubscriptionRecord {
  return {
    id: `id${i}`,
    receiptNo: `RT-2026-${String(i).padStart(5, '0')}`,
    type: 'rental-ipa',
    applicantType: 'government',
    organization: `학교 ${i}`,
    department: '행정실',
    contactName: `담당${i}`,
    contactPhone: `010-2000-${String(i).padStart(4, '0')}`,
    email: null,
    buildingType: 'school',
    remarks: '',
    status: 'pending',
    createdAt: new Date(T0 + i * 60_000).toISOString(),
    updatedAt: new Date(T0 + i * 60_000).toISOString(),
    keyHash: 'secret',
    ext: {
      product: { code: 'IPA-01', badge: '정부', name: '상품' },
      monthlyFee: 100_000,
      termMonths: 36,
      totalFee: 3_600_000,
      documents: { bizCard: null, uniqueNumber: null, internalResolution: null },
      rev: 1,
      ...ext,
    } as SubscriptionRecord['ext'],
    ...over,
  };
}

/** An index store and an intake over maps; counts the index reads. */
function world(recs: SubscriptionRecord[]) {
  const byId = new Map(recs.map((r) => [r.id, r]));
  const index = new Map<string, IndexEntry[]>();
  const add = (key: string, r: SubscriptionRecord) => {
    const list = index.get(key) ?? [];
    list.push({ member: r.id, score: Date.parse(r.createdAt) });
    index.set(key, list);
  };
  for (const r of recs) {
    add('rental:all', r);
    add(`rental:status:${r.status}`, r);
  }
  const reads: { key: string; offset?: number; limit?: number }[] = [];
  const store = {
    indexCount: async (key: string) => (index.get(key) ?? []).length,
    indexRange: async (key: string, o: RangeOptions = {}) => {
      // every partition's part is read too (review.ts merges them): only the parts holding entries are noted
      if (index.has(key)) reads.push({ key, offset: o.offset, limit: o.limit });
      const sorted = [...(index.get(key) ?? [])].sort((a, b) => a.score - b.score);
      if (o.reverse) sorted.reverse();
      const from = o.offset ?? 0;
      return sorted.slice(from, o.limit === undefined ? undefined : from + o.limit);
    },
  };
  const intake = { get: async (id: string) => byId.get(id) };
  return { store, intake, reads };
}

async function review(recs: SubscriptionRecord[]) {
  const { Review } = await load();
  const w = world(recs);
  return { review: new Review(w.store as never, w.intake as never), reads: w.reads };
}

describe('list', () => {
  it('pages the index newest first, with the page count and the counters', async () => {
    const recs = [1, 2, 3, 4, 5].map((i) => record(i, { status: i % 2 ? 'pending' : 'approved' }));
    const { review: r } = await review(recs);
    const p1 = await r.list({ page: 1, pageSize: 2 });
    expect(p1.items.map((a) => a.id)).toEqual(['id5', 'id4']);
    expect(p1).toMatchObject({ page: 1, pageSize: 2, matched: 5, pages: 3 });
    expect(p1.counters).toEqual({ total: 5, pending: 3, documents_submitted: 0, under_review: 0, approved: 2, rejected: 0 });
    expect((await r.list({ page: 3, pageSize: 2 })).items.map((a) => a.id)).toEqual(['id1']);
    expect((await r.list({ page: 4, pageSize: 2 })).items).toEqual([]);
    expect((await r.list({ page: 1, pageSize: 5 })).pages).toBe(1);
    expect((await r.list({ page: 1, pageSize: 4 })).pages).toBe(2);
    // a view: the type's fields beside the common ones, never the key hash
    expect(p1.items[0]).toMatchObject({ id: 'id5', monthlyFee: 100_000, termMonths: 36 });
    expect(p1.items[0]).not.toHaveProperty('keyHash');
    expect(p1.items[0]).not.toHaveProperty('ext');
  });

  it('reads only up to the page from each part of the index when nothing is searched', async () => {
    const recs = [1, 2, 3, 4, 5].map((i) => record(i, { status: i === 1 ? 'approved' : 'pending' }));
    const { review: r, reads } = await review(recs);
    await r.list({ page: 2, pageSize: 2 });
    await r.list({ status: 'pending', page: 3, pageSize: 1 });
    expect(reads).toEqual([
      { key: 'rental:all', offset: 0, limit: 4 },
      { key: 'rental:status:pending', offset: 0, limit: 3 },
    ]);
  });

  it('filters by status, and answers one page for nothing found', async () => {
    const recs = [1, 2, 3].map((i) => record(i, { status: i === 2 ? 'rejected' : 'pending' }));
    const { review: r } = await review(recs);
    const rej = await r.list({ status: 'rejected', page: 1, pageSize: 10 });
    expect(rej.items.map((a) => a.id)).toEqual(['id2']);
    expect(rej.matched).toBe(1);
    const none = await r.list({ status: 'approved', page: 1, pageSize: 10 });
    expect(none).toMatchObject({ items: [], matched: 0, pages: 1 });
    const found = await r.list({ status: 'pending', q: '담당3', page: 1, pageSize: 10 });
    expect(found.items.map((a) => a.id)).toEqual(['id3']);
    expect((await r.list({ status: 'rejected', q: '담당3', page: 1, pageSize: 10 })).matched).toBe(0);
  });

  it('searches organization, contact name, receipt number and phone, folding case, spaces and hyphens', async () => {
    const recs = [
      record(1, { organization: 'Busan Haeundae-Gu Office' }),
      record(2, { contactName: '김 민 지' }),
      record(3, { receiptNo: 'RT-2026-ABCDE' }),
      record(4, { contactPhone: '02-345-6789' }),
      record(5),
    ];
    const { review: r } = await review(recs);
    const ids = async (q: string) => (await r.list({ q, page: 1, pageSize: 10 })).items.map((a) => a.id);
    expect(await ids('haeundae gu')).toEqual(['id1']);
    expect(await ids('HAEUNDAE-GU')).toEqual(['id1']);
    expect(await ids('김민지')).toEqual(['id2']);
    expect(await ids('rt2026abcde')).toEqual(['id3']);
    expect(await ids('02-345')).toEqual(['id4']);
    expect(await ids('없는말')).toEqual([]);
    expect(await ids('  ')).toEqual(['id5', 'id4', 'id3', 'id2', 'id1']);
  });

  it('finds a phone by its digits from 3 digits on, and only by digits', async () => {
    const recs = [record(1, { contactPhone: '010-2345-6789' }), record(2, { contactPhone: '031-111-2222' })];
    const { review: r } = await review(recs);
    const ids = async (q: string) => (await r.list({ q, page: 1, pageSize: 10 })).items.map((a) => a.id);
    expect(await ids('01023456789')).toEqual(['id1']);
    expect(await ids('3456')).toEqual(['id1']);
    expect(await ids('456')).toEqual(['id1']);
    expect(await ids('1112222')).toEqual(['id2']);
    expect(await ids('111x2222')).toEqual([]);
  });

  it('filters by where the application was made: form unless the record says otherwise', async () => {
    const { sourceOf } = await load();
    const recs = [record(1), record(2, {}, { source: 'chat' }), record(3, {}, { source: 'form' })];
    expect(recs.map((x) => sourceOf(x))).toEqual(['form', 'chat', 'form']);
    const { review: r } = await review(recs);
    const forms = await r.list({ source: 'form', page: 1, pageSize: 10 });
    expect(forms.items.map((a) => a.id)).toEqual(['id3', 'id1']);
    expect(forms.matched).toBe(2);
    expect((await r.list({ source: 'chat', page: 1, pageSize: 10 })).items.map((a) => a.id)).toEqual(['id2']);
    expect((await r.list({ source: 'chat', q: '학교 1', page: 1, pageSize: 10 })).items).toEqual([]);
    // a search pages its matches
    const page2 = await r.list({ source: 'form', page: 2, pageSize: 1 });
    expect(page2).toMatchObject({ matched: 2, pages: 2 });
    expect(page2.items.map((a) => a.id)).toEqual(['id1']);
  });

  it('skips index entries whose record is gone', async () => {
    const { Review } = await load();
    const w = world([record(1), record(2)]);
    const r = new Review(w.store as never, { get: async (id: string) => (id === 'id2' ? undefined : record(1)) } as never);
    expect((await r.list({ page: 1, pageSize: 10 })).items.map((a) => a.id)).toEqual(['id1']);
    expect((await r.list({ q: '학교', page: 1, pageSize: 10 })).items.map((a) => a.id)).toEqual(['id1']);
  });
});

describe('the scan of a search: the newest 10,000 records, 200 at a time', () => {
  it('reads batches of 200 until a short one', async () => {
    const { SCAN_CAP } = await load();
    expect(SCAN_CAP).toBe(10_000);
    const recs = Array.from({ length: 401 }, (_, i) => record(i + 1));
    const { review: r, reads } = await review(recs);
    const found = await r.list({ q: '학교', page: 1, pageSize: 500 });
    expect(found.matched).toBe(401);
    expect(reads.map((x) => [x.offset, x.limit])).toEqual([
      [0, 200],
      [200, 200],
      [400, 200],
    ]);
    reads.length = 0;
    const exact = await review(recs.slice(0, 400));
    await exact.review.list({ q: '학교', page: 1, pageSize: 10 });
    expect(exact.reads.map((x) => [x.offset, x.limit])).toEqual([
      [0, 200],
      [200, 200],
      [400, 200],
    ]);
  });

  it('stops at 10,000 records: the 10,001st oldest is not found', async () => {
    const recs = Array.from({ length: 10_001 }, (_, i) => record(i + 1));
    const { review: r, reads } = await review(recs);
    const all = await r.list({ q: '학교', page: 1, pageSize: 1 });
    expect(all.matched).toBe(10_000);
    expect(reads).toHaveLength(50);
    expect(reads.at(-1)).toEqual({ key: 'rental:all', offset: 9_800, limit: 200 });
    expect((await r.list({ q: 'RT-2026-10001', page: 1, pageSize: 1 })).items.map((a) => a.id)).toEqual(['id10001']);
    expect((await r.list({ q: 'RT-2026-00002', page: 1, pageSize: 1 })).items.map((a) => a.id)).toEqual(['id2']);
    expect((await r.list({ q: 'RT-2026-00001', page: 1, pageSize: 1 })).matched).toBe(0);
  });
});

describe('csv', () => {
  it('writes a BOM, the header, a CRLF line per record newest first, and labels', async () => {
    const recs = [
      record(1, { email: 'a@b.kr', buildingType: 'office', status: 'under_review' }, {
        documents: { bizCard: doc('approved'), uniqueNumber: doc('rejected', '흐림'), internalResolution: doc(null) },
      }),
      record(2, { buildingType: 'hangar', status: 'mystery', contactPhone: '010-1111-2222', createdAt: '2026-11-24T15:30:00.000Z' }, { source: 'chat' }),
      record(3, { buildingType: null }, { documents: { bizCard: doc('rejected'), uniqueNumber: null, internalResolution: null } }),
    ];
    const { review: r } = await review(recs);
    const csv = await r.csv({});
    expect(csv.startsWith('\uFEFF')).toBe(true);
    expect(csv.endsWith('\r\n')).toBe(true);
    const lines = csv.slice(1).split('\r\n');
    expect(lines).toHaveLength(5);
    expect(lines[4]).toBe('');
    expect(lines[0]).toBe('접수번호,상품,구분,기관명,부서,담당자,연락처,이메일,건물유형,상태,월 렌탈료,기간(개월),총액,접수일시(KST),명함,고유번호증,내부결의,접수 경로');
    expect(lines[2]).toBe('RT-2026-00003,IPA-01,정부,학교 3,행정실,담당3,010-2000-0003,,,접수대기,100000,36,3600000,2026-11-24 10:03:00,반려: ,미제출,미제출,신청서');
    expect(lines[1]).toBe('RT-2026-00002,IPA-01,정부,학교 2,행정실,담당2,010-1111-2222,,hangar,mystery,100000,36,3600000,2026-11-25 00:30:00,미제출,미제출,미제출,상담');
    expect(lines[3]).toBe('RT-2026-00001,IPA-01,정부,학교 1,행정실,담당1,010-2000-0001,a@b.kr,관공서·청사,검토중,100000,36,3600000,2026-11-24 10:01:00,승인,반려: 흐림,제출,신청서');
  });

  it('filters like the list: status, search and source', async () => {
    const recs = [record(1), record(2, { status: 'approved' }), record(3, {}, { source: 'chat' })];
    const { review: r } = await review(recs);
    const rows = async (q: Parameters<typeof r.csv>[0]) => (await r.csv(q)).slice(1).trim().split('\r\n').slice(1).map((l) => l.split(',')[0]);
    expect(await rows({ status: 'approved' })).toEqual(['RT-2026-00002']);
    expect(await rows({ q: '담당1' })).toEqual(['RT-2026-00001']);
    expect(await rows({ source: 'chat' })).toEqual(['RT-2026-00003']);
    expect(await rows({})).toEqual(['RT-2026-00003', 'RT-2026-00002', 'RT-2026-00001']);
  });

  it('quotes commas, quotes and line breaks, and neutralises formulas of text but not numbers', async () => {
    const recs = [
      record(1, { organization: '=HYPERLINK("x")', department: '+1', contactName: '-2', remarks: '', email: '@cmd' }),
      record(2, { organization: '\tTab', department: '\rCR', contactName: 'a,b', email: 'x\ny' }),
      record(3, { organization: 'say "hi"', department: 'a\r\nb' }, { monthlyFee: -5 }),
    ];
    const { review: r } = await review(recs);
    const csv = await r.csv({});
    const body = csv.slice(1);
    expect(body).toContain(`RT-2026-00001,IPA-01,정부,"'=HYPERLINK(""x"")",'+1,'-2,010-2000-0001,'@cmd,`);
    expect(body).toContain(`RT-2026-00002,IPA-01,정부,'\tTab,"'\rCR","a,b",010-2000-0002,"x\ny",`);
    expect(body).toContain(`RT-2026-00003,IPA-01,정부,"say ""hi""","a\r\nb",담당3,010-2000-0003,,학교,접수대기,-5,36,`);
  });
});
