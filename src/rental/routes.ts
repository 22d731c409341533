import { z } from 'zod';
import type { BlobStore } from '../blobs/index.js';
import { AppError, badRequest } from '../errors.js';
import { route, attachment, Reply, qInt, type Guard, type Hub, type Principal, type RequestContext } from '../hub/declare.js';
import { intakeInput, RECEIPT_RE, subscriptionIdFor, type IntakeService } from '../intake/index.js';
import type { Mailer } from '../mail/index.js';
import type { PartnerAudit } from './audit.js';
import { DOC_TYPES, STATUSES, catalogue } from './catalog.js';
import type { Review } from './review.js';
import { PARTNER_TOPIC, SOURCES, type RentalService } from './service.js';
import { blobKeeper, type Scanner } from '../uploads/index.js';
import { note } from '../text.js';

/**
 * Intake and rental routes (docs/api.md "Rental intake and partner review", docs/rental.md):
 * the public application form (JSON or streamed multipart), tracking and document replacement with
 * the applicant's access key, and the partner's list, checks, audit trail, file downloads and
 * live topic. Partner routes need the partner role (an operator passes too).
 */

export interface RentalRoutesOptions {
  intake: IntakeService;
  service: RentalService;
  review: Review;
  audit: PartnerAudit;
  blobs: BlobStore;
  scanner?: Scanner;
  mailer: Mailer;
  limits?: { submit?: Limit; track?: Limit };
}

interface Limit {
  limit: number;
  windowMs: number;
}

/** Text fields of the form (multipart: any other name is 400 unexpected_field). */
const FORM_FIELDS = ['type', 'applicantType', 'organization', 'department', 'contactName', 'contactPhone', 'email', 'buildingType', 'remarks'] as const;

const partner = { roles: ['partner'] } as const;
const key = z.string({ error: 'is required: the access key given at submission' }).min(1).max(100);
const subId = z.string().max(40);

// answers (docs/rental.md): an application as clients see it has the common intake fields and the
// rental's own (product, fees, documents) beside them
const application = z
  .object({ id: z.string(), receiptNo: z.string(), type: z.string(), status: z.string(), createdAt: z.string(), updatedAt: z.string() })
  .loose();
const submitted = application.extend({ accessKey: z.string() });
const catalogueAnswer = z.object({
  termMonths: z.number().int(),
  products: z.array(z.object({ type: z.string(), monthlyFee: z.number(), fees: z.record(z.string(), z.number()) }).loose()),
  buildingTypes: z.array(z.object({ value: z.string(), label: z.string() })),
  documents: z.array(z.object({ field: z.string(), label: z.string() })),
  statuses: z.array(z.object({ value: z.string(), label: z.string() })),
});
const counters = z.object({ total: z.number(), pending: z.number(), documents_submitted: z.number(), under_review: z.number(), approved: z.number(), rejected: z.number() });
const listAnswer = z.object({ items: z.array(application), page: z.number(), pageSize: z.number(), matched: z.number(), pages: z.number(), counters });
const auditEntry = z.object({ at: z.string(), actor: z.string(), client: z.string(), action: z.string(), target: z.string().nullable(), result: z.string(), detail: z.string().nullable() });
const keptMail = z.object({ id: z.string(), at: z.string(), to: z.string(), subject: z.string() }).loose();

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type RentalRoutes = ReturnType<typeof registerRentalRoutes>;

export function registerRentalRoutes(hub: Hub, opts: RentalRoutesOptions) {
  const { intake, service, review, audit, blobs, scanner, mailer } = opts;
  const submitLimit = hub.rateLimit('intake-submit', opts.limits?.submit ?? { limit: 30, windowMs: 600_000 });
  const trackLimit = hub.rateLimit('intake-track', opts.limits?.track ?? { limit: 120, windowMs: 60_000 });
  const isPartner = (p: Principal | undefined) => !!p && hub.auth.allows(p, partner.roles);
  // downloads are answered from memory: at most 4 files read at once per process, 64 waiting, then 503 busy
  // every file is scanned, typed by content and stored by the hub before a handler runs; the service
  // records the stored files or deletes them (src/hub/keep.ts, src/uploads)
  const keep = blobKeeper(blobs, scanner);
  const downloads = hub.concurrency('rental-download', { max: 4, per: 'route', queue: 64, message: 'too many downloads at once; try again shortly' });

  hub.page('/rental.html', '/rental.html', {
    title: '렌탈 신청 · Rental application',
    description: '공공기관과 학교가 서류 세 가지로 36개월 렌탈을 신청하고 접수번호를 받습니다.',
  });
  hub.page('/applicant.html', '/applicant.html', {
    title: '렌탈 신청 조회 · My application',
    description: '신청자가 접수번호와 접근 키로 신청서를 열어 진행 상태, 서류별 심사 결과를 보고 서류를 다시 올립니다.',
  });
  hub.page('/partner.html', '/partner.html', {
    title: '렌탈 파트너 심사 · Partner review',
    description: '렌탈 파트너가 로그인해 서류를 하나씩 심사하고 새 신청을 실시간으로 봅니다.',
  });
  hub.topic({
    name: PARTNER_TOPIC,
    policy: 'close',
    authorize: (_topic, identity) => (!identity ? 'unauthorized' : isPartner(identity) ? 'ok' : 'forbidden'),
  });

  // a document's replacement: exactly one file, and the application's key, before the file is kept
  const oneFile: Guard = (ctx) => {
    const received = ctx.files?.length ?? 0;
    if (received !== 1) throw badRequest('file_required', `send exactly one file, in the form field ${(ctx.params as { docType: string }).docType}`, { received });
  };
  const keyHolder: Guard = async (ctx) => {
    const { params, query } = ctx as RequestContext<{ key: string }, unknown, { ref: string }>;
    intake.requireKey(await intake.require(params.ref), query.key);
  };

  // ---- intake (public) -----------------------------------------------------------------------
  const products = catalogue();
  const getRentalProducts = route({ method: 'GET', path: '/rental/products', response: catalogueAnswer, cacheControl: 'no-cache', handler: () => products });

  const postSubscriptions = route({
    method: 'POST',
    path: '/subscriptions',
    // the fields are validated by the hub before any file is scanned or stored
    body: { schema: intakeInput, multipart: { files: DOC_TYPES, fields: FORM_FIELDS, maxFields: 16, keep } },
    guards: [submitLimit],
    // a retry with the same Idempotency-Key (after a 503 or a lost answer) replays the first answer
    idempotency: { key: 'optional' },
    response: { 201: submitted },
    cacheControl: 'no-store',
    handler: async (ctx) => {
      // with a key, the application's id is derived from it: a retry whose first attempt landed (its
      // answer lost on the way, or the hub's record of it) finds that application's kept answer
      const id = ctx.idempotency ? subscriptionIdFor(ctx.idempotency.ticket.storeKey) : undefined;
      const kept = id ? await service.keptAnswer(id, ctx.stored) : undefined;
      if (kept !== undefined) return Reply.json(kept, 201);
      const { application, accessKey } = await service.submit(ctx.body, ctx.stored, id ? { id, keepAnswer: true } : {});
      return Reply.json({ ...application, accessKey }, 201);
    },
  });

  const getSubscriptionsByRef = route({
    method: 'GET',
    // the router needs one parameter name per position: :ref is the receipt number here, the id below
    path: '/subscriptions/:ref',
    params: z.object({ ref: z.string().regex(RECEIPT_RE, 'must be a receipt number such as R261122-000042') }),
    query: z.object({ key }).strict(),
    guards: [trackLimit],
    response: application,
    cacheControl: 'no-store',
    handler: (ctx) => intake.track(ctx.params.ref, ctx.query.key),
  });

  const putSubscriptionsByRefDocumentsByDocType = route({
    method: 'PUT',
    path: '/subscriptions/:ref/documents/:docType',
    params: z.object({ ref: subId, docType: z.string().max(40) }),
    query: z.object({ key }).strict(),
    body: { schema: z.record(z.string(), z.unknown()), multipart: { files: DOC_TYPES, fields: [], keep } },
    // one file and the key, checked before the file is scanned or stored
    guards: [trackLimit, oneFile, keyHolder],
    response: application,
    cacheControl: 'no-store',
    handler: (ctx) => service.replace(ctx.params.ref, ctx.params.docType, ctx.query.key, ctx.stored![0]!),
  });

  // ---- partner -------------------------------------------------------------------------------
  const actor = (ctx: RequestContext) => ({ id: ctx.identity!.id, name: ctx.identity!.name });

  const getPartnerApplications = route({
    method: 'GET',
    path: '/partner/applications',
    auth: partner,
    query: z
      .object({
        status: z.enum(STATUSES, { error: `must be one of ${STATUSES.join(', ')}` }).optional(),
        q: z.string().trim().max(100).optional(),
        source: z.enum(SOURCES, { error: `must be one of ${SOURCES.join(', ')}` }).optional(),
        page: qInt({ min: 1, max: 100_000 }).optional(),
        pageSize: qInt({ min: 1, max: 100 }).optional(),
        format: z.enum(['json', 'csv']).optional(),
      })
      .strict(),
    response: listAnswer,
    summary: 'Applications, paged and filtered (format=csv: the same rows as text/csv)',
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const { status, q, source, format } = ctx.query;
      const filter = [status && `status=${status}`, source && `source=${source}`, q && `q=${q}`].filter(Boolean).join('&') || null;
      if (format === 'csv') {
        const csv = await review.csv({ status, q, source });
        await audit.record({ actor: ctx.identity!.id, client: ctx.remoteAddress, action: 'export', target: null, result: 'ok', detail: filter });
        return new Reply(200, csv, 'text/csv; charset=utf-8', { 'content-disposition': attachment('rental-applications.csv') });
      }
      const out = await review.list({ status, q, source, page: ctx.query.page ?? 1, pageSize: ctx.query.pageSize ?? 20 });
      await audit.record({ actor: ctx.identity!.id, client: ctx.remoteAddress, action: 'list', target: null, result: 'ok', detail: filter });
      return out;
    },
  });

  const putPartnerApplicationsByIdDocumentsByDocTypeCheck = route({
    method: 'PUT',
    path: '/partner/applications/:id/documents/:docType/check',
    auth: partner,
    params: z.object({ id: subId, docType: z.string().max(40) }),
    body: {
      schema: z
        .strictObject({
          result: z.enum(['approved', 'rejected'], { error: 'must be "approved" or "rejected"' }),
          reason: note(500).transform((r) => r.trim()).refine((r) => r.length > 0, 'must not be empty').optional(),
        })
        .refine((b) => b.result !== 'rejected' || b.reason !== undefined, { path: ['reason'], message: 'is required when the result is rejected' }),
    },
    response: application,
    cacheControl: 'no-store',
    handler: (ctx) => service.check(ctx.params.id, ctx.params.docType, ctx.body, actor(ctx), ctx.remoteAddress),
  });

  const getPartnerAudit = route({
    method: 'GET',
    path: '/partner/audit',
    auth: partner,
    query: z.object({ limit: qInt({ min: 1, max: 1000 }).optional() }).strict(),
    response: z.object({ entries: z.array(auditEntry) }),
    cacheControl: 'no-store',
    handler: async (ctx) => ({ entries: await audit.entries(ctx.query.limit ?? 100) }),
  });

  // ---- files: the partner's token or the applicant's key, nothing public ----------------------
  const getUploadsBySubIdByFilename = route({
    method: 'GET',
    path: '/uploads/:subId/:filename',
    auth: { optional: true },
    params: z.object({ subId, filename: z.string().max(100) }),
    query: z.object({ key: key.optional() }).strict(),
    guards: [downloads],
    summary: 'A stored document (its own media type), for the partner or the applicant',
    cacheControl: 'private, no-store',
    handler: async (ctx) => {
      const { subId: id, filename } = ctx.params;
      let access: { partner: true } | { key: string | undefined };
      if (ctx.identity) {
        if (!isPartner(ctx.identity)) throw new AppError('forbidden', 'forbidden', 'files are for the partner or the applicant');
        access = { partner: true };
      } else if (ctx.query.key !== undefined) {
        access = { key: ctx.query.key };
      } else {
        throw new AppError('unauthorized', 'unauthorized', 'a partner token (Authorization: Bearer) or the access key (?key=) is needed');
      }
      const file = await service.file(id, filename, access);
      const chunks: Buffer[] = [];
      for await (const chunk of file.stream) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      if ('partner' in access) {
        await audit.record({ actor: ctx.identity!.id, client: ctx.remoteAddress, action: 'download', target: `${file.receiptNo}/${filename}`, result: 'ok', detail: null });
      }
      return new Reply(200, body, file.entry.mediaType, {
        // X-Content-Type-Options: nosniff comes with every answer of the hub (hub/security.ts)
        'content-disposition': attachment(file.entry.filename),
      });
    },
  });

  // ---- kept mail (no SMTP_URL) ------------------------------------------------------------------
  const getMail = route({
    method: 'GET',
    path: '/mail',
    auth: { roles: ['operator'] },
    query: z.object({ limit: qInt({ min: 1, max: 1000 }).optional() }).strict(),
    response: z.object({ sending: z.boolean(), mails: z.array(keptMail) }),
    cacheControl: 'no-store',
    handler: async (ctx) => ({ sending: mailer.sending, mails: await mailer.kept(ctx.query.limit ?? 100) }),
  });
  return hub.mount('/api', {
    getRentalProducts,
    postSubscriptions,
    getSubscriptionsByRef,
    putSubscriptionsByRefDocumentsByDocType,
    getPartnerApplications,
    putPartnerApplicationsByIdDocumentsByDocTypeCheck,
    getPartnerAudit,
    getUploadsBySubIdByFilename,
    getMail,
  });
}
