import { createHmac, generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { canonicalJson } from '../canonical.js';
import { auditPath, consistencyProof, leafHash, treeHash } from './merkle.js';
import { rawPublicKey, signTreeHead } from './sth.js';
import { bankSettlement } from './standin-bank.js';
import { chainLeafData } from './peers.js';
import { HttpError, readJsonBody, routeMiss, startStandin, type Standin, type StandinOptions } from '../peers/index.js';

/**
 * Loopback stand-ins of the payment relay's peers (document 2): the banking service (SSO issuer,
 * on-ramp page, signed confirmation webhook, off-ramp), the chain service (an append-only Merkle log),
 * three token/USD price providers and the broker. Each is a real HTTP server; the hub talks to them
 * through the clients in src/payment/peers.ts. Knobs: `knobs.delayMs` (slow) and `knobs.failRate`
 * (1 = down), changeable while running.
 */

const obj = (v: unknown): Record<string, unknown> => {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new HttpError(400, 'invalid_body', 'a JSON object is expected');
  return v as Record<string, unknown>;
};
const str = (v: unknown, name: string, max = 200): string => {
  if (typeof v !== 'string' || v.length === 0 || v.length > max) throw new HttpError(400, 'invalid_body', `${name} must be a string`);
  return v;
};
const HTML = { 'content-type': 'text/html; charset=utf-8' };
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// ------------------------------------------------------------------------------------------------
// Standard Webhooks signing (shared with the hub's verifier in src/payment/peers.ts)

export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

// ------------------------------------------------------------------------------------------------
// Banking

export interface BankingState {
  privateKey?: CryptoKey;
  jwk?: JWK;
  publicPem?: string;
  /** Confirmed payments by banking payment id. */
  payments: Map<string, { id: string; ref: string; amount_krw: number; usd_micro: number; user: string; delivered: boolean; ts: number }>;
  /** Off-ramp instructions by Idempotency-Key; `ts` is when the bank received one. */
  offramps: Map<string, { key: string; body: unknown; status: 'pending' | 'paid' | 'failed'; ts: number }>;
  webhooksSent: number;
  /** Declined on-ramps by ref. */
  declined: Map<string, { ref: string; amount_krw: number; user: string; ts: number }>;
  /** The event list (as Stripe's events API): what happened, in order, read with a cursor. */
  events: { id: string; seq: number; type: string; created: number; data: Record<string, unknown> }[];
}

export interface BankingOptions extends StandinOptions {
  webhookSecret: string;
  /** KRW per USD used to mint the stablecoin (default 1350). */
  krwPerUsd?: number;
  issuer?: string;
  audience?: string;
}

export interface BankingStandin extends Standin<BankingState> {
  /** Signs an SSO token for `user` (what the banking service's login gives its users). */
  issueToken(user: string, opts?: { expiresInS?: number; audience?: string }): Promise<string>;
  /** Confirms an on-ramp payment as the page's button does; resolves with the webhook's HTTP status. */
  confirm(ref: string, query: URLSearchParams): Promise<{ payment_id: string; webhook_status: number }>;
  /** Declines an on-ramp payment (no webhook: the hub learns it from the event list). */
  decline(ref: string, query: URLSearchParams): void;
  /** The bank pays or rejects an off-ramp it received (by its Idempotency-Key). */
  settleOfframp(key: string, outcome: 'paid' | 'failed', reason?: string): void;
}

export async function startBankingStandin(opts: BankingOptions): Promise<BankingStandin> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bank-1', alg: 'ES256', use: 'sig' };
  const { exportSPKI } = await import('jose');
  const state: BankingState = { privateKey, jwk, publicPem: await exportSPKI(publicKey), payments: new Map(), offramps: new Map(), webhooksSent: 0, declined: new Map(), events: [] };
  const event = (type: string, data: Record<string, unknown>) => {
    const seq = state.events.length + 1;
    state.events.push({ id: `evt_${seq}`, seq, type, created: Date.now(), data });
  };
  const krwPerUsd = opts.krwPerUsd ?? 1350;
  let issuer = opts.issuer ?? '';
  const audience = opts.audience ?? 'maru';

  const issueToken = (user: string, o: { expiresInS?: number; audience?: string } = {}) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'bank-1' })
      .setSubject(user)
      .setIssuer(issuer)
      .setAudience(o.audience ?? audience)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + (o.expiresInS ?? 3600))
      .sign(privateKey);

  /** Confirms a payment once per (ref): mints the stablecoin and sends the signed webhook. */
  const confirm = async (ref: string, q: URLSearchParams) => {
    const amount = Number(q.get('amount_krw'));
    const notify = q.get('notify') ?? '';
    const user = q.get('user') ?? '';
    if (!Number.isInteger(amount) || amount <= 0) throw new HttpError(400, 'invalid_amount', 'amount_krw must be a positive integer');
    if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//.test(notify)) throw new HttpError(400, 'invalid_notify', 'notify must be a loopback URL');
    let p = [...state.payments.values()].find((x) => x.ref === ref);
    if (!p) {
      p = { id: `bp_${randomUUID()}`, ref, amount_krw: amount, usd_micro: Math.floor((amount * 1_000_000) / krwPerUsd), user, delivered: false, ts: Date.now() };
      state.payments.set(p.id, p);
      event('payment.confirmed', { payment_id: p.id, ref, amount_krw: p.amount_krw, usd_micro: p.usd_micro, user });
    }
    const body = JSON.stringify({ type: 'payment.confirmed', data: { payment_id: p.id, ref, amount_krw: p.amount_krw, usd_micro: p.usd_micro, user } });
    const ts = Math.floor(Date.now() / 1000);
    let status = 0;
    try {
      const res = await fetch(notify, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': p.id, 'webhook-timestamp': String(ts), 'webhook-signature': webhookSignature(opts.webhookSecret, p.id, ts, body) },
        body,
        signal: AbortSignal.timeout(5000),
      });
      status = res.status;
      await res.arrayBuffer();
    } catch {
      status = 0;
    }
    state.webhooksSent++;
    p.delivered = status >= 200 && status < 300;
    return { payment_id: p.id, webhook_status: status };
  };

  const decline = (ref: string, q: URLSearchParams) => {
    if (state.declined.has(ref) || [...state.payments.values()].some((x) => x.ref === ref)) return;
    const d = { ref, amount_krw: Number(q.get('amount_krw')), user: q.get('user') ?? '' };
    state.declined.set(ref, { ...d, ts: Date.now() });
    event('payment.declined', d);
  };
  const settleOfframp = (key: string, outcome: 'paid' | 'failed', reason = 'account closed') => {
    const o = state.offramps.get(key);
    if (!o || o.status !== 'pending') return;
    o.status = outcome;
    event(outcome === 'paid' ? 'offramp.paid' : 'offramp.failed', { key, ...(outcome === 'failed' ? { reason } : {}) });
  };

  const routes = ['GET /.well-known/jwks.json', 'GET /sso/login', 'POST /sso/token', 'GET /pay', 'POST /pay/confirm', 'POST /api/offramp', 'GET /api/payments/:id', 'GET /api/events', 'GET /api/settlement'];
  const s = await startStandin(opts, state, async (req, url, reply) => {
    const key = `${req.method} ${url.pathname}`;
    if (key === 'GET /.well-known/jwks.json') return reply(200, { keys: [jwk] });
    if (key === 'POST /sso/token') {
      const b = obj(await readJsonBody(req));
      return reply(200, { token: await issueToken(str(b.user, 'user', 64)) });
    }
    if (key === 'GET /sso/login') {
      // a development login: signs the user in and returns to the page with the token in the fragment
      const user = url.searchParams.get('user') ?? '';
      const back = url.searchParams.get('return') ?? '';
      if (!user && /^https?:\/\//.test(back)) {
        // the bank's own sign-in form (a page sends its users here with only `return`)
        return reply(200, `<!doctype html><html lang="ko"><meta charset="utf-8"><title>은행 로그인</title><main><h1>은행 로그인</h1><form method="get" action="/sso/login"><label>사용자 ID <input id="user" name="user" required pattern="[A-Za-z0-9_.\\-]{1,64}" autocomplete="username"></label><input type="hidden" name="return" value="${esc(back)}"><button id="login">로그인</button></form></main></html>`, HTML);
      }
      if (!/^[A-Za-z0-9_.-]{1,64}$/.test(user) || !/^https?:\/\//.test(back)) throw new HttpError(400, 'invalid_login', 'user and return are required');
      return reply(303, '', { 'content-type': 'text/plain', location: `${back}#token=${await issueToken(user)}` });
    }
    if (key === 'GET /pay') {
      const q = url.searchParams;
      const fields = ['ref', 'amount_krw', 'method', 'user', 'notify', 'return'].map((n) => `<input type="hidden" name="${n}" value="${esc(q.get(n) ?? '')}">`);
      return reply(
        200,
        `<!doctype html><html lang="ko"><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>은행 결제</title><main><h1>은행 결제</h1><p><b id="amount">${esc(Number.isSafeInteger(Number(q.get('amount_krw'))) ? Number(q.get('amount_krw')).toLocaleString('ko-KR') : (q.get('amount_krw') ?? ''))}</b>원을 ${esc(({ card: '카드', transfer: '계좌이체' } as Record<string, string>)[q.get('method') ?? ''] ?? q.get('method') ?? '')}(으)로 결제합니다.</p><form method="post" action="/pay/confirm">${fields.join('')}<button id="confirm">결제하기</button></form></main></html>`,
        HTML,
      );
    }
    if (key === 'POST /pay/confirm') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const q = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const r = await confirm(q.get('ref') ?? '', q);
      const back = q.get('return') ?? '';
      if (/^https?:\/\//.test(back)) return reply(303, '', { 'content-type': 'text/plain', location: back });
      return reply(200, r);
    }
    if (key === 'POST /api/offramp') {
      const b = obj(await readJsonBody(req));
      const idem = String(req.headers['idempotency-key'] ?? '');
      if (!idem) throw new HttpError(400, 'missing_idempotency_key', 'Idempotency-Key is required');
      if (!state.offramps.has(idem)) state.offramps.set(idem, { key: idem, body: b, status: 'pending', ts: Date.now() });
      return reply(200, { payout_id: `bo_${idem}` });
    }
    if (key === 'GET /api/events') {
      // events after a cursor (a sequence number), oldest first, at most `limit`
      const after = Number(url.searchParams.get('after') ?? 0);
      const limit = Number(url.searchParams.get('limit') ?? 100);
      if (!Number.isInteger(after) || after < 0 || !Number.isInteger(limit) || limit < 1 || limit > 500) throw new HttpError(400, 'invalid_range', 'after >= 0 and 1 <= limit <= 500');
      const events = state.events.slice(after, after + limit);
      return reply(200, { events, has_more: after + limit < state.events.length });
    }
    if (key === 'GET /api/settlement') return reply(200, bankSettlement(state, url.searchParams.get('date') ?? ''));
    const pm = /^\/api\/payments\/([A-Za-z0-9_.-]{1,100})$/.exec(url.pathname);
    if (req.method === 'GET' && pm) {
      const p = state.payments.get(pm[1]!) ?? [...state.payments.values()].find((x) => x.ref === pm[1]);
      if (p) return reply(200, { payment_id: p.id, ref: p.ref, status: 'confirmed', amount_krw: p.amount_krw, usd_micro: p.usd_micro, user: p.user });
      const d = state.declined.get(pm[1]!);
      if (d) return reply(200, { ref: d.ref, status: 'declined', amount_krw: d.amount_krw, user: d.user });
      throw new HttpError(404, 'not_found', 'no such payment');
    }
    const [status, body] = routeMiss(req.method, url.pathname, routes);
    return reply(status, body);
  });
  issuer ||= s.url;
  return Object.assign(s, { issueToken, confirm, decline, settleOfframp });
}

// ------------------------------------------------------------------------------------------------
// Chain: an append-only Merkle log

export interface ChainState {
  /** The log's Ed25519 key: every tree head it serves is signed with it (RFC 6962 3.5). */
  signingKey: KeyObject;
  /** Its public half, base64 of the 32 raw bytes (the hub's CHAIN_PUBLIC_KEY). */
  publicKey: string;
  leaves: Buffer[];
  records: { id: string; kind: string; data: unknown; tx_id: string; leaf_index: number }[];
  byId: Map<string, number>;
}

export { chainLeafData };

export async function startChainStandin(opts: StandinOptions & { signingKey?: KeyObject } = {}): Promise<Standin<ChainState>> {
  const signingKey = opts.signingKey ?? generateKeyPairSync('ed25519').privateKey;
  const state: ChainState = { signingKey, publicKey: rawPublicKey(signingKey), leaves: [], records: [], byId: new Map() };
  const routes = ['POST /api/records', 'GET /api/records/:id', 'GET /api/proof', 'GET /api/sth', 'GET /api/consistency'];
  let lastTs = 0;
  return startStandin(opts, state, async (req, url, reply) => {
    if (req.method === 'POST' && url.pathname === '/api/records') {
      const b = obj(await readJsonBody(req));
      const id = str(b.id, 'id', 512);
      const kind = str(b.kind, 'kind', 64);
      const known = state.byId.get(id);
      if (known !== undefined) {
        const r = state.records[known]!;
        return reply(200, { tx_id: r.tx_id, leaf_index: r.leaf_index, tree_size: state.leaves.length, duplicate: true });
      }
      const leaf_index = state.leaves.length;
      state.leaves.push(leafHash(chainLeafData(id, kind, b.data ?? null)));
      const tx_id = `0x${leafHash(`${leaf_index}:${id}`).toString('hex')}`;
      state.records.push({ id, kind, data: b.data ?? null, tx_id, leaf_index });
      state.byId.set(id, leaf_index);
      return reply(201, { tx_id, leaf_index, tree_size: state.leaves.length });
    }
    const m = /^\/api\/records\/(.+)$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      const i = state.byId.get(decodeURIComponent(m[1]!));
      if (i === undefined) throw new HttpError(404, 'not_found', 'no such record');
      return reply(200, state.records[i]);
    }
    if (req.method === 'GET' && url.pathname === '/api/proof') {
      const index = Number(url.searchParams.get('leaf_index'));
      const size = Number(url.searchParams.get('tree_size') ?? state.leaves.length);
      if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size || size > state.leaves.length) {
        throw new HttpError(400, 'invalid_range', 'leaf_index and tree_size out of range');
      }
      const leaves = state.leaves.slice(0, size);
      return reply(200, {
        leaf_index: index,
        tree_size: size,
        leaf_hash: leaves[index]!.toString('hex'),
        audit_path: auditPath(leaves, index).map((h) => h.toString('hex')),
        root: treeHash(leaves).toString('hex'),
      });
    }
    if (req.method === 'GET' && url.pathname === '/api/sth') {
      lastTs = Math.max(lastTs, Date.now());
      return reply(200, signTreeHead(state.signingKey, { tree_size: state.leaves.length, timestamp: lastTs, root: treeHash(state.leaves).toString('hex') }));
    }
    if (req.method === 'GET' && url.pathname === '/api/consistency') {
      // RFC 6962 2.1.2 / RFC 9162 2.1.4: the proof that the tree of `first` leaves is a prefix of `second`
      const first = Number(url.searchParams.get('first'));
      const second = Number(url.searchParams.get('second') ?? state.leaves.length);
      if (!Number.isInteger(first) || !Number.isInteger(second) || first < 0 || second < first || second > state.leaves.length) {
        throw new HttpError(400, 'invalid_range', 'first and second must satisfy 0 <= first <= second <= tree size');
      }
      const leaves = state.leaves.slice(0, second);
      const proof = first === 0 ? [] : consistencyProof(leaves, first);
      return reply(200, { first, second, consistency: proof.map((h) => h.toString('hex')) });
    }
    const [status, body] = routeMiss(req.method, url.pathname, routes);
    return reply(status, body);
  });
}

// ------------------------------------------------------------------------------------------------
// Price providers: token/USD quotes (tokens per 1 USD)

export interface PriceState {
  /** Samples every stepMs (aligned to multiples of it). */
  stepMs: number;
  /** A constant offset added to the quote (to tell providers apart). */
  bias: number;
  /** Samples inside [from, to) are missing (a gap in the provider's history). */
  gap?: { from: number; to: number };
}

/** The stand-in market: deterministic in time, about 2.5 tokens per USD. */
export function standinPrice(t: number, bias = 0): number {
  return Math.round((2.5 + 0.05 * Math.sin(t / 3_600_000) + bias) * 1e6) / 1e6;
}

export async function startPriceStandin(opts: StandinOptions & { bias?: number; stepMs?: number } = {}): Promise<Standin<PriceState>> {
  const state: PriceState = { stepMs: opts.stepMs ?? 10_000, bias: opts.bias ?? 0 };
  return startStandin(opts, state, (req, url, reply) => {
    if (req.method === 'GET' && url.pathname === '/api/quotes') {
      const from = Number(url.searchParams.get('from'));
      const to = Number(url.searchParams.get('to'));
      if (!Number.isFinite(from) || !Number.isFinite(to) || to < from || to - from > 7 * 86_400_000) {
        throw new HttpError(400, 'invalid_range', 'from and to (ms) are required, to - from at most 7 days');
      }
      const step = state.stepMs;
      const samples: { t: number; price: number }[] = [];
      // the last sample at or before `from`, then every step up to `to`
      for (let t = Math.floor(from / step) * step; t <= to; t += step) {
        if (state.gap && t >= state.gap.from && t < state.gap.to) continue;
        samples.push({ t, price: standinPrice(t, state.bias) });
      }
      return reply(200, { pair: 'TOKEN/USD', samples });
    }
    const [status, body] = routeMiss(req.method, url.pathname, ['GET /api/quotes']);
    return reply(status, body);
  });
}

// ------------------------------------------------------------------------------------------------
// Broker: creates trading accounts

export interface BrokerState {
  accounts: Map<string, { account_id: string; user: string; account_size: number; challenge: string }>;
}

export async function startBrokerStandin(opts: StandinOptions = {}): Promise<Standin<BrokerState>> {
  const state: BrokerState = { accounts: new Map() };
  return startStandin(opts, state, async (req, url, reply) => {
    if (req.method === 'POST' && url.pathname === '/api/accounts') {
      const b = obj(await readJsonBody(req));
      const account_id = str(b.account_id, 'account_id', 64);
      const existing = state.accounts.get(account_id);
      if (existing) return reply(200, { ...existing, created: false });
      const rec = { account_id, user: str(b.user, 'user', 64), account_size: Number(b.account_size), challenge: str(b.challenge, 'challenge', 64) };
      state.accounts.set(account_id, rec);
      return reply(201, { ...rec, created: true });
    }
    const [status, body] = routeMiss(req.method, url.pathname, ['POST /api/accounts']);
    return reply(status, body);
  });
}

export interface PaymentStandins {
  banking: BankingStandin;
  chain: Standin<ChainState>;
  prices: Standin<PriceState>[];
  broker: Standin<BrokerState>;
  close(): Promise<void>;
}

export async function startPaymentStandins(opts: { host?: string; webhookSecret: string; ports?: Partial<Record<'banking' | 'chain' | 'broker' | 'price1' | 'price2' | 'price3', number>> }): Promise<PaymentStandins> {
  const host = opts.host ?? '127.0.0.1';
  const p = opts.ports ?? {};
  const banking = await startBankingStandin({ host, port: p.banking ?? 0, webhookSecret: opts.webhookSecret });
  const chain = await startChainStandin({ host, port: p.chain ?? 0 });
  const prices = await Promise.all([
    startPriceStandin({ host, port: p.price1 ?? 0, bias: 0 }),
    startPriceStandin({ host, port: p.price2 ?? 0, bias: 0.002 }),
    startPriceStandin({ host, port: p.price3 ?? 0, bias: -0.001 }),
  ]);
  const broker = await startBrokerStandin({ host, port: p.broker ?? 0 });
  return {
    banking,
    chain,
    prices,
    broker,
    close: async () => {
      await Promise.all([banking.close(), chain.close(), broker.close(), ...prices.map((x) => x.close())]);
    },
  };
}
