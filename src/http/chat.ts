import { z } from 'zod';
import { normaliseName, normalisePhone } from '../chat/contact.js';
import { parseReferralCode } from '../chat/referral-code.js';
import type { ReferralService } from '../chat/referral.js';
import { MESSAGE_MAX, SESSION_ID_RE, type ChatService } from '../chat/service.js';
import { shareholderView } from '../chat/shareholder.js';
import type { Clock } from '../clock.js';
import { rateLimit } from '../hub/guards.js';
import { Reply, type Hub } from '../hub/index.js';
import type { Store } from '../store/port.js';

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
  store: Store;
  clock: Clock;
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

export function registerChatRoutes(hub: Hub, opts: ChatRoutesOptions): void {
  const { service, referrals, store, clock, limits } = opts;
  const startLimit = rateLimit({ store, clock, name: 'chat-start', limit: limits.sessionsPerHour, windowMs: 3_600_000 });
  const turnLimit = rateLimit({ store, clock, name: 'chat-turn', limit: limits.turnsPerMinute, windowMs: 60_000 });
  const lookupLimit = rateLimit({ store, clock, name: 'chat-lookup', limit: limits.lookupsPerMinute, windowMs: 60_000 });

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
    cacheControl: 'no-store',
    handler: async (ctx) => Reply.json(await service.start(ctx.body.subject, ctx.body.referralCode), 201),
  });
  hub.route({
    method: 'POST',
    path: '/api/chat',
    body: { schema: turnBody },
    guards: [turnLimit],
    cacheControl: 'no-store',
    handler: (ctx) => service.turn(ctx.body.session, ctx.body),
  });
  hub.route({
    method: 'GET',
    path: '/api/chat/:session',
    params: z.object({ session: sessionId }),
    guards: [turnLimit],
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
    cacheControl: 'no-store',
    handler: (ctx) => referrals.info(ctx.params.code),
  });
  hub.route({
    method: 'GET',
    path: '/api/shareholder',
    guards: [lookupLimit],
    cacheControl: 'no-store',
    handler: async () => shareholderView(await opts.countReceipts(), clock.now()),
  });
}
