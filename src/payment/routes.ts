import { z } from 'zod';
import { AppError } from '../errors.js';
import { parseClientJson, route, validate, Reply, qInt, type BodyReader, type Hub, type IdempotencySpec, type RequestContext } from '../hub/declare.js';
import type { Json } from '../store/port.js';
import type { StoredAnswer } from '../idempotency.js';
import type { PaymentBooks } from './books.js';
import type { Corrections } from './corrections.js';
import { parsePeriod, statementCsv } from './statements.js';
import type { ChallengeLifecycle } from './lifecycle.js';
import { verifyWebhook, type ChainClient } from './peers.js';
import type { PayoutService } from './payouts.js';
import { receiptLeafData, receipts } from './receipts.js';
import type { TreeHeads } from './tree-heads.js';
import type { Reconciler } from './reconcile.js';
import type { ChallengeProgramPort, Effect, PaymentService } from './service.js';
import { USER_ID_RE, type SsoVerifier } from './sso.js';
import { A, id, reason, record, units, week, TOKEN_API } from './schemas.js';
import type { registerPaymentChainRoutes } from './routes-chain.js';
import type { registerSettlementRoutes } from './routes-settlement.js';

/**
 * Routes of the token payment relay (document 2; docs/payment.md). Users: the banking service's SSO
 * token, an identity provider of the hub (`auth: SSO_USER`); operators: the hub's operator role.
 * Every POST takes an Idempotency-Key.
 */

export interface PaymentRoutesOptions {
  service: PaymentService;
  lifecycle: ChallengeLifecycle;
  payouts: PayoutService;
  /** Operator corrections (reversals) over the relay's store. */
  corrections: Corrections;
  /** Statements and the ledger check over the relay's store. */
  books: PaymentBooks;
  sso: SsoVerifier;
  webhookSecret?: string;
  chain?: ChainClient;
  /** The chain's signed tree heads, verified (set when CHAIN_PUBLIC_KEY is). */
  treeHeads?: TreeHeads;
  program?: ChallengeProgramPort;
  /** Reconciliation with the bank (set when BANKING_URL is). */
  reconciler?: Reconciler;
  /** The hub's public address (PUBLIC_URL, else its listening address once it listens). */
  publicUrl?: () => string | undefined;
  /** State-changing requests per user per minute (default 120), counted in the Store. */
  postsPerMinute?: number;
}

/** The quote of a challenge purchase (amounts in minor units). */
const quoteAnswer = z.object({
  challenge_id: z.string(), name: z.string(), account_size: z.number(), amount: z.string(), fee: z.string(), total: z.string(),
  from_credit: z.string(), from_wallet: z.string(), wallet_balance: z.string(), wallet_after: z.string(), sufficient: z.boolean(),
  peg_rate: z.string(), snapshot_ts: z.number().int(), decimals: z.number().int(),
}).describe('what a purchase of the challenge would charge now (minor units) and the peg it would fix');

const OPERATOR = { roles: ['operator'] };
const SSO_PROVIDER = 'sso';
/** The wallet's users: signed in at the bank (docs/payment.md), not with the hub's own tokens. */
const SSO_USER = { provider: SSO_PROVIDER };
/** Keeps the raw text beside the parsed JSON (the webhook signature covers the exact bytes). */
const rawJson: BodyReader = {
  mediaTypes: ['application/json'],
  parse(raw) {
    const text = raw.toString('utf8');
    return { raw: text, json: parseClientJson(text) };
  },
};

/**
 * The relay's routes as data (hub.mount under TOKEN_API): this file's, the chain's (routes-chain.ts)
 * and the settlement report's (routes-settlement.ts). Their types are what the pages' client reads
 * (web/common/api.ts, through web/common/payment-routes.ts).
 */
export type PaymentRoutes = ReturnType<typeof registerPaymentRoutes> & ReturnType<typeof registerPaymentChainRoutes> & ReturnType<typeof registerSettlementRoutes>;

export function registerPaymentRoutes(hub: Hub, opts: PaymentRoutesOptions) {
  const { service, lifecycle, payouts, corrections, books, sso } = opts;
  // the bank's SSO token is a second identity provider of the hub: a route that names it gets the
  // SSO user as ctx.identity ({id: the user id, kind: 'sso'}), checked before its inputs are read
  hub.identityProvider(SSO_PROVIDER, {
    authenticate: async (token) => {
      const id = await sso.user(token);
      return { id, name: id, roles: [], kind: 'sso' };
    },
    maxTokenLength: 4096,
    missing: 'this route needs the banking SSO token (Authorization: Bearer <token>)',
    description: "A JWT from the bank's single sign-on (the wallet's users), verified against its JWKS",
  });
  const uid = (ctx: RequestContext) => ctx.identity!.id;
  // each SSO user's POSTs are bounded
  const userLimit = hub.rateLimit('payment-post', { limit: opts.postsPerMinute ?? 120, windowMs: 60_000, key: (ctx) => ctx.identity?.id });
  const sameUser = (ctx: RequestContext, bodyUser: string) => {
    if (bodyUser !== uid(ctx)) throw new AppError('forbidden', 'forbidden', 'user_id does not match the SSO token');
  };
  // a 303 is the on-ramp's answer; a script asking for JSON only (Accept: application/json, as the
  // /wallet page does, since fetch cannot read a redirect's Location) gets 200 with the address instead
  const answer = (a: StoredAnswer, replayed: boolean, wantsJson: boolean) => {
    const h = { ...(a.headers ?? {}), ...(replayed ? { 'idempotent-replayed': 'true' } : {}) };
    if (a.status === 303) return wantsJson ? Reply.json(a.body, 200, h) : Reply.empty(303, h);
    return Reply.json(a.body, a.status, h);
  };
  const wantsJson = (ctx: RequestContext) => ctx.headers.accept === 'application/json';
  // every POST runs once per Idempotency-Key (the hub runs it: src/hub/idempotent.ts), keys kept
  // where the relay has always kept them; a user's keys are the SSO user's, an operator's their own
  const present = (a: StoredAnswer, ctx: RequestContext) => answer(a, true, wantsJson(ctx));
  const perUser = { key: 'required', namespace: 'pay:idem', scope: uid, present } as const satisfies IdempotencySpec;
  const perOperator = { key: 'required', namespace: 'pay:idem', scope: (ctx: RequestContext) => `op:${ctx.identity!.id}`, present } as const satisfies IdempotencySpec;
  /** The effect's ticket: the service reads the key in its update and records its answer there. */
  const effect = (ctx: RequestContext): Effect => ({ ticket: ctx.idempotency?.ticket });

  hub.page('/wallet', '/wallet.html', { title: 'Wallet', description: '토큰 지갑: 잔액, 거래 내역, 챌린지 구매(견적 포함)와 페그, 수익 지급, 영수증' });

  const challenges = route({ method: 'GET', path: '/challenges', response: A.challenges, handler: () => service.challenges() });

  const buy = route({
    method: 'POST',
    path: '/challenge/buy',
    body: { schema: z.object({ challenge_id: id, user_id: z.string().regex(USER_ID_RE, 'must be a user id') }).strict() },
    auth: SSO_USER,
    guards: [userLimit],
    idempotency: perUser,
    response: A.effect,
    handler: (ctx) => {
      sameUser(ctx, ctx.body.user_id);
      return service.buy(uid(ctx), ctx.body.challenge_id, effect(ctx), opts.program);
    },
  });

  const quote = route({
    method: 'GET',
    path: '/challenge/quote',
    query: z.object({ challenge_id: id }).strict(),
    auth: SSO_USER,
    response: quoteAnswer,
    summary: 'What buying the challenge would charge the caller now, in tokens (amount, fee, total, from the learning credit and the wallet) and the peg a purchase now would fix; read-only',
    handler: (ctx) => service.quote(uid(ctx), ctx.query.challenge_id),
  });

  const wallet = route({
    method: 'GET',
    path: '/wallet',
    query: z.object({ limit: qInt({ min: 1, max: 100 }).default(20), offset: qInt({ min: 0, max: 10_000 }).default(0) }).strict(),
    auth: SSO_USER,
    response: A.wallet,
    handler: (ctx) => service.wallet(uid(ctx), ctx.query),
  });

  const myChallenges = route({ method: 'GET', path: '/my/challenges', auth: SSO_USER, response: record('the caller\'s challenges'), handler: (ctx) => service.myChallenges(uid(ctx)) });

  const peg = route({
    method: 'GET',
    path: '/peg/:challenge_id',
    params: z.object({ challenge_id: id }),
    auth: SSO_USER,
    response: record('the peg snapshot of a challenge'),
    handler: (ctx) => service.peg(uid(ctx), ctx.params.challenge_id),
  });

  const payout = route({
    method: 'POST',
    path: '/payout/request',
    body: { schema: z.object({ week }).strict() },
    auth: SSO_USER,
    guards: [userLimit],
    idempotency: perUser,
    response: A.effect,
    handler: (ctx) => payouts.payout(ctx.body.week, uid(ctx), effect(ctx)),
  });

  const onramp = route({
    method: 'POST',
    path: '/onramp',
    body: { schema: z.object({ amount_krw: z.number().int('must be an integer').positive('must be positive').max(Number.MAX_SAFE_INTEGER), method: z.enum(['card', 'transfer']) }).strict() },
    auth: SSO_USER,
    guards: [userLimit],
    idempotency: perUser,
    response: A.effect,
    summary: 'Starts a payment at the banking service: 303 to its page, or 200 with the address for Accept: application/json',
    handler: async (ctx) => {
      // from configuration, never from the request's Host header
      const base = opts.publicUrl?.();
      if (!base) throw new AppError('unavailable', 'public_url_not_configured', 'PUBLIC_URL is not configured');
      const started = await service.onramp(uid(ctx), ctx.body.amount_krw, ctx.body.method, base, `${base}/wallet`, effect(ctx));
      return answer(started, false, wantsJson(ctx));
    },
  });

  const bankingWebhook = route({
    method: 'POST',
    path: '/banking/webhook',
    body: { schema: z.object({ raw: z.string(), json: z.unknown() }), reader: rawJson },
    response: record('the confirmed on-ramp'),
    handler: async (ctx) => {
      if (!opts.webhookSecret) throw new AppError('unavailable', 'webhook_not_configured', 'BANKING_WEBHOOK_SECRET is not configured');
      const bad = verifyWebhook(opts.webhookSecret, ctx.headers, ctx.body.raw, service.now());
      if (bad) throw new AppError('unauthorized', 'invalid_signature', bad);
      const ev = validate(
        z.object({ type: z.literal('payment.confirmed'), data: z.object({ payment_id: id, ref: id, amount_krw: z.number().int().positive(), usd_micro: z.number().int().positive() }).passthrough() }).passthrough(),
        ctx.body.json,
        'body',
      );
      return service.confirmOnramp(ev.data);
    },
  });

  const offrampRequest = route({
    method: 'POST',
    path: '/offramp',
    body: { schema: z.object({ amount: units }).strict() },
    auth: SSO_USER,
    guards: [userLimit],
    idempotency: perUser,
    response: A.effect,
    handler: (ctx) => service.offramp(uid(ctx), ctx.body.amount, effect(ctx)),
  });

  const scaleUp = route({
    method: 'POST',
    path: '/challenge/scale-up',
    body: { schema: z.object({ challenge_id: id }).strict() },
    auth: SSO_USER,
    guards: [userLimit],
    idempotency: perUser,
    response: A.effect,
    handler: (ctx) => lifecycle.scaleUp(uid(ctx), ctx.body.challenge_id, effect(ctx)),
  });

  const withdraw = route({
    method: 'POST',
    path: '/challenge/withdraw',
    body: { schema: z.object({ challenge_id: id }).strict() },
    auth: SSO_USER,
    guards: [userLimit],
    idempotency: perUser,
    response: A.effect,
    handler: (ctx) => lifecycle.withdraw(uid(ctx), ctx.body.challenge_id, effect(ctx)),
  });

  const period = z.object({
    account: z.string().regex(/^[A-Za-z0-9_:.-]{1,160}$/, 'must be an account name'),
    from: z.string().min(4).max(40),
    to: z.string().min(4).max(40),
    format: z.enum(['json', 'csv']).default('json'),
  }).strict();
  const statementReply = async (account: string, q: { from: string; to: string; format: 'json' | 'csv' }) => {
    const p = parsePeriod(q.from, q.to);
    const s = await books.statement(account, p.from, p.to);
    return q.format === 'csv' ? Reply.text(statementCsv(s), 'text/csv; charset=utf-8') : Reply.json(s as unknown as Json);
  };
  const ownStatement = route({
    method: 'GET',
    path: '/statement',
    query: period,
    auth: SSO_USER,
    response: A.statement,
    summary: 'Statement of one of the caller\'s accounts (wallet, credit, collateral or a challenge id) over [from, to), JSON or CSV',
    handler: async (ctx) => statementReply(await books.userStatementAccount(uid(ctx), ctx.query.account), ctx.query),
  });

  const ownReceipts = route({
    method: 'GET',
    path: '/receipts',
    query: z.object({ limit: qInt({ min: 1, max: 100 }).default(20), offset: qInt({ min: 0, max: 100_000 }).default(0) }).strict(),
    auth: SSO_USER,
    response: A.receipts,
    handler: (ctx) => service.receipts(uid(ctx), ctx.query),
  });

  const receipt = route({
    method: 'GET',
    path: '/receipt/:hash',
    params: z.object({ hash: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits') }),
    auth: SSO_USER,
    response: A.receipt,
    handler: async (ctx) => {
      const r = await service.receipt(ctx.params.hash, uid(ctx));
      let proof: Json = null;
      let sth: Json = null;
      let verified = false;
      let treeHeadError: Json = null;
      const link = r.chain as { leaf_index: number; tree_size: number } | null;
      if (link && opts.chain) {
        // the proof is asked against the head the hub has just verified (signature and consistency
        // with the last verified one); a dead chain leaves the proof out, never the receipt
        const head = opts.treeHeads ? await opts.treeHeads.refresh().catch((err: unknown) => ((treeHeadError = err instanceof AppError ? err.code : 'chain_unavailable'), null)) : null;
        const p = await opts.chain.proof(link.leaf_index, head?.sth.tree_size).catch(() => null);
        if (p) proof = p as unknown as Json;
        if (p && head && link.leaf_index < head.sth.tree_size) {
          sth = head.sth as unknown as Json;
          // the leaf must be this receipt's: recomputed from its content (hash included), never
          // taken from the chain's answer, so a rewritten leaf does not verify
          const content = receipts.decode(r.receipt);
          const leaf = content ? receiptLeafData(ctx.params.hash, content) : null;
          verified = leaf !== null && opts.treeHeads!.inclusion(head.sth, p, leaf);
        }
      }
      return { ...r, proof, sth, verified, tree_head_error: treeHeadError };
    },
  });

  // ---- operators ------------------------------------------------------------------------------
  const recon = () => {
    if (!opts.reconciler) throw new AppError('unavailable', 'banking_not_configured', 'BANKING_URL is not configured');
    return opts.reconciler;
  };
  const offramp = route({
    method: 'GET',
    path: '/offramp/:id',
    params: z.object({ id: z.string().regex(/^off_[0-9a-f]{32}$/, 'must be an off-ramp id') }),
    auth: SSO_USER,
    response: record('an off-ramp\'s state: sent, paid or returned'),
    handler: (ctx) => recon().offrampStatus(ctx.params.id, uid(ctx)),
  });
  const reconcile = route({
    method: 'POST',
    path: '/ops/reconcile',
    auth: OPERATOR,
    body: { schema: z.object({}).strict().optional(), optional: true },
    response: record('what the pull of the bank\'s events settled'),
    summary: 'Reads the bank\'s events since the cursor now and settles what the webhook missed (once each)',
    handler: async () => (await recon().pull()) as unknown as Json,
  });
  const differences = route({ method: 'GET', path: '/ops/reconcile/differences', auth: OPERATOR, response: z.object({ differences: z.array(record('a bank event that moved nothing')) }).describe('bank events that moved nothing'), handler: async () => ({ differences: await recon().differences() }) });
  const ledgerCheck = route({ method: 'GET', path: '/ops/ledger/check', auth: OPERATOR, response: A.ledgerCheck, handler: () => books.check() });
  const reviews = route({
    method: 'GET',
    path: '/ops/reviews',
    auth: OPERATOR,
    query: z.object({ state: z.enum(['open', 'all']).default('open') }).strict(),
    response: A.reviews,
    handler: (ctx) => payouts.reviews(ctx.query.state === 'open'),
  });
  const decide = route({
    method: 'POST',
    path: '/ops/reviews/:id/:action',
    auth: OPERATOR,
    params: z.object({ id: z.string().regex(/^rv_[A-Za-z0-9_.-]{1,100}$/, 'must be a review id'), action: z.enum(['approve', 'reject']) }),
    body: { schema: z.object({ reason }).strict() },
    idempotency: perOperator,
    response: A.effect,
    handler: (ctx) => payouts.decide(ctx.params.id, ctx.params.action, ctx.identity!.name, ctx.body.reason, effect(ctx)),
  });
  const opsStatement = route({
    method: 'GET',
    path: '/ops/statement',
    auth: OPERATOR,
    query: period,
    response: A.statement,
    summary: 'Statement of any ledger account (escrow, operating, hedge_pool, bank, a user\'s or a challenge\'s) over [from, to), JSON or CSV',
    handler: async (ctx) => statementReply(await books.knownAccount(ctx.query.account), ctx.query),
  });
  const reverse = route({
    method: 'POST',
    path: '/ops/transfers/:id/reverse',
    auth: OPERATOR,
    params: z.object({ id: z.string().regex(/^[A-Za-z0-9_:.-]{1,200}$/, 'must be a transfer id') }),
    body: { schema: z.object({ reason }).strict() },
    idempotency: perOperator,
    response: A.effect,
    summary: 'Reverses a posted payout or on-ramp credit by a new linked transfer, once',
    handler: (ctx) => corrections.reverse(ctx.params.id, ctx.identity!.id, ctx.body.reason, effect(ctx)),
  });
  const warnings = route({ method: 'GET', path: '/ops/warnings', auth: OPERATOR, response: A.warnings, handler: () => payouts.warnings() });
  const payoutRun = route({ method: 'GET', path: '/ops/payout-runs/:week', auth: OPERATOR, params: z.object({ week }), response: record('the payout run of the week'), handler: (ctx) => payouts.report(ctx.params.week) });
  const runPayouts = route({
    method: 'POST',
    path: '/ops/payout-runs/:week',
    auth: OPERATOR,
    params: z.object({ week }),
    body: { schema: z.object({}).strict().optional(), optional: true },
    idempotency: perOperator,
    response: A.effect,
    handler: (ctx) => payouts.runWeek(ctx.params.week),
  });
  const judge = route({
    method: 'POST',
    path: '/ops/challenges/:id/judge',
    auth: OPERATOR,
    params: z.object({ id }),
    body: { schema: z.object({ outcome: z.enum(['pass', 'fail']), reason }).strict() },
    idempotency: perOperator,
    response: A.effect,
    handler: (ctx) => lifecycle.judge(ctx.params.id, ctx.body.outcome, ctx.identity!.name, ctx.body.reason, effect(ctx)),
  });
  const challengeEvent = route({
    method: 'POST',
    path: '/ops/challenges/:id/events',
    auth: OPERATOR,
    params: z.object({ id }),
    body: {
      schema: z.discriminatedUnion('type', [
        z.object({ type: z.literal('fill'), event_id: id, realized_cents: z.number().int().min(-1e12).max(1e12), ts: z.number().int().positive().optional() }).strict(),
        z.object({ type: z.literal('violation'), event_id: id, rule: z.string().regex(/^[a-z_]{1,40}$/), ts: z.number().int().positive().optional() }).strict(),
      ]),
    },
    idempotency: perOperator,
    response: A.event,
    handler: (ctx) => lifecycle.event(ctx.params.id, { ...ctx.body, ts: ctx.body.ts ?? service.now() }),
  });
  const fundPool = route({
    method: 'POST',
    path: '/ops/pool/fund',
    auth: OPERATOR,
    body: { schema: z.object({ amount: units }).strict() },
    idempotency: perOperator,
    response: A.effect,
    handler: (ctx) => service.fundPool(ctx.body.amount, ctx.identity!.name, effect(ctx)),
  });

  return hub.mount(TOKEN_API, {
    challenges,
    buy,
    quote,
    wallet,
    myChallenges,
    peg,
    payout,
    onramp,
    bankingWebhook,
    offrampRequest,
    scaleUp,
    withdraw,
    statement: ownStatement,
    receipts: ownReceipts,
    receipt,
    offramp,
    reconcile,
    differences,
    ledgerCheck,
    reviews,
    decide,
    opsStatement,
    reverse,
    warnings,
    payoutRun,
    runPayouts,
    judge,
    challengeEvent,
    fundPool,
  });
}
