import { z } from 'zod';
import { STAGES } from './machine.js';
import { normaliseName, normalisePhone } from './contact.js';
import { parseReferralCode } from './referral-code.js';
import type { ReferralService } from './referral.js';
import { AGENT_MESSAGE_MAX, TRANSCRIPT_MAX } from './desk.js';
import { MESSAGE_MAX, SESSION_ID_RE, TOPIC, type ChatService } from './service.js';
import { shareholderView } from './shareholder.js';
import { AppError } from '../errors.js';
import { route, Reply, type Hub, type Principal } from '../hub/declare.js';

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
  desk: z
    .object({ status: z.enum(['waiting', 'answering']), agent: z.string().optional() })
    .optional()
    .describe('a person: waiting for one (after the hand-off), or one answering (by name); absent: the guide answers'),
});
const agentView = z.object({ id: z.string(), name: z.string() });
const deskEntry = z.object({
  session: z.string(),
  status: z.enum(['waiting', 'held', 'none']),
  reason: z.enum(['asked', 'misunderstood']).optional().describe('asked: the customer asked for a person; misunderstood: the third failed answer'),
  since: z.string().optional(),
  agent: agentView.optional(),
  stage: z.string(),
  stageCode: z.number().int(),
  returnTo: z.string().optional().describe('the journey stage the conversation returns to'),
  subject: z.string(),
  name: z.string().optional(),
  at: z.string(),
});
const lineView = z.object({
  at: z.string(),
  by: z.enum(['customer', 'bot', 'agent', 'note']),
  text: z.string(),
  agent: z.string().optional(),
  stageCode: z.number().int(),
});
const conversation = deskEntry.extend({
  values: z.object({}).loose().describe('what the conversation collected: subject, source, need, product, name, contact, email, memo, receiptNo …'),
  transcript: z.array(lineView).describe(`the last ${TRANSCRIPT_MAX} lines, oldest first`),
  transcriptMax: z.number().int(),
  answer: turnAnswer,
});
const funnel = z.object({
  week: z.string(),
  from: z.string(),
  to: z.string(),
  stages: z.array(z.object({ stage: z.enum(STAGES), stageCode: z.number().int(), sessions: z.number().int() })),
});
const agentMessage = z
  .object({ text: z.string().trim().min(1, 'must not be empty').max(AGENT_MESSAGE_MAX, `must be at most ${AGENT_MESSAGE_MAX} characters`) })
  .strict();
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

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type ChatRoutes = ReturnType<typeof registerChatRoutes>;

export function registerChatRoutes(hub: Hub, opts: ChatRoutesOptions) {
  const { service, referrals, limits } = opts;
  const startLimit = hub.rateLimit('chat-start', { limit: limits.sessionsPerHour, windowMs: 3_600_000 });
  const turnLimit = hub.rateLimit('chat-turn', { limit: limits.turnsPerMinute, windowMs: 60_000 });
  const lookupLimit = hub.rateLimit('chat-lookup', { limit: limits.lookupsPerMinute, windowMs: 60_000 });

  hub.page('/chat', '/chat.html', {
    title: '맞춤 상담 · Guided conversation',
    description: '안내 상담: 필요 파악, 추천, 접수 등록, 진행 조회, 추천인 코드.',
  });

  const postChatStart = route({
    method: 'POST',
    path: '/chat/start',
    body: {
      schema: z.object({ subject: z.string().trim().min(1).max(100), referralCode: referralCode.optional() }).strict(),
    },
    guards: [startLimit],
    response: { 201: turnAnswer },
    cacheControl: 'no-store',
    handler: async (ctx) => Reply.json(await service.start(ctx.body.subject, ctx.body.referralCode), 201),
  });
  const postChat = route({
    method: 'POST',
    path: '/chat',
    body: { schema: turnBody },
    guards: [turnLimit],
    response: turnAnswer,
    cacheControl: 'no-store',
    handler: (ctx) => service.turn(ctx.body.session, ctx.body),
  });
  const getChatBySession = route({
    method: 'GET',
    path: '/chat/:session',
    params: z.object({ session: sessionId }),
    guards: [turnLimit],
    response: turnAnswer,
    cacheControl: 'no-store',
    handler: (ctx) => service.get(ctx.params.session),
  });

  // ---- the desk: staff answer in the conversation ------------------------------------------------
  hub.page('/desk', '/desk.html', {
    title: '상담 데스크 · Agent desk',
    description: '직원이 상담원 연결을 요청한 대화를 맡아 실시간으로 답하고 다시 안내 상담으로 돌려보냅니다.',
  });
  // one conversation's live lines and desk changes: the session id is the customer's secret
  hub.topic({
    name: 'chat:*',
    policy: 'close',
    authorize: async (topic) => {
      const id = topic.slice('chat:'.length);
      if (!SESSION_ID_RE.test(id)) return 'unknown';
      try {
        await service.get(id);
        return 'ok';
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return 'unknown';
        throw err;
      }
    },
  });
  hub.topic({
    name: TOPIC.desk,
    policy: 'drop',
    authorize: (_topic, who) => (!who ? 'unauthorized' : who.roles.some((r) => r === 'staff' || r === 'operator') ? 'ok' : 'forbidden'),
  });
  const staff = { roles: ['staff'] } as const;
  const agentOf = (p: Principal | undefined) => ({ id: p!.id, name: p!.name });
  const params = z.object({ session: sessionId });
  const getDesk = route({
    method: 'GET',
    path: '/desk',
    auth: staff,
    response: z.object({ desk: z.array(deskEntry), recent: z.array(deskEntry) }),
    cacheControl: 'no-store',
    handler: () => service.inbox(),
  });
  const getDeskFunnel = route({ method: 'GET', path: '/desk/funnel', auth: staff, response: funnel, cacheControl: 'no-store', handler: () => service.funnel() });
  const getDeskBySession = route({
    method: 'GET',
    path: '/desk/:session',
    params,
    auth: staff,
    response: conversation,
    cacheControl: 'no-store',
    handler: (ctx) => service.conversation(ctx.params.session),
  });
  const postDeskBySessionTake = route({
    method: 'POST',
    path: '/desk/:session/take',
    params,
    auth: staff,
    response: deskEntry,
    cacheControl: 'no-store',
    handler: (ctx) => service.take(ctx.params.session, agentOf(ctx.identity)),
  });
  const postDeskBySessionMessages = route({
    method: 'POST',
    path: '/desk/:session/messages',
    params,
    body: { schema: agentMessage },
    auth: staff,
    response: { 201: lineView },
    cacheControl: 'no-store',
    handler: async (ctx) => Reply.json(await service.say(ctx.params.session, agentOf(ctx.identity), ctx.body.text), 201),
  });
  const postDeskBySessionReturn = route({
    method: 'POST',
    path: '/desk/:session/return',
    params,
    auth: staff,
    response: turnAnswer,
    cacheControl: 'no-store',
    handler: (ctx) => service.handBack(ctx.params.session, agentOf(ctx.identity)),
  });

  const getChatBySessionTranscript = route({
    method: 'GET',
    path: '/chat/:session/transcript',
    params: z.object({ session: sessionId }),
    guards: [turnLimit],
    response: z.object({ transcript: z.array(lineView).describe(`the last ${TRANSCRIPT_MAX} lines, oldest first`), transcriptMax: z.number().int() }),
    cacheControl: 'no-store',
    handler: (ctx) => service.transcript(ctx.params.session),
  });

  const postReferral = route({
    method: 'POST',
    path: '/referral',
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
  const getReferralByCode = route({
    method: 'GET',
    path: '/referral/:code',
    params: z.object({ code: referralCode }),
    guards: [lookupLimit],
    response: referralInfo,
    cacheControl: 'no-store',
    handler: (ctx) => referrals.info(ctx.params.code),
  });
  const getShareholder = route({
    method: 'GET',
    path: '/shareholder',
    guards: [lookupLimit],
    response: shareholder,
    cacheControl: 'no-store',
    handler: async () => shareholderView(await opts.countReceipts(), opts.now()),
  });
  return hub.mount('/api', {
    postChatStart,
    postChat,
    getChatBySession,
    getDesk,
    getDeskFunnel,
    getDeskBySession,
    postDeskBySessionTake,
    postDeskBySessionMessages,
    postDeskBySessionReturn,
    getChatBySessionTranscript,
    postReferral,
    getReferralByCode,
    getShareholder,
  });
}
