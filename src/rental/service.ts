import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { AppError, badRequest, conflict, isStoreUnavailable, notFound } from '../errors.js';
import { newSubscriptionId, recordKey, SUBSCRIPTION_ID_RE, view, type IntakeInput, type IntakeService, type SubscriptionRecord, type SubscriptionView } from '../intake/index.js';
import { mailWrites } from '../mail/index.js';
import { IDEMPOTENCY_TTL_MS } from '../idempotency.js';
import { codec, decodeList } from '../store/codec.js';
import { across, newestAcross, type Json, type Store, type Write } from '../store/port.js';
import { AUDIT_CAP, auditEntries, K, keysOf, layoutOf, LOOSE_AUDIT, type AuditEntry, type RentalKeys } from './audit.js';
import {
  BUILDING_TYPES,
  DOC_TYPES,
  PRODUCTS,
  feesFor,
  isDocType,
  isRentalType,
  type BuildingType,
  type DocType,
  type RentalStatus,
} from './catalog.js';
import type { BlobStore } from '../blobs/index.js';
import { EXTENSIONS, STORED_NAME_RE, blobKeyOf, type StoredFile } from './files.js';
import { decisionMail, receiptMail } from './mails.js';
import { emptyDocuments, statusAfterCheck, statusAfterUpload, type Check, type DocumentEntry, type Documents } from './status.js';

/** Bus topic of the partner dashboard: new applications, checks and status moves. */
export const PARTNER_TOPIC = 'rental:partner';
export const EVENTS_CAP = 10_000;

export interface RentalExt {
  product: { code: string; badge: string; name: string };
  monthlyFee: number;
  termMonths: number;
  totalFee: number;
  documents: Documents;
  /** Bumped on every change; names mails uniquely. */
  rev: number;
  /** Where the application was made: the form (`form`) or the guided conversation (`chat`). Absent on older records: the form. */
  source?: Source;
}

/** Where an application was made. */
export const SOURCES = ['form', 'chat'] as const;
export type Source = (typeof SOURCES)[number];

export interface SubmitOptions {
  /** The record id, when the caller must know it first (the conversation's idempotent retries). */
  id?: string;
  /** Default `form`. */
  source?: Source;
  /** Replaces the receipt mail: the caller's own writes in the same atomic update (the conversation's mail). */
  writes?: (record: SubscriptionRecord) => Write[];
  /**
   * Keep the answer (the application and its access key, 24 hours) in the application's own update,
   * for `keptAnswer`: an idempotent submission's id is derived from its key, so a retry whose first
   * attempt landed (its answer lost on the way) gets that answer again and nothing is made twice.
   */
  keepAnswer?: boolean;
}

/** The answer of an idempotent submission, kept beside its record (its aggregate: docs/partitions.md). */
const ANSWER = (id: string) => `${recordKey(id)}:answer`;

export interface Actor {
  id: string;
  name: string;
}

export interface CheckInput {
  result: Check;
  reason?: string;
}

export interface StatusEvent {
  at: string;
  id: string;
  receiptNo: string;
  from: RentalStatus;
  to: RentalStatus;
  by: string;
}

export interface RentalServiceOptions {
  intake: IntakeService;
  store: Store;
  clock: Clock;
  bus: Bus;
  blobs: Pick<BlobStore, 'get' | 'delete'>;
  onBlobError?: (err: unknown, key: string) => void;
  /** The hub's public address, for the applicant page links in mails. */
  publicUrl?: string;
}

/** The rental part of an intake record, the status events and the live feed's messages. */
export const rentalExts = codec<RentalExt>('rental application', (r) => typeof r.rev === 'number' && typeof r.documents === 'object');
const statusEvents = codec<StatusEvent>('rental status event', (r) => typeof r.to === 'string');
const feed = codec<SubscriptionView | ({ kind: string } & Record<string, unknown>)>('rental feed message');
const ext = (r: SubscriptionRecord) => rentalExts.decode(r.ext)!;

/**
 * Rental applications on top of intake records: products and fees, documents, partner checks
 * with the status machine (status.ts), decision mails through the outbox, the partner's audit
 * trail and live events. Listing and CSV export are in review.ts.
 */
export class RentalService {
  constructor(private readonly opts: RentalServiceOptions) {}

  /**
   * A new intake registration (its input parsed once, by the caller: the hub's body schema for the
   * form). Rental types get their product, fee and the given documents; other types (the
   * conversation's receipts, consultations) take no files. The files are already in the blob store
   * and are this service's from here: recorded with the application, or deleted when it is not
   * written.
   */
  async submit(input: IntakeInput, files: StoredFile[] = [], options: SubmitOptions = {}): Promise<{ application: SubscriptionView; accessKey: string }> {
    const { intake, clock } = this.opts;
    try {
      if (!isRentalType(input.type)) {
        if (files.length > 0) throw badRequest('unexpected_files', `an intake of type ${input.type} takes no files`);
        if (input.buildingType !== undefined) throw invalidField('buildingType', `only rental applications have a building type`);
        const { record, accessKey } = await intake.registerParsed(input, {
          writes: (rec) => (rec.email ? mailWrites(`intake:${rec.id}:receipt`, receiptMail(rec, this.opts.publicUrl), clock.now(), recordKey(rec.id)) : []),
        });
        return { application: view(record), accessKey };
      }
      if (input.applicantType !== 'government') {
        throw badRequest('applicant_type_mismatch', `${input.type} is for public organizations: applicantType must be "government"`, {
          field: 'applicantType',
          expected: 'government',
          received: input.applicantType ?? null,
        });
      }
      const building = input.buildingType === undefined || input.buildingType === '' ? null : input.buildingType;
      if (building !== null && !(BUILDING_TYPES as readonly string[]).includes(building)) {
        throw invalidField('buildingType', `must be one of ${BUILDING_TYPES.join(', ')}`);
      }
      const id = options.id ?? newSubscriptionId();
      const source = options.source ?? 'form';
      const now = clock.now();
      const documents = emptyDocuments();
      for (const f of files) {
        if (!isDocType(f.field)) throw badRequest('unknown_field', `unknown file field ${f.field}`, { field: f.field, allowed: DOC_TYPES });
        if (documents[f.field]) throw badRequest('duplicate_field', `the file field ${f.field} is given twice`, { field: f.field });
        documents[f.field] = this.documentEntry(id, f, now);
      }
      const status = statusAfterUpload(documents);
      const rentalExt: RentalExt = { product: PRODUCTS[input.type], ...feesFor(input.type, building as BuildingType | null), documents, rev: 1, source };
      const k = keysOf(id, 'partition');
      const near = recordKey(id);
      // each file's pointer first, on its own (references() trusts it only when the record names the file)
      for (const f of files) await this.opts.store.set(K.blob(f.blobKey), id);
      const { record, accessKey } = await intake.registerParsed(
        { ...input, buildingType: building ?? undefined },
        {
          id,
          status,
          ext: rentalExts.encode(rentalExt) as { [k: string]: Json },
          writes: (rec, key) => [
            ...(options.keepAnswer ? [{ op: 'set' as const, key: ANSWER(id), value: { ...view(rec), accessKey: key } as unknown as Json, ttlMs: IDEMPOTENCY_TTL_MS }] : []),
            { op: 'index', key: k.all, member: id, score: now },
            { op: 'index', key: k.status(status), member: id, score: now },
            ...(options.writes ? options.writes(rec) : rec.email ? mailWrites(`rental:${id}:receipt`, receiptMail(rec, this.opts.publicUrl), now, near) : []),
          ],
        },
      );
      const application = view(record);
      this.publish({ kind: 'application', application: publicView(application) });
      return { application, accessKey };
    } catch (err) {
      await this.discard(files, err);
      throw err;
    }
  }

  /** The kept answer of the submission `id` (keepAnswer), if it landed; the retry's own files are dropped then. */
  async keptAnswer(id: string, files: StoredFile[] = []): Promise<Json | undefined> {
    const kept = (await this.opts.store.get(ANSWER(id))) as Json | undefined;
    if (kept !== undefined) await this.discard(files, undefined);
    return kept;
  }

  /** The application, for the partner (404 when it is not a rental application). */
  async application(id: string): Promise<SubscriptionView> {
    return view(await this.rentalRecord(id));
  }

  /**
   * A partner's decision on one document. One atomic update reads the record, moves the status
   * (status.ts), appends the status event and the audit entry, and queues the decision mail; so
   * two partners checking the last two documents at once, on any processes, give exactly one move
   * to approved and one event.
   */
  async check(id: string, docType: string, input: CheckInput, actor: Actor, client: string): Promise<SubscriptionView> {
    try {
      return await this.decide(id, docType, input, actor, client);
    } catch (err) {
      // refusals are partner actions too: the trail shows them with the refusal's code
      if (err instanceof AppError) {
        const entry: AuditEntry = { at: new Date(this.opts.clock.now()).toISOString(), actor: actor.id, client, action: 'check', target: `${id}/${docType}`, result: `refused:${err.code}`, detail: input.result };
        // beside the application's own trail (no such application: the list of no application's update)
        const trail = SUBSCRIPTION_ID_RE.test(id) && err.code !== 'subscription_not_found' ? keysOf(id, await layoutOf(this.opts.store, id).catch(() => 'partition' as const)).audit : LOOSE_AUDIT;
        await this.opts.store.push(trail, auditEntries.encode(entry), AUDIT_CAP).catch(() => undefined);
      }
      throw err;
    }
  }

  private async decide(id: string, docType: string, input: CheckInput, actor: Actor, client: string): Promise<SubscriptionView> {
    const doc = requireDocType(docType);
    await this.rentalRecord(id);
    const { intake, clock } = this.opts;
    const k = keysOf(id, await layoutOf(this.opts.store, id));
    const out = await intake.modify(id, (rec) => {
      const now = clock.now();
      const at = new Date(now).toISOString();
      const x = ext(rec);
      if (rec.status === 'approved') throw conflict('application_closed', 'the application is approved; its documents are final');
      const entry = x.documents[doc];
      if (!entry) throw conflict('document_missing', `${doc} is not uploaded yet`, { docType: doc });
      const reason = input.result === 'rejected' ? (input.reason ?? null) : null;
      if (entry.check === input.result && entry.reason === reason) {
        return { result: { record: rec, moved: undefined as StatusEvent | undefined, changed: false } };
      }
      const documents: Documents = { ...x.documents, [doc]: { ...entry, check: input.result, reason, checkedAt: at } };
      const status = statusAfterCheck(documents);
      const next: SubscriptionRecord = { ...rec, status, updatedAt: at, ext: { ...rec.ext, documents, rev: x.rev + 1 } as never };
      const audit: AuditEntry = { at, actor: actor.id, client, action: 'check', target: `${rec.receiptNo}/${doc}`, result: input.result, detail: reason };
      const writes: Write[] = [{ op: 'push', key: k.audit, value: auditEntries.encode(audit), cap: AUDIT_CAP }];
      let moved: StatusEvent | undefined;
      if (status !== rec.status) {
        moved = { at, id, receiptNo: rec.receiptNo, from: rec.status as RentalStatus, to: status, by: actor.id };
        writes.push(...this.moveWrites(k, rec, status, moved));
        if ((status === 'approved' || status === 'rejected') && rec.email) {
          writes.push(...mailWrites(`rental:${id}:${status}:${x.rev + 1}`, decisionMail(next, status, this.opts.publicUrl), now, recordKey(id)));
        }
      }
      return { record: next, writes, result: { record: next, moved, changed: true } };
    });
    const application = view(out.record);
    if (out.changed) {
      this.publish({ kind: 'check', id, receiptNo: out.record.receiptNo, docType: doc, result: input.result, status: out.record.status, application: publicView(application) });
    }
    if (out.moved) this.publish(feed.encode({ kind: 'status', ...out.moved }));
    return application;
  }

  /**
   * The applicant adds a missing document or replaces one (with the access key). Replacing clears
   * that document's check; once no rejected document remains, the application is back at
   * documents_submitted. Approved documents and approved applications are final.
   */
  async replace(id: string, docType: string, key: string | undefined, file: StoredFile): Promise<SubscriptionView> {
    const { intake, clock, blobs } = this.opts;
    try {
      const doc = requireDocType(docType);
      if (file.field !== doc) throw badRequest('unknown_field', `the file field must be ${doc}`, { field: file.field, expected: doc });
      const current = await this.rentalRecord(id);
      intake.requireKey(current, key);
      const now = clock.now();
      const entry = this.documentEntry(id, file, now);
      const k = keysOf(id, await layoutOf(this.opts.store, id));
      await this.opts.store.set(K.blob(file.blobKey), id);
      const out = await intake.modify(id, (rec) => {
        const at = new Date(now).toISOString();
        const x = ext(rec);
        if (rec.status === 'approved') throw conflict('application_closed', 'the application is approved; its documents are final');
        const prev = x.documents[doc];
        if (prev?.check === 'approved') throw conflict('document_approved', `${doc} is approved and cannot be replaced`, { docType: doc });
        const documents: Documents = { ...x.documents, [doc]: entry };
        const status = statusAfterUpload(documents);
        const next: SubscriptionRecord = { ...rec, status, updatedAt: at, ext: { ...rec.ext, documents, rev: x.rev + 1 } as never };
        const writes: Write[] = [];
        let moved: StatusEvent | undefined;
        if (status !== rec.status) {
          moved = { at, id, receiptNo: rec.receiptNo, from: rec.status as RentalStatus, to: status, by: 'applicant' };
          writes.push(...this.moveWrites(k, rec, status, moved));
        }
        return { record: next, writes, result: { record: next, moved, prev } };
      });
      const application = view(out.record);
      this.publish({ kind: 'document', id, receiptNo: out.record.receiptNo, docType: doc, status: out.record.status, application: publicView(application) });
      if (out.moved) this.publish(feed.encode({ kind: 'status', ...out.moved }));
      if (out.prev) {
        const oldKey = blobKeyOf(out.prev.url);
        await this.opts.store.del(K.blob(oldKey)).catch(() => undefined);
        await blobs.delete(oldKey).catch((err) => this.opts.onBlobError?.(err, oldKey));
      }
      return application;
    } catch (err) {
      await this.discard([file], err);
      throw err;
    }
  }

  /**
   * An uploaded file, for the partner (`partner: true`) or the holder of the application's key.
   * Throws 404 file_not_found for names the application does not hold.
   */
  async file(subId: string, stored: string, access: { partner: true } | { key: string | undefined }) {
    const rec = await this.opts.intake.get(subId);
    if (!rec || !isRentalType(rec.type)) throw notFound('file_not_found', 'no such file');
    if (!('partner' in access)) this.opts.intake.requireKey(rec, access.key);
    const entry = STORED_NAME_RE.test(stored)
      ? Object.values(ext(rec).documents).find((d) => d !== null && d.url.endsWith(`/${stored}`))
      : undefined;
    if (!entry) throw notFound('file_not_found', 'no such file');
    try {
      const blob = await this.opts.blobs.get(blobKeyOf(entry.url));
      return { entry, stream: blob.stream, size: blob.size, receiptNo: rec.receiptNo };
    } catch (err) {
      if (err instanceof AppError && err.kind === 'not_found') throw notFound('file_not_found', 'the file is not stored');
      throw err;
    }
  }

  /** Status moves so far (oldest first): the store's own record of events, every partition's and the global list of before. */
  async events(limit = 1000): Promise<StatusEvent[]> {
    return (await newestAcross(this.opts.store, across(K.events), limit, (v) => decodeList(statusEvents, [v])[0])).reverse();
  }

  /**
   * Whether an application names the blob (the orphan sweep keeps it): the blob's pointer names a
   * record whose documents hold it. A pointer left by a registration that was not written, or by
   * a replaced document, names no holder.
   */
  async references(blobKey: string): Promise<boolean> {
    const id = await this.opts.store.get(K.blob(blobKey));
    if (typeof id !== 'string') return false;
    const rec = await this.opts.intake.get(id);
    if (!rec || !isRentalType(rec.type)) return false;
    const docs: Partial<Documents> = rentalExts.decode(rec.ext)?.documents ?? {};
    return Object.values(docs).some((d) => !!d && blobKeyOf(d.url) === blobKey);
  }

  // ---------------------------------------------------------------------------------------------

  private async rentalRecord(id: string): Promise<SubscriptionRecord> {
    const rec = await this.opts.intake.get(id);
    if (!rec || !isRentalType(rec.type)) throw notFound('subscription_not_found', `no rental application ${id}`);
    return rec;
  }

  private documentEntry(id: string, f: StoredFile, now: number): DocumentEntry {
    const extension = EXTENSIONS[f.mediaType];
    if (!extension) throw new AppError('unsupported_media', 'unsupported_file_type', `${f.mediaType} is not accepted`, { field: f.field, detected: f.mediaType });
    if (!STORED_NAME_RE.test(`${f.blobKey}.${extension}`)) throw new TypeError(`bad blob key ${f.blobKey}`);
    const stored = `${f.blobKey}.${extension}`;
    return {
      filename: f.filename,
      size: f.size,
      mediaType: f.mediaType,
      check: null,
      reason: null,
      checkedAt: null,
      uploadedAt: new Date(now).toISOString(),
      url: `/api/uploads/${id}/${stored}`,
    };
  }

  private moveWrites(k: RentalKeys, rec: SubscriptionRecord, to: RentalStatus, event: StatusEvent): Write[] {
    const score = Date.parse(rec.createdAt);
    return [
      { op: 'unindex', key: k.status(rec.status), member: rec.id },
      { op: 'index', key: k.status(to), member: rec.id, score },
      { op: 'push', key: k.events, value: statusEvents.encode(event), cap: EVENTS_CAP },
    ];
  }

  /**
   * Deletes the files of a failed write. Not after store_unavailable: that write may have happened
   * (a WAIT shortfall, docs/deploy.md), and its record would then name deleted files; a file it
   * did not keep stays as an orphan blob, which costs space, not data.
   */
  private async discard(files: StoredFile[], cause: unknown): Promise<void> {
    if (isStoreUnavailable(cause)) return;
    for (const f of files) await this.opts.store.del(K.blob(f.blobKey)).catch(() => undefined);
    for (const f of files) await this.opts.blobs.delete(f.blobKey).catch((err) => this.opts.onBlobError?.(err, f.blobKey));
  }

  private publish(message: Json): void {
    this.opts.bus.emit(PARTNER_TOPIC, message);
  }
}

/** The application as the partner's live feed carries it (no key hash: view() already drops it). */
export const publicView = (v: SubscriptionView): Json => feed.encode(v);

function requireDocType(docType: string): DocType {
  if (!isDocType(docType)) {
    throw notFound('unknown_document_type', `no document type ${docType}: one of ${DOC_TYPES.join(', ')}`, { docType, allowed: DOC_TYPES });
  }
  return docType;
}

const invalidField = (field: string, message: string) =>
  new AppError('invalid', 'invalid_body', `${field}: ${message}`, { issues: [{ field, message }] });
