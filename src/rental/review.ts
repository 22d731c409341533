import { type IntakeService, type SubscriptionRecord, type SubscriptionView, view } from '../intake/index.js';
import { across, mergedIndexRange, mergedIndexScan, summedIndexCount, type Store } from '../store/port.js';
import { K } from './audit.js';
import { BUILDING_LABELS, DOC_TYPES, STATUSES, STATUS_LABELS, type BuildingType, type RentalStatus } from './catalog.js';
import { rentalExts, type RentalExt, type Source } from './service.js';

/**
 * The partner's list: rental applications only (their own index), filtered by status (a
 * per-status index kept in the same atomic update as the status), searched by organization,
 * contact name, phone or receipt number, newest first, paginated, with the counters; and the
 * CSV export of the same filtered list.
 */

export interface ListQuery {
  status?: RentalStatus;
  q?: string;
  /** Where the application was made (records without one were made in the form). */
  source?: Source;
  page: number;
  pageSize: number;
}

export interface Counters {
  total: number;
  pending: number;
  documents_submitted: number;
  under_review: number;
  approved: number;
  rejected: number;
}

export interface ListAnswer {
  items: SubscriptionView[];
  page: number;
  pageSize: number;
  matched: number;
  pages: number;
  counters: Counters;
}

/** The most records a search or an export reads (the newest ones). */
export const SCAN_CAP = 10_000;
const BATCH = 200;

const fold = (s: string) => s.toLowerCase().replace(/[\s-]/g, '');

/** Where a record was made: `form` unless it says otherwise. */
export const sourceOf = (rec: SubscriptionRecord): Source => (rec.ext as { source?: Source }).source ?? 'form';

function matches(rec: SubscriptionRecord, needle: string, source?: Source): boolean {
  if (source && sourceOf(rec) !== source) return false;
  if (!needle) return true;
  const digits = needle.replace(/\D/g, '');
  return (
    fold(rec.organization).includes(needle) ||
    fold(rec.contactName).includes(needle) ||
    fold(rec.receiptNo).includes(needle) ||
    fold(rec.contactPhone).includes(needle) ||
    (digits.length >= 3 && digits === needle && rec.contactPhone.replace(/\D/g, '').includes(digits))
  );
}

export class Review {
  constructor(
    private readonly store: Store,
    private readonly intake: IntakeService,
  ) {}

  // every index is one per partition, merged with the global one of before (audit.ts): an
  // application is in one part only, so counts are sums
  async counters(): Promise<Counters> {
    const [total, ...per] = await Promise.all([K.all, ...STATUSES.map((s) => K.status(s))].map((k) => summedIndexCount(this.store, across(k))));
    const out = { total } as Counters;
    STATUSES.forEach((s, i) => (out[s] = per[i]!));
    return out;
  }

  async list(query: ListQuery): Promise<ListAnswer> {
    const indexKey = query.status ? K.status(query.status) : K.all;
    const needle = fold(query.q ?? '');
    const from = (query.page - 1) * query.pageSize;
    let items: SubscriptionView[];
    let matched: number;
    if (!needle && !query.source) {
      // no search: the index pages directly
      matched = await summedIndexCount(this.store, across(indexKey));
      const ids = (await mergedIndexRange(this.store, across(indexKey), { reverse: true, offset: from, limit: query.pageSize })).map((e) => e.member);
      items = (await this.records(ids)).map(view);
    } else {
      const all = await this.scan(indexKey, needle, query.source);
      matched = all.length;
      items = all.slice(from, from + query.pageSize).map(view);
    }
    return {
      items,
      page: query.page,
      pageSize: query.pageSize,
      matched,
      pages: Math.max(1, Math.ceil(matched / query.pageSize)),
      counters: await this.counters(),
    };
  }

  /** The filtered list as CSV (UTF-8 with a BOM, so Excel shows the Korean), newest first. */
  async csv(query: Pick<ListQuery, 'status' | 'q' | 'source'>): Promise<string> {
    const rows = await this.scan(query.status ? K.status(query.status) : K.all, fold(query.q ?? ''), query.source);
    const head = ['접수번호', '상품', '구분', '기관명', '부서', '담당자', '연락처', '이메일', '건물유형', '상태', '월 렌탈료', '기간(개월)', '총액', '접수일시(KST)', '명함', '고유번호증', '내부결의', '접수 경로'];
    const lines = [head.map(cell).join(',')];
    for (const r of rows) {
      const x = rentalExts.decode(r.ext)!;
      lines.push(
        [
          r.receiptNo,
          x.product.code,
          x.product.badge,
          r.organization,
          r.department,
          r.contactName,
          r.contactPhone,
          r.email ?? '',
          r.buildingType ? (BUILDING_LABELS[r.buildingType as BuildingType] ?? r.buildingType) : '',
          STATUS_LABELS[r.status as RentalStatus] ?? r.status,
          x.monthlyFee,
          x.termMonths,
          x.totalFee,
          kst(r.createdAt),
          ...DOC_TYPES.map((d) => docCell(x, d)),
          SOURCE_LABELS[sourceOf(r)],
        ]
          .map(cell)
          .join(','),
      );
    }
    return `\uFEFF${lines.join('\r\n')}\r\n`;
  }

  private async scan(indexKey: string, needle: string, source?: Source): Promise<SubscriptionRecord[]> {
    const out: SubscriptionRecord[] = [];
    let ids: string[] = [];
    const take = async () => {
      for (const rec of await this.records(ids)) if (matches(rec, needle, source)) out.push(rec);
      ids = [];
    };
    for await (const e of mergedIndexScan(this.store, across(indexKey), { reverse: true, batch: BATCH, max: SCAN_CAP })) {
      ids.push(e.member);
      if (ids.length === BATCH) await take();
    }
    await take();
    return out;
  }

  private async records(ids: string[]): Promise<SubscriptionRecord[]> {
    const recs = await Promise.all(ids.map((id) => this.intake.get(id)));
    return recs.filter((r): r is SubscriptionRecord => r !== undefined);
  }
}

function docCell(x: RentalExt, d: (typeof DOC_TYPES)[number]): string {
  const doc = x.documents[d];
  if (!doc) return '미제출';
  if (doc.check === 'approved') return '승인';
  if (doc.check === 'rejected') return `반려: ${doc.reason ?? ''}`;
  return '제출';
}

export const SOURCE_LABELS: Record<Source, string> = { form: '신청서', chat: '상담' };

const kst = (iso: string) => new Date(Date.parse(iso) + 9 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');

/** One CSV cell (RFC 4180), with spreadsheet formula injection neutralised. */
function cell(v: string | number): string {
  let s = String(v);
  if (/^[=+\-@\t\r]/.test(s) && typeof v === 'string') s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
