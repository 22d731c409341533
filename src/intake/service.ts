import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import { AppError, isStoreUnavailable, notFound } from '../errors.js';
import { codec, F, plain } from '../store/codec.js';
import { across, mergedIndexRange, partitionKeyFor, summedIndexCount, type Json, type Store, type Write } from '../store/port.js';
import { mailWrites, type MailMessage } from '../mail/index.js';
import { parseIntakeInput, type IntakeInput } from './input.js';

/**
 * Intake: subscription records, receipt numbers and tracking, shared by every intake type
 * (rental applications, the guided conversation's receipts, consultations).
 *
 * - `register(input)` validates the applicant's fields, takes the next receipt number from an
 *   atomic store counter (unique across every process sharing the store), writes the receipt
 *   pointer on its own (only if absent), then the record and its indexes in one atomic update of
 *   the record's aggregate, together with any writes the caller adds (documents, outbox mail,
 *   events: in the record's partition, see `recordKey`). A refused registration removes its
 *   pointer. It returns the record and the access key, a capability shown once: only its SHA-256
 *   is kept.
 * - `track(receiptNo, key)` answers the record to whoever holds its key.
 *
 * A type that owns more fields (rental: product, fees, documents) keeps them in `ext`; the public
 * view puts them beside the common fields.
 */

export const K = {
  /** Receipt counter (atomic incr). */
  seq: 'intake:seq',
  /** The record: its aggregate (docs/partitions.md). */
  record: (id: string) => `intake:sub:${id}`,
  /** How many times the receipt mail was sent again (under the record). */
  resend: (id: string) => `intake:sub:${id}:resend`,
  /** Receipt number -> record id: an aggregate of its own, written before the record. */
  receipt: (no: string) => `intake:receipt:${no}`,
  /**
   * Every record, score = creation time: one index per partition (`intake:all:{#p}`, beside the
   * record), merged on read with this global one of before the partitions.
   */
  all: 'intake:all',
  /** Records of one type, score = creation time; per partition like `all`. */
  byType: (type: string) => `intake:type:${type}`,
  /** The resend counter of the global layout of before (still read). */
  oldResend: (id: string) => `intake:resend:${id}`,
} as const;

/**
 * A key of the record's own update, for the writes a caller adds to it: `near` of outboxWrites and
 * mailWrites, and the partition of partition-local keys (`partitionKeyFor(name, recordKey(id))`).
 */
export const recordKey = (id: string): string => K.record(id);

export interface SubscriptionRecord {
  id: string;
  receiptNo: string;
  type: string;
  applicantType: string | null;
  organization: string;
  department: string;
  contactName: string;
  contactPhone: string;
  email: string | null;
  buildingType: string | null;
  remarks: string;
  status: string;
  createdAt: string;
  updatedAt: string;
  /** SHA-256 (hex) of the access key. Never leaves the service. */
  keyHash: string;
  /** Fields owned by the type (rental: product, monthlyFee, termMonths, totalFee, documents). */
  ext: { [key: string]: Json };
}

/** Receipt number -> record id. */
export const receiptIds = plain<string>('receipt pointer', F.str);
const records = codec<SubscriptionRecord>('intake record', (r) => typeof r.id === 'string' && typeof r.receiptNo === 'string');

/** The record as clients see it: without the key hash, the type's fields beside the common ones. */
export type SubscriptionView = Omit<SubscriptionRecord, 'keyHash' | 'ext'> & { [key: string]: Json };

export interface Registered {
  record: SubscriptionRecord;
  /** The applicant's capability for tracking (and for rental, replacing documents). Shown once. */
  accessKey: string;
}

export interface RegisterOptions {
  /** Chosen by the caller when it must know the id before the record exists (stored files). */
  id?: string;
  /** Initial status; default `pending`. */
  status?: string;
  ext?: { [key: string]: Json };
  /** More writes for the same atomic update (indexes, outbox items, events of the type); `accessKey` is the applicant's key, given once. */
  writes?: (record: SubscriptionRecord, accessKey: string) => Write[];
}

export interface IntakeServiceOptions {
  store: Store;
  clock: Clock;
}

export const SUBSCRIPTION_ID_RE = /^sub_[0-9a-z]{12}$/;
export const RECEIPT_RE = /^R\d{6}-\d{6,}$/;
export const ACCESS_KEY_RE = /^ak_[A-Za-z0-9_-]{43}$/;

const ID_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** A new record id: `sub_` and 12 random base-36 characters. */
export function newSubscriptionId(): string {
  const bytes = randomBytes(12);
  let s = '';
  for (const b of bytes) s += ID_ALPHABET[b % 36];
  return `sub_${s}`;
}

/**
 * The record id a retried request names again: `sub_` and 12 base-36 characters of SHA-256(seed).
 * An idempotent registration uses its Idempotency-Key's record as the seed, so a retry whose first
 * attempt landed finds that record (the id is in the record's own partition: docs/partitions.md).
 */
export function subscriptionIdFor(seed: string): string {
  const bytes = createHash('sha256').update(seed).digest();
  let s = '';
  for (let i = 0; i < 12; i++) s += ID_ALPHABET[bytes[i]! % 36];
  return `sub_${s}`;
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

/** `R` + the KST date (yymmdd) + `-` + the counter, six digits or more: `R261122-000042`. */
export function formatReceipt(seq: number, atMs: number): string {
  const kst = new Date(atMs + 9 * 3_600_000);
  const ymd = `${String(kst.getUTCFullYear() % 100).padStart(2, '0')}${String(kst.getUTCMonth() + 1).padStart(2, '0')}${String(kst.getUTCDate()).padStart(2, '0')}`;
  return `R${ymd}-${String(seq).padStart(6, '0')}`;
}

export class IntakeService {
  constructor(private readonly opts: IntakeServiceOptions) {}

  /** Validates, numbers and stores one registration (see the class comment). */
  async register(raw: unknown, options: RegisterOptions = {}): Promise<Registered> {
    const input = parseIntakeInput(raw);
    return this.registerParsed(input, options);
  }

  async registerParsed(input: IntakeInput, options: RegisterOptions = {}): Promise<Registered> {
    const { store, clock } = this.opts;
    const id = options.id ?? newSubscriptionId();
    if (!SUBSCRIPTION_ID_RE.test(id)) throw new TypeError(`bad subscription id ${id}`);
    // A number taken here and not used (the update below failed) leaves a gap: numbers are unique,
    // not dense.
    const seq = await store.incr(K.seq);
    const now = clock.now();
    const at = new Date(now).toISOString();
    const receiptNo = formatReceipt(seq, now);
    const accessKey = `ak_${randomBytes(32).toString('base64url')}`;
    const record: SubscriptionRecord = {
      id,
      receiptNo,
      type: input.type,
      applicantType: input.applicantType ?? null,
      organization: input.organization,
      department: input.department,
      contactName: input.contactName,
      contactPhone: input.contactPhone,
      email: input.email,
      buildingType: input.buildingType ?? null,
      remarks: input.remarks,
      status: options.status ?? 'pending',
      createdAt: at,
      updatedAt: at,
      keyHash: hashKey(accessKey),
      ext: options.ext ?? {},
    };
    const exists = () => new AppError('conflict', 'subscription_exists', 'a record with this id or receipt number already exists');
    // the pointer first, on its own (an aggregate of its own): a number already pointed at is refused
    if (!(await store.set(K.receipt(receiptNo), id, { ifAbsent: true }))) throw exists();
    const key = K.record(id);
    try {
      await store.update([key], ([existing]) => {
        if (existing !== undefined) throw exists();
        return {
          writes: [
            { op: 'set', key, value: records.encode(record) },
            { op: 'index', key: partitionKeyFor(K.all, key), member: id, score: now },
            { op: 'index', key: partitionKeyFor(K.byType(record.type), key), member: id, score: now },
            ...(options.writes?.(record, accessKey) ?? []),
          ],
          result: undefined,
        };
      });
    } catch (err) {
      // not written: the pointer goes (after store_unavailable the record may have been written)
      if (!isStoreUnavailable(err)) {
        await store
          .update([K.receipt(receiptNo)], ([cur]) => ({ writes: cur === id ? [{ op: 'del', key: K.receipt(receiptNo) }] : [], result: undefined }))
          .catch(() => undefined);
      }
      throw err;
    }
    return { record, accessKey };
  }

  /** The record behind a receipt number, for the holder of its access key. */
  async track(receiptNo: string, key: string): Promise<SubscriptionView> {
    const id = RECEIPT_RE.test(receiptNo) ? receiptIds.decode(await this.opts.store.get(K.receipt(receiptNo))) : undefined;
    const record = id ? await this.get(id) : undefined;
    if (!record) throw notFound('subscription_not_found', `no subscription with receipt number ${receiptNo}`);
    this.requireKey(record, key);
    return view(record);
  }

  /**
   * The record a receipt number names, with no access key asked: for a service that holds the
   * receipt itself (the conversation that registered it). Applicants go through track().
   */
  async byReceipt(receiptNo: string): Promise<SubscriptionRecord | undefined> {
    const id = RECEIPT_RE.test(receiptNo) ? receiptIds.decode(await this.opts.store.get(K.receipt(receiptNo))) : undefined;
    return id ? this.get(id) : undefined;
  }

  /** How many receipts have been registered, of every kind (every partition's index and the global one). */
  count(): Promise<number> {
    return summedIndexCount(this.opts.store, across(K.all));
  }

  async get(id: string): Promise<SubscriptionRecord | undefined> {
    if (!SUBSCRIPTION_ID_RE.test(id)) return undefined;
    return records.decode(await this.opts.store.get(K.record(id)));
  }

  /** The record, or 404 subscription_not_found. */
  /**
   * The receipt mail again, for the holder of the access key (404 / 403 invalid_key as track()):
   * the record's resend counter and the queued mail are one atomic write. 409 no_email when the
   * receipt has no address.
   */
  async resendMail(receiptNo: string, key: string, compose: (rec: SubscriptionRecord) => MailMessage): Promise<{ record: SubscriptionRecord; resend: number }> {
    const seen = await this.track(receiptNo, key);
    const record = await this.require(String(seen.id));
    if (!record.email) throw new AppError('conflict', 'no_email', 'this receipt has no e-mail address to send to');
    const counter = K.resend(record.id);
    // a count of the global layout (written before the partitions, never since) goes on from there
    const before = await this.opts.store.get(K.oldResend(record.id));
    const resend = await this.opts.store.update<number>([counter], ([cur]) => {
      const next = (typeof cur === 'number' ? cur : typeof before === 'number' ? before : 0) + 1;
      return {
        writes: [
          { op: 'set', key: counter, value: next },
          ...mailWrites(`intake:${record.id}:resend:${next}`, compose(record), this.opts.clock.now(), K.record(record.id)),
        ],
        result: next,
      };
    });
    return { record, resend };
  }

  async require(id: string): Promise<SubscriptionRecord> {
    const record = await this.get(id);
    if (!record) throw notFound('subscription_not_found', `no subscription ${id}`);
    return record;
  }

  /** Whether `key` is the record's access key (constant-time). */
  keyMatches(record: SubscriptionRecord, key: string | undefined): boolean {
    if (!key || !ACCESS_KEY_RE.test(key)) return false;
    return timingSafeEqual(Buffer.from(hashKey(key), 'hex'), Buffer.from(record.keyHash, 'hex'));
  }

  /** Throws 403 invalid_key unless `key` is the record's access key. */
  requireKey(record: SubscriptionRecord, key: string | undefined): void {
    if (!this.keyMatches(record, key)) throw new AppError('forbidden', 'invalid_key', 'the access key does not match this subscription');
  }

  /**
   * Atomic read-modify-write of one record (the type's rules: document checks, replacements).
   * `fn` must be pure: the store may run it again when another writer got in between. It returns
   * the new record (or undefined to keep it), more writes, and a result. 404 when there is no record.
   */
  async modify<R>(
    id: string,
    fn: (record: SubscriptionRecord) => { record?: SubscriptionRecord; writes?: Write[]; result: R },
  ): Promise<R> {
    if (!SUBSCRIPTION_ID_RE.test(id)) throw notFound('subscription_not_found', `no subscription ${id}`);
    const key = K.record(id);
    return this.opts.store.update([key], ([current]) => {
      if (current === undefined) throw notFound('subscription_not_found', `no subscription ${id}`);
      const out = fn(records.decode(current)!);
      const writes: Write[] = [];
      if (out.record) writes.push({ op: 'set', key, value: records.encode(out.record) });
      writes.push(...(out.writes ?? []));
      return { writes, result: out.result };
    });
  }

  /** Ids of one type's records (or all), newest first: every partition's index and the global one, merged. */
  async ids(type?: string, opts: { offset?: number; limit?: number } = {}): Promise<string[]> {
    const entries = await mergedIndexRange(this.opts.store, across(type ? K.byType(type) : K.all), { reverse: true, ...opts });
    return entries.map((e) => e.member);
  }
}

/** The client's view of a record: no key hash; the type's fields beside the common ones. */
export function view(record: SubscriptionRecord): SubscriptionView {
  const { keyHash: _k, ext, ...common } = record;
  return { ...common, ...ext } as SubscriptionView;
}
