import { z } from 'zod';
import { STAGES } from './machine.js';
import { normaliseName, normalisePhone } from './contact.js';
import { parseReferralCode } from './referral-code.js';
import type { ReferralService } from './referral.js';
import { MESSAGE_MAX, SESSION_ID_RE, type ChatService } from './service.js';
import { shareholderView } from './shareholder.js';
import { Reply, type Hub } from '../hub/declare.js';

export interface ChatLimits {
  /** New conversation sessions per client and hour. */
  sessionsPerHour: number;
  /** Turns (and session reads) per client and minute. */
  turnsPerMinute: number;
  /** Referral issues and lookups, shareholder reads per client and minute. */
  lookupsPerMinute: number;
}

export interface ChatRoutesOptions {
  service: ChatService;
  referrals: ReferralService;
  countReceipts: () => Promise<number>;
  /** The shareholder view's time stamp. */
  now: () => number;
  limits: ChatLimits;
}

const sessionId = z.string().regex(SESSION_ID_RE, 'must be a session id (cs_ and 22 characters)');
const referralCode = z
  .string()
  .max(32)
  .refine((s) => parseReferralCode(s) !== undefined, 'must be MARU- followed by the customer id in base 36 (e.g. MARU-QGLJ)');
/** A positive integer, as a JSON number or a string of digits. */
const customerId = z
  .union([z.number(), z.string().regex(/^[1-9]\d{0,15}$/, 'must be a positive integer')])
  .transform((v) => Number(v))
  .refine((n) => Number.isSafeInteger(n) && n > 0, 'must be a positive integer up to 2^53 - 1');
const fromRule = (f: (s: string) => string | undefined, message: string) =>
  z
    .string()
    .max(64)
    .transform((s, ctx) => {
      const v = f(s);
      if (v === undefined) {
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      }
      return v;
    });

const turnBody = z
  .object({
    session: sessionId,
    choice: z.string().min(1).max(100).optional(),
    message: z.string().trim().min(1).max(MESSAGE_MAX, `must be at most ${MESSAGE_MAX} characters`).optional(),
  })
  .strict()
  .refine((b) => (b.choice === undefined) !== (b.message === undefined), {
    message: 'send either choice or message, not both and not neither',
    path: ['choice'],
  });

// answers (docs/chat.md)
const card = z
  .object({ type: z.enum(['product', 'summary', 'upsell', 'receipt', 'progress', 'callback', 'share']) })
  .loose()
  .describe('product, summary, upsell, receipt, progress, callback or share card (fields by type, docs/chat.md)');
const turnAnswer = z.object({
  session: z.string(),
  stage: z.enum([...STAGES, 'handoff']).describe('one of the nine stages in order, or handoff (a person takes over: the callback is asked for or registered)'),
  stageCode: z.number().int().min(0).max(STAGES.length).describe('the stage position from 1 (greet) to 9 (sharing); 0 for handoff'),
  bot: z.string(),
  choices: z.array(z.string()),
  card: card.optional(),
  receiptNo: z.string().optional(),
});
const referralInfo = z.object({
  code: z.string(),
  owner: z.object({ customerId: z.number().int(), name: z.string(), phone: z.string() }),
  uses: z.number().int(),
  rewards: z.array(
    z.object({ code: z.string(), side: z.enum(['owner', 'referred']), customerId: z.number().int(), referredCustomerId: z.number().int(), at: z.string() }),
  ),
  createdAt: z.string(),
});
const shareholder = z.object({
  cumulativeReceipts: z.number().int(),
  services: z.array(z.object({}).loose()),
  entryPoints: z.array(z.object({}).loose()),
  at: z.string(),
});
const issuedCode = z.object({ code: z.string() });

export function registerChatRoutes(hub: Hub, opts: ChatRoutesOptions): void {
  const { service, referrals, limits } = opts;
  const startLimit = hub.rateLimit('chat-start', { limit: limits.sessionsPerHour, windowMs: 3_600_000 });
  const turnLimit = hub.rateLimit('chat-turn', { limit: limits.turnsPerMinute, windowMs: 60_000 });
  const lookupLimit = hub.rateLimit('chat-lookup', { limit: limits.lookupsPerMinute, windowMs: 60_000 });

  hub.page('/chat', '/chat.html', {
    title: '맞춤 상담 · Guided conversation',
    description: 'A guided conversation: needs, recommendation, receipt registration, tracking, referral.',
  });

  hub.route({
    method: 'POST',
    path: '/api/chat/start',
    body: {
      schema: z.object({ subject: z.string().trim().min(1).max(100), referralCode: referralCode.optional() }).strict(),
    },
    guards: [startLimit],
    response: { 201: turnAnswer },
    cacheControl: 'no-store',
    handler: async (ctx) => Reply.json(await service.start(ctx.body.subject, ctx.body.referralCode), 201),
  });
  hub.route({
    method: 'POST',
    path: '/api/chat',
    body: { schema: turnBody },
    guards: [turnLimit],
    response: turnAnswer,
    cacheControl: 'no-store',
    handler: (ctx) => service.turn(ctx.body.session, ctx.body),
  });
  hub.route({
    method: 'GET',
    path: '/api/chat/:session',
    params: z.object({ session: sessionId }),
    guards: [turnLimit],
    response: turnAnswer,
    cacheControl: 'no-store',
    handler: (ctx) => service.get(ctx.params.session),
  });

  hub.route({
    method: 'POST',
    path: '/api/referral',
    body: {
      schema: z
        .object({
          customerId,
          name: fromRule(normaliseName, 'must be a name of 1 to 40 letters'),
          phone: fromRule(normalisePhone, 'must be a Korean phone number (e.g. 010-1234-5678)'),
        })
        .strict(),
    },
    guards: [lookupLimit],
    response: { 200: issuedCode, 201: issuedCode },
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const { code, created } = await referrals.issue(ctx.body);
      return Reply.json({ code }, created ? 201 : 200);
    },
  });
  hub.route({
    method: 'GET',
    path: '/api/referral/:code',
    params: z.object({ code: referralCode }),
    guards: [lookupLimit],
    response: referralInfo,
    cacheControl: 'no-store',
    handler: (ctx) => referrals.info(ctx.params.code),
  });
  hub.route({
    method: 'GET',
    path: '/api/shareholder',
    guards: [lookupLimit],
    response: shareholder,
    cacheControl: 'no-store',
    handler: async () => shareholderView(await opts.countReceipts(), opts.now()),
  });
}
