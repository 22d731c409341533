import { z } from 'zod';
import { AppError } from '../errors.js';
import { validate, type BodyReader } from '../hub/http.js';
import { Reply, type Hub, type RequestContext } from '../hub/index.js';
import type { Json } from '../store/port.js';
import { fingerprint, type Idempotency, type StoredAnswer } from '../payment/idempotency.js';
import { checkLedger } from '../payment/check.js';
import { Corrections } from '../payment/corrections.js';
import { knownAccount, parsePeriod, statement, statementCsv, userStatementAccount } from '../payment/statements.js';
import type { ChallengeLifecycle } from '../payment/lifecycle.js';
import { verifyWebhook, type ChainClient } from '../payment/peers.js';
import type { PayoutService } from '../payment/payouts.js';
import { verifyReceiptChain } from '../payment/receipts.js';
import type { TreeHeads } from '../payment/tree-heads.js';
import type { Reconciler } from '../payment/reconcile.js';
import type { ChallengeProgramPort, Effect, PaymentService } from '../payment/service.js';
import { USER_ID_RE, type SsoVerifier } from '../payment/sso.js';
import { A, id, reason, record, units, week } from './payment-schemas.js';
import { qInt } from './query.js';

/**
 * Routes of the token payment relay (document 2; docs/payment.md). Users: the banking service's SSO
 * token (verified here, not by the hub's identity model); operators: the hub's operator role.
 * Every POST takes an Idempotency-Key.
 */

export interface PaymentRoutesOptions {
  service: PaymentService;
  lifecycle: ChallengeLifecycle;
  payouts: PayoutService;
  sso: SsoVerifier;
  idempotency: Idempotency;
  webhookSecret?: string;
  chain?: ChainClient;
  /** The chain's signed tree heads, verified (set when CHAIN_PUBLIC_KEY is). */
  treeHeads?: TreeHeads;
  program?: ChallengeProgramPort;
  /** Reconciliation with the bank (set when BANKING_URL is). */
  reconciler?: Reconciler;
  /** The configured CHAIN_PUBLIC_KEY (shown to pages that verify tree heads themselves). */
  chainPublicKey?: string;
  /** The hub's public address (PUBLIC_URL, else its listening address once it listens). */
  publicUrl?: () => string | undefined;
  /** State-changing requests per user per minute (default 120), counted in the Store. */
  postsPerMinute?: number;
}

const OPERATOR = { roles: ['operator'] };
/** Keeps the raw text beside the parsed JSON (the webhook signature covers the exact bytes). */
const rawJson: BodyReader = {
  mediaTypes: ['application/json'],
  parse(raw) {
    const text = raw.toString('utf8');
    try {
      return { raw: text, json: JSON.parse(text) as unknown };
    } catch {
      throw new AppError('invalid', 'invalid_json', 'request body is not valid JSON');
    }
  },
};

export function registerPaymentRoutes(hub: Hub, opts: PaymentRoutesOptions): void {
  const { service, lifecycle, payouts, sso, idempotency } = opts;
  const user = async (ctx: RequestContext) => {
    const u = await sso.user(ctx.headers.authorization);
    ctx.state.user = u;
  };
  const uid = (ctx: RequestContext) => ctx.state.user as string;
  // after `user` (guards run in order): each SSO user's POSTs are bounded
  const userLimit = hub.rateLimit('payment-post', { limit: opts.postsPerMinute ?? 120, windowMs: 60_000, key: (ctx) => ctx.state.user as string | undefined });
  const userPost = [user, userLimit];
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
  /** Runs a POST's effect under its Idempotency-Key, scoped to the caller. */
  const idem = async (ctx: RequestContext, scope: string, run: (e: Effect) => Promise<Json | StoredAnswer>, stored = false) => {
    const wantsJson = ctx.headers.accept === 'application/json';
    const begun = await idempotency.begin(scope, ctx.headers['idempotency-key'], fingerprint(ctx.method, ctx.path, ctx.body));
    if ('replay' in begun) return answer(begun.replay, true, wantsJson);
    try {
      const out = await run({ ticket: begun.ticket });
      return stored ? answer(out as StoredAnswer, false, wantsJson) : Reply.json(out);
    } catch (err) {
      await idempotency.abandon(begun.ticket).catch(() => undefined);
      throw err;
    }
  };

  hub.page('/wallet', '/wallet.html', { title: 'Wallet', description: 'Token wallet: balances, history, challenges, peg, payouts, receipts' });

  hub.route({ method: 'GET', path: '/api/token/challenges', response: A.challenges, handler: () => service.challenges() });

  hub.route({
    method: 'POST',
    path: '/api/token/challenge/buy',
    body: { schema: z.object({ challenge_id: id, user_id: z.string().regex(USER_ID_RE, 'must be a user id') }).strict() },
    guards: userPost,
    response: A.effect,
    handler: (ctx) => {
      sameUser(ctx, ctx.body.user_id);
      return idem(ctx, uid(ctx), (e) => service.buy(uid(ctx), ctx.body.challenge_id, e, opts.program) as Promise<Json>);
    },
  });

  hub.route({
    method: 'GET',
    path: '/api/token/wallet',
    query: z.object({ limit: qInt({ min: 1, max: 100 }).default(20), offset: qInt({ min: 0, max: 10_000 }).default(0) }).strict(),
    guards: [user],
    response: A.wallet,
    handler: (ctx) => service.wallet(uid(ctx), ctx.query),
  });

  hub.route({ method: 'GET', path: '/api/token/my/challenges', guards: [user], response: record('the caller\'s challenges'), handler: (ctx) => service.myChallenges(uid(ctx)) });

  hub.route({
    method: 'GET',
    path: '/api/token/peg/:challenge_id',
    params: z.object({ challenge_id: id }),
    guards: [user],
    response: record('the peg snapshot of a challenge'),
    handler: (ctx) => service.peg(uid(ctx), ctx.params.challenge_id),
  });

  hub.route({
    method: 'POST',
    path: '/api/token/payout/request',
    body: { schema: z.object({ week }).strict() },
    guards: userPost,
    response: A.effect,
    handler: (ctx) => idem(ctx, uid(ctx), (e) => payouts.payout(ctx.body.week, uid(ctx), e)),
  });

  hub.route({
    method: 'POST',
    path: '/api/token/onramp',
    body: { schema: z.object({ amount_krw: z.number().int('must be an integer').positive('must be positive').max(Number.MAX_SAFE_INTEGER), method: z.enum(['card', 'transfer']) }).strict() },
    guards: userPost,
    response: A.effect,
    summary: 'Starts a payment at the banking service: 303 to its page, or 200 with the address for Accept: application/json',
    handler: (ctx) => {
      // from configuration, never from the request's Host header
      const base = opts.publicUrl?.();
      if (!base) throw new AppError('unavailable', 'public_url_not_configured', 'PUBLIC_URL is not configured');
      return idem(ctx, uid(ctx), (e) => service.onramp(uid(ctx), ctx.body.amount_krw, ctx.body.method, base, `${base}/wallet`, e), true);
    },
  });

  hub.route({
    method: 'POST',
    path: '/api/token/banking/webhook',
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

  hub.route({
    method: 'POST',
    path: '/api/token/offramp',
    body: { schema: z.object({ amount: units }).strict() },
    guards: userPost,
    response: A.effect,
    handler: (ctx) => idem(ctx, uid(ctx), (e) => service.offramp(uid(ctx), ctx.body.amount, e)),
  });

  hub.route({
    method: 'POST',
    path: '/api/token/challenge/scale-up',
    body: { schema: z.object({ challenge_id: id }).strict() },
    guards: userPost,
    response: A.effect,
    handler: (ctx) => idem(ctx, uid(ctx), (e) => lifecycle.scaleUp(uid(ctx), ctx.body.challenge_id, e)),
  });

  hub.route({
    method: 'POST',
    path: '/api/token/challenge/withdraw',
    body: { schema: z.object({ challenge_id: id }).strict() },
    guards: userPost,
    response: A.effect,
    handler: (ctx) => idem(ctx, uid(ctx), (e) => lifecycle.withdraw(uid(ctx), ctx.body.challenge_id, e)),
  });

  const period = z.object({
    account: z.string().regex(/^[A-Za-z0-9_:.-]{1,160}$/, 'must be an account name'),
    from: z.string().min(4).max(40),
    to: z.string().min(4).max(40),
    format: z.enum(['json', 'csv']).default('json'),
  }).strict();
  const statementReply = async (account: string, q: { from: string; to: string; format: 'json' | 'csv' }) => {
    const p = parsePeriod(q.from, q.to);
    const s = await statement(service.store, account, p.from, p.to);
    return q.format === 'csv' ? Reply.text(statementCsv(s), 'text/csv; charset=utf-8') : Reply.json(s as unknown as Json);
  };
  hub.route({
    method: 'GET',
    path: '/api/token/statement',
    query: period,
    guards: [user],
    response: A.statement,
    summary: 'Statement of one of the caller\'s accounts (wallet, credit, collateral or a challenge id) over [from, to), JSON or CSV',
    handler: async (ctx) => statementReply(await userStatementAccount(service.store, uid(ctx), ctx.query.account), ctx.query),
  });

  hub.route({
    method: 'GET',
    path: '/api/token/receipts',
    query: z.object({ limit: qInt({ min: 1, max: 100 }).default(20), offset: qInt({ min: 0, max: 100_000 }).default(0) }).strict(),
    guards: [user],
    response: A.receipts,
    handler: (ctx) => service.receipts(uid(ctx), ctx.query),
  });

  hub.route({
    method: 'GET',
    path: '/api/token/receipt/:hash',
    params: z.object({ hash: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits') }),
    guards: [user],
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
          verified = opts.treeHeads!.inclusion(head.sth, p);
        }
      }
      return { ...r, proof, sth, verified, tree_head_error: treeHeadError };
    },
  });

  const heads = () => {
    if (!opts.treeHeads) throw new AppError('unavailable', 'chain_key_not_configured', 'CHAIN_URL and CHAIN_PUBLIC_KEY are not configured');
    return opts.treeHeads;
  };
  hub.route({
    method: 'GET',
    path: '/api/token/chain/sth',
    response: A.treeHead,
    summary: 'The chain\'s current signed tree head, verified by the hub, with the consistency proof from the last head it had verified',
    handler: async () => ({ ...(await heads().refresh()), public_key: opts.chainPublicKey ?? null }) as unknown as Json,
  });

  // ---- operators ------------------------------------------------------------------------------
  hub.route({
    method: 'POST',
    path: '/api/token/ops/chain/sth',
    auth: OPERATOR,
    body: { schema: z.object({ tree_size: z.number().int().min(0), timestamp: z.number().int().min(0), root: z.string(), signature: z.string().max(200) }).strict() },
    response: A.treeHead,
    summary: 'Checks a signed tree head seen elsewhere against the last verified one (400 forged, 409 out of order or inconsistent)',
    handler: async (ctx) => (await heads().accept(ctx.body, `operator:${ctx.identity!.name}`)) as unknown as Json,
  });
  const recon = () => {
    if (!opts.reconciler) throw new AppError('unavailable', 'banking_not_configured', 'BANKING_URL is not configured');
    return opts.reconciler;
  };
  hub.route({
    method: 'GET',
    path: '/api/token/offramp/:id',
    params: z.object({ id: z.string().regex(/^off_[0-9a-f]{32}$/, 'must be an off-ramp id') }),
    guards: [user],
    response: record('an off-ramp\'s state: sent, paid or returned'),
    handler: (ctx) => recon().offrampStatus(ctx.params.id, uid(ctx)),
  });
  hub.route({
    method: 'POST',
    path: '/api/token/ops/reconcile',
    auth: OPERATOR,
    body: { schema: z.object({}).strict().optional(), optional: true },
    response: record('what the pull of the bank\'s events settled'),
    summary: 'Reads the bank\'s events since the cursor now and settles what the webhook missed (once each)',
    handler: async () => (await recon().pull()) as unknown as Json,
  });
  hub.route({ method: 'GET', path: '/api/token/ops/reconcile/differences', auth: OPERATOR, response: record('bank events that moved nothing'), handler: async () => ({ differences: await recon().differences() }) });
  hub.route({ method: 'GET', path: '/api/token/ops/chain/alarms', auth: OPERATOR, response: z.object({ alarms: z.array(z.unknown()) }), handler: async () => ({ alarms: await heads().alarms() }) });
  hub.route({ method: 'GET', path: '/api/token/ops/ledger/check', auth: OPERATOR, response: A.ledgerCheck, handler: async () => ({ ledger: await checkLedger(service.store), receipts: await verifyReceiptChain(service.store) }) });
  hub.route({
    method: 'GET',
    path: '/api/token/ops/reviews',
    auth: OPERATOR,
    query: z.object({ state: z.enum(['open', 'all']).default('open') }).strict(),
    response: A.reviews,
    handler: (ctx) => payouts.reviews(ctx.query.state === 'open'),
  });
  hub.route({
    method: 'POST',
    path: '/api/token/ops/reviews/:id/:action',
    auth: OPERATOR,
    params: z.object({ id: z.string().regex(/^rv_[A-Za-z0-9_.-]{1,100}$/, 'must be a review id'), action: z.enum(['approve', 'reject']) }),
    body: { schema: z.object({ reason }).strict() },
    response: A.effect,
    handler: (ctx) => idem(ctx, `op:${ctx.identity!.id}`, (e) => payouts.decide(ctx.params.id, ctx.params.action, ctx.identity!.name, ctx.body.reason, e)),
  });
  hub.route({
    method: 'GET',
    path: '/api/token/ops/statement',
    auth: OPERATOR,
    query: period,
    response: A.statement,
    summary: 'Statement of any ledger account (escrow, operating, hedge_pool, bank, a user\'s or a challenge\'s) over [from, to), JSON or CSV',
    handler: async (ctx) => statementReply(await knownAccount(service.store, ctx.query.account), ctx.query),
  });
  const corrections = new Corrections(service);
  hub.route({
    method: 'POST',
    path: '/api/token/ops/transfers/:id/reverse',
    auth: OPERATOR,
    params: z.object({ id: z.string().regex(/^[A-Za-z0-9_:.-]{1,200}$/, 'must be a transfer id') }),
    body: { schema: z.object({ reason }).strict() },
    response: A.effect,
    summary: 'Reverses a posted payout or on-ramp credit by a new linked transfer, once',
    handler: (ctx) => idem(ctx, `op:${ctx.identity!.id}`, (e) => corrections.reverse(ctx.params.id, ctx.identity!.name, ctx.body.reason, e)),
  });
  hub.route({ method: 'GET', path: '/api/token/ops/warnings', auth: OPERATOR, response: A.warnings, handler: () => payouts.warnings() });
  hub.route({ method: 'GET', path: '/api/token/ops/payout-runs/:week', auth: OPERATOR, params: z.object({ week }), response: record('the payout run of the week'), handler: (ctx) => payouts.report(ctx.params.week) });
  hub.route({
    method: 'POST',
    path: '/api/token/ops/payout-runs/:week',
    auth: OPERATOR,
    params: z.object({ week }),
    body: { schema: z.object({}).strict().optional(), optional: true },
    response: A.effect,
    handler: (ctx) => idem(ctx, `op:${ctx.identity!.id}`, async () => payouts.runWeek(ctx.params.week)),
  });
  hub.route({
    method: 'POST',
    path: '/api/token/ops/challenges/:id/judge',
    auth: OPERATOR,
    params: z.object({ id }),
    body: { schema: z.object({ outcome: z.enum(['pass', 'fail']), reason }).strict() },
    response: A.effect,
    handler: (ctx) => idem(ctx, `op:${ctx.identity!.id}`, (e) => lifecycle.judge(ctx.params.id, ctx.body.outcome, ctx.identity!.name, ctx.body.reason, e)),
  });
  hub.route({
    method: 'POST',
    path: '/api/token/ops/challenges/:id/events',
    auth: OPERATOR,
    params: z.object({ id }),
    body: {
      schema: z.discriminatedUnion('type', [
        z.object({ type: z.literal('fill'), event_id: id, realized_cents: z.number().int().min(-1e12).max(1e12), ts: z.number().int().positive().optional() }).strict(),
        z.object({ type: z.literal('violation'), event_id: id, rule: z.string().regex(/^[a-z_]{1,40}$/), ts: z.number().int().positive().optional() }).strict(),
      ]),
    },
    response: A.event,
    handler: (ctx) =>
      idem(ctx, `op:${ctx.identity!.id}`, async () => lifecycle.event(ctx.params.id, { ...ctx.body, ts: ctx.body.ts ?? service.now() }) as unknown as Json),
  });
  hub.route({
    method: 'POST',
    path: '/api/token/ops/pool/fund',
    auth: OPERATOR,
    body: { schema: z.object({ amount: units }).strict() },
    response: A.effect,
    handler: (ctx) => idem(ctx, `op:${ctx.identity!.id}`, (e) => service.fundPool(ctx.body.amount, ctx.identity!.name, e)),
  });
}
