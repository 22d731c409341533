import { createHash } from 'node:crypto';
import { z } from 'zod';
import { route, Reply, validate, qDecimal, qInt, qText, type AuthSpec, type Hub, type IdempotencySpec, type RequestContext, type RouteDef, type Declared } from '../hub/declare.js';
import { AppError } from '../errors.js';
import type { Outbox } from '../outbox.js';
import type { Json } from '../store/port.js';
import { V_MAX, V_MIN, UNITS_PER_WORK_MONTH } from './plan.js';
import { REWARD_TOPIC, type RewardService, type WorkVerifier } from './service.js';
import type { WorkSignatureGuard } from './signing.js';
import { rewardResponses as R } from './schemas.js';
import { routeLines, type RouteLine } from './guide.js';

export interface RewardRoutesOptions {
  service: RewardService;
  outbox: Outbox;
  /** Present when REWARD_SIGNING=required: /work then needs ts and sig. */
  signatures?: WorkSignatureGuard;
}

const memberId = qText(64);
const OPERATOR = { roles: ['operator'] } as const;

/** Query schemas of the document's routes (also used by bench/http to serve the same handlers). */
export const memberQuery = z.object({ id: memberId });
export const workQuery = z.object({
  id: memberId,
  kc: qInt({ min: 1, max: UNITS_PER_WORK_MONTH }),
  v: qInt({ min: V_MIN, max: V_MAX }),
  ts: z.union([z.string(), z.number()]).optional(),
  sig: z.string().max(200).optional(),
});
const exchangeQuery = z.object({
  id: memberId,
  amt: qDecimal(),
  ts: z.union([z.string(), z.number()]).optional(),
  sig: z.string().max(200).optional(),
});
const cultureQuery = z.object({ country: qText(2), lang: qText(2), name: qText(64) });
const listQuery = z.object({
  limit: qInt({ min: 1, max: 1000 }).optional(),
  before: qInt({ min: 1 }).optional(),
});

/** Parameters of a state-changing reward route: from the query string, or a JSON body on POST. */
const paramsBody = { schema: z.record(z.string(), z.unknown()).optional(), optional: true };

/**
 * GET and POST for the routes that change state on GET (the document's /work, /exchange, /culture).
 * Both answer `Cache-Control: no-store`. On POST the parameters may come in a JSON body; a field
 * given in both places takes the body's value.
 */
function readWrite<S extends z.ZodType, const P extends string, A extends z.ZodType>(
  path: P,
  schema: S,
  response: A,
  run: (input: z.output<S>, ctx: RequestContext) => Promise<unknown>,
  auth?: AuthSpec,
  idempotency?: IdempotencySpec,
): { get: Declared<'GET', P, S, z.ZodType<undefined, undefined>, z.ZodType<Record<string, string>>, A>; post: Declared<'POST', P, z.ZodType<Record<string, string>>, typeof paramsBody.schema, z.ZodType<Record<string, string>>, A> } {
  const get = {
    method: 'GET',
    path,
    auth,
    idempotency,
    query: schema,
    response,
    cacheControl: 'no-store',
    handler: (ctx) => run(ctx.query as z.output<S>, ctx),
  } as RouteDef<any, any, any>;
  const post = {
    method: 'POST',
    path,
    auth,
    idempotency,
    body: paramsBody,
    response,
    cacheControl: 'no-store',
    handler: (ctx) => run(validate(schema, { ...(ctx.query as object), ...(ctx.body ?? {}) }, 'query') as z.output<S>, ctx),
  } as RouteDef<any, any, any>;
  return { get, post } as never;
}

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type RewardRoutes = ReturnType<typeof registerRewardRoutes>;

export function registerRewardRoutes(hub: Hub, opts: RewardRoutesOptions) {
  const { service, outbox, signatures } = opts;
  hub.topic({ name: REWARD_TOPIC, policy: 'drop' });

  hub.page('/', '/reward.html', {
    title: '보상 플랜 · Reward plan',
    description: '보상 플랜의 헌장, 3배 창출 분배, 만기 충당률과 실시간 수치.',
  });

  // ---- the document's ten routes ------------------------------------------------------------
  const getStats = route({ method: 'GET', path: '/stats', response: R.stats, cacheControl: 'no-cache', handler: () => service.stats() });
  const getMaturity = route({ method: 'GET', path: '/maturity', response: R.maturity, cacheControl: 'no-cache', handler: () => service.maturity() });
  const getMember = route({
    method: 'GET',
    path: '/member',
    query: memberQuery,
    response: R.member,
    cacheControl: 'no-cache',
    handler: (ctx) => service.member(ctx.query.id),
  });

  // a credit retried with the same Idempotency-Key (after a 503 or a lost answer) is made once
  const work = readWrite('/work', workQuery, R.work, (q, ctx) => {
    let verify: WorkVerifier | undefined;
    if (signatures) {
      verify = async (publicKey, member) => {
        await signatures.check({ publicKey, id: member.id, kc: q.kc, v: q.v, ts: q.ts ?? null, sig: q.sig ?? null });
      };
    }
    const run = ctx.idempotency;
    const answer = run && ((result: Json) => run.finish(200, result));
    // a retry of the key names the same credit: the member makes it once (service.ts)
    const creditId = run && `cr_${createHash('sha256').update(run.ticket.storeKey).digest('base64url').slice(0, 16)}`;
    return service.work({ id: q.id, kc: q.kc, v: q.v, verify, ...(answer ? { answer, creditId } : {}) }).then((r) => {
      outbox.kick();
      return r;
    });
  }, undefined, { key: 'optional' });
  const exchange = readWrite('/exchange', exchangeQuery, R.exchange, (q) => {
    // with REWARD_SIGNING=required an exchange is signed by the member, as work is
    const verify: WorkVerifier | undefined = signatures
      ? async (publicKey, member) => {
          await signatures.checkExchange({ publicKey, id: member.id, amt: q.amt, ts: q.ts ?? null, sig: q.sig ?? null });
        }
      : undefined;
    return service.exchange({ id: q.id, amt: q.amt, verify });
  });
  // creating a cultural zone is an operator's act (GET as the document says, with the operator's token)
  const culture = readWrite('/culture', cultureQuery, R.culture, (q) => service.culture(q), OPERATOR);

  const getDeclare = route({ method: 'GET', path: '/declare', response: R.declare, summary: 'charter text of the nine principles', handler: () => service.declare() });
  // the routes /spec lists are read from their declarations (src/reward/guide.ts routeLines)
  const getSpec = route({ method: 'GET', path: '/spec', response: R.spec, summary: 'this document', handler: (): ReturnType<RewardService['spec']> => service.spec(documentRoutes()) });
  const getReadme = route({
    method: 'GET',
    path: '/readme',
    summary: 'markdown guide',
    handler: () => Reply.text(service.readme(), 'text/markdown; charset=utf-8'),
  });

  // ---- routes the document leaves open (docs/api.md) ----------------------------------------
  const postMembers = route({
    method: 'POST',
    path: '/members',
    auth: OPERATOR,
    body: {
      schema: z.object({ name: z.string(), zone: z.string(), public_key: z.string().optional() }),
    },
    response: { 201: R.createdMember },
    handler: async (ctx) => Reply.json(await service.createMember(ctx.body), 201),
  });
  const getZones = route({
    method: 'GET',
    path: '/zones',
    query: z.object({ limit: qInt({ min: 1, max: 1000 }).optional(), offset: qInt({ min: 0 }).optional() }),
    response: R.zones,
    handler: (ctx) => service.listZones(ctx.query),
  });
  const getZonesById = route({
    method: 'GET',
    path: '/zones/:id',
    params: z.object({ id: z.string().min(1).max(200) }),
    response: R.zone,
    handler: (ctx) => service.zone(ctx.params.id),
  });
  const getLedger = route({
    method: 'GET',
    path: '/ledger',
    // one member's ledger and totals are open (as /member is); the whole ledger is the operator's
    auth: { optional: true },
    query: listQuery.extend({ member: memberId.optional() }),
    response: R.ledger,
    handler: (ctx) => {
      if (ctx.query.member === undefined && !ctx.identity?.roles.includes('operator')) {
        if (!ctx.identity) throw new AppError('unauthorized', 'unauthorized', 'the whole ledger needs the operator: sign in, or name a member');
        throw new AppError('forbidden', 'forbidden', 'the whole ledger needs the operator role; name a member to read one ledger');
      }
      return service.rewardLedger(ctx.query);
    },
  });
  const getEcosystem = route({
    method: 'GET',
    path: '/ecosystem',
    query: listQuery,
    response: R.ecosystem,
    handler: (ctx) => service.ecosystemLedger(ctx.query),
  });
  const getEcosystemSync = route({
    method: 'GET',
    path: '/ecosystem/sync',
    query: z.object({ limit: qInt({ min: 1, max: 1000 }).optional() }),
    response: R.sync,
    handler: (ctx) => service.syncPayload(ctx.query),
  });
  const getReserve = route({ method: 'GET', path: '/reserve', response: R.reserve, cacheControl: 'no-cache', handler: () => service.reservePool() });
  const getSessions = route({
    method: 'GET',
    path: '/sessions',
    query: z.object({ id: memberId, months: qInt({ min: 1, max: 150 }).optional() }),
    response: R.sessions,
    handler: (ctx) => service.workSessions(ctx.query.id, { months: ctx.query.months }),
  });
  const getSimulation = route({
    method: 'GET',
    path: '/simulation',
    query: z
      .object({
        members: qInt({ min: 1, max: 1_000_000 }).optional(),
        months: qInt({ min: 1, max: 150 }).optional(),
        grade: qInt({ min: 1, max: 9 }).optional(),
        v: qInt({ min: V_MIN, max: V_MAX }).optional(),
        units_per_month: qInt({ min: 1, max: UNITS_PER_WORK_MONTH }).optional(),
        exchange_pct: qInt({ min: 0, max: 100 }).optional(),
        stage: z.enum(['S0', 'S1', 'S2', 'S3', 'S4', 'S5', 'S6']).optional(),
        promote: z.enum(['true', 'false']).transform((s) => s === 'true').optional(),
      })
      .strict(),
    response: R.simulation,
    handler: (ctx) => service.coverageSimulation(ctx.query),
  });
  const getOutbox = route({
    method: 'GET',
    path: '/outbox',
    auth: OPERATOR,
    response: R.outbox,
    cacheControl: 'no-store',
    handler: async () => ({ stats: await outbox.stats(), pending: await outbox.pending() }),
  });
  // the document's routes, at the root as document 3 names them (the three that change state on GET
  // answer POST too)
  const documentRoutes = (): RouteLine[] => routeLines([getStats, getMaturity, getMember, work.get, exchange.get, culture.get, getDeclare, getSpec, getReadme]);
  return {
    ...hub.mount('', {
      getStats,
      getMaturity,
      getMember,
      getWork: work.get,
      postWork: work.post,
      getExchange: exchange.get,
      postExchange: exchange.post,
      getCulture: culture.get,
      postCulture: culture.post,
      getDeclare,
      getSpec,
      getReadme,
    }),
    ...hub.mount('/api/reward', {
      postMembers,
      getZones,
      getZonesById,
      getLedger,
      getEcosystem,
      getEcosystemSync,
      getReserve,
      getSessions,
      getSimulation,
      getOutbox,
    }),
  };
}
