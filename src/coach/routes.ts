import { z } from 'zod';
import { OWNER_HEADER, OWNER_ID_RE, ownerFromHeader, signOwner } from './owner-id.js';
import { isTimeZone, MAX_ACTIONS, MAX_PAGE, PHASES, STATUSES, type CoachService } from './service.js';
import { route, Reply, qInt, type Hub, type RequestContext } from '../hub/declare.js';

export interface CoachRoutesOptions {
  service: CoachService;
  /** When set, X-Service-Owner must carry an owner id signed with it (see src/coach/owner-id.ts). */
  ownerSecret?: string;
  /** Calls per client and minute on the three owner routes. */
  callsPerMinute: number;
}

const actionId = z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'must be 1 to 40 of A-Z a-z 0-9 _ -');
const ownerBody = z
  .object({
    vision: z.string().trim().min(1).max(300).optional(),
    timeZone: z.string().max(64).refine(isTimeZone, 'must be an IANA time zone (e.g. Asia/Seoul)').optional(),
    actions: z
      .array(
        z
          .object({
            id: actionId,
            title: z.string().trim().min(1).max(120),
            phase: z.enum(PHASES),
            reward: z.number().int().min(0).max(1_000_000),
          })
          .strict(),
      )
      .max(MAX_ACTIONS),
  })
  .strict();

// answers (docs/coach.md)
const action = z.object({
  id: z.string(),
  title: z.string(),
  phase: z.enum(PHASES),
  status: z.string(),
  reward: z.number(),
  paidAt: z.string().optional(),
  completedOn: z.string().optional(),
});
const profile = z.object({ vision: z.string().optional(), timeZone: z.string(), points: z.number(), actions: z.array(action) });
const nudge = z.object({ date: z.string(), title: z.string(), message: z.string(), vision: z.string().optional(), action });
const registered = profile.extend({ ownerId: z.string(), header: z.string() });
const summary = z.object({
  ownerId: z.string(),
  header: z.string().describe('the value the owner sends as X-Service-Owner (the personal link carries it)'),
  vision: z.string().optional(),
  timeZone: z.string(),
  points: z.number(),
  actions: z.object({ 대기: z.number(), 진행: z.number(), 완료: z.number() }).describe('how many actions are in each status'),
  createdAt: z.string(),
  updatedAt: z.string(),
});
const ownerParams = z.object({ ownerId: z.string().regex(OWNER_ID_RE, 'must be 1 to 64 of A-Z a-z 0-9 _ -') });

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type CoachRoutes = ReturnType<typeof registerCoachRoutes>;

export function registerCoachRoutes(hub: Hub, opts: CoachRoutesOptions) {
  const { service, ownerSecret } = opts;
  const limit = hub.rateLimit('coach', { limit: opts.callsPerMinute, windowMs: 60_000 });
  const owner = (ctx: RequestContext) => ownerFromHeader(ctx.headers[OWNER_HEADER], ownerSecret);
  const headerOf = (ownerId: string) => (ownerSecret ? signOwner(ownerSecret, ownerId) : ownerId);

  hub.page('/coach', '/coach.html', {
    title: '코칭 콜 · Coaching',
    description: '사장님의 오늘의 카드, 비전, 단계(티·옴·타·음)별 할 일과 보상.',
  });
  hub.page('/coach/owners', '/coach-owners.html', {
    title: '코칭 대상자 관리 · Coaching owners',
    description: '직원이 코칭 사장님(비전, 할 일, 보상)을 등록·수정하고 포인트를 보며 사장님마다 개인 링크를 보냅니다.',
  });

  const getNudge = route({
    method: 'GET',
    path: '/nudge',
    guards: [limit],
    response: nudge,
    summary: "The owner's card of the day (204 without a body when no action is open)",
    cacheControl: 'no-store',
    handler: async (ctx) => (await service.nudge(owner(ctx))) ?? Reply.empty(204),
  });
  const getProfile = route({
    method: 'GET',
    path: '/profile',
    guards: [limit],
    response: profile,
    cacheControl: 'no-store',
    handler: (ctx) => service.profile(owner(ctx)),
  });
  const postAction = route({
    method: 'POST',
    path: '/action',
    body: { schema: z.object({ actionId, status: z.enum(STATUSES) }).strict() },
    guards: [limit],
    response: z.object({ action, rewarded: z.boolean(), reward: z.number(), points: z.number() }),
    cacheControl: 'no-store',
    handler: (ctx) => service.setAction(owner(ctx), ctx.body.actionId, ctx.body.status),
  });
  const getOwners = route({
    method: 'GET',
    path: '/owners',
    query: z.object({ limit: qInt({ min: 1, max: MAX_PAGE }).default(20), offset: qInt({ min: 0, max: 100_000 }).default(0) }).strict(),
    auth: { roles: ['staff'] },
    response: z.object({ owners: z.array(summary), total: z.number(), limit: z.number(), offset: z.number() }),
    summary: 'Registered coaching owners, newest first, with action counts by status and points',
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const { owners, total } = await service.list(ctx.query);
      return { owners: owners.map((o) => ({ ...o, header: headerOf(o.ownerId) })), total, ...ctx.query };
    },
  });
  const getOwnersByOwnerId = route({
    method: 'GET',
    path: '/owners/:ownerId',
    params: ownerParams,
    auth: { roles: ['staff'] },
    response: registered,
    summary: 'One coaching owner with every action, for staff to edit',
    cacheControl: 'no-store',
    handler: async (ctx) => ({ ownerId: ctx.params.ownerId, header: headerOf(ctx.params.ownerId), ...(await service.profile(ctx.params.ownerId)) }),
  });
  const putOwnersByOwnerId = route({
    method: 'PUT',
    path: '/owners/:ownerId',
    params: ownerParams,
    body: { schema: ownerBody },
    auth: { roles: ['staff'] },
    response: { 200: registered, 201: registered },
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const { created, profile } = await service.register(ctx.params.ownerId, ctx.body);
      return Reply.json({ ownerId: ctx.params.ownerId, header: headerOf(ctx.params.ownerId), ...profile }, created ? 201 : 200);
    },
  });
  return hub.mount('/api/coach', {
    getNudge,
    getProfile,
    postAction,
    getOwners,
    getOwnersByOwnerId,
    putOwnersByOwnerId,
  });
}
