import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../canonical.js';
import { notConfigured, type Deliver } from '../outbox.js';
import type { Json } from '../store/port.js';
import { PeerError, peerJson } from '../peers/index.js';

/**
 * Client adapters of the payment relay's peers (the stand-ins in src/payment/standins.ts play
 * them on loopback), on the hub's one peer client (src/peers/http-client.ts: http:// or https://,
 * one deadline per call, failures as PeerError with the status of a non-2xx answer). Only the price providers are called on a request path (the peg snapshot, with a
 * time-out); the chain, the broker and the banking off-ramp are reached through the durable outbox.
 */

/** The peers' calls share one client (src/peers/http-client.ts): its time-out, size limit and PeerError. */
function jsonCall(peer: string, url: string, init: { timeoutMs: number; method?: string; idempotencyKey?: string; json?: unknown; signal?: AbortSignal }): Promise<any> {
  return peerJson({
    peer,
    url,
    method: init.method,
    headers: init.idempotencyKey !== undefined ? { 'idempotency-key': init.idempotencyKey } : {},
    json: init.json,
    timeoutMs: init.timeoutMs,
    signal: init.signal,
  });
}

export interface PriceSample {
  t: number;
  price: number;
}

export interface PriceSource {
  name: string;
  quotes(from: number, to: number): Promise<PriceSample[]>;
}

export class PriceProviderClient implements PriceSource {
  constructor(
    readonly name: string,
    private readonly url: string,
    private readonly timeoutMs: number,
  ) {}
  async quotes(from: number, to: number): Promise<PriceSample[]> {
    const body = await jsonCall(this.name, `${this.url.replace(/\/+$/, '')}/api/quotes?from=${from}&to=${to}`, { timeoutMs: this.timeoutMs });
    if (!body || !Array.isArray(body.samples)) throw new PeerError(this.name, 'protocol', 'quotes without samples');
    return body.samples
      .filter((s: any) => Number.isFinite(s?.t) && Number.isFinite(s?.price) && s.price > 0)
      .map((s: any) => ({ t: Number(s.t), price: Number(s.price) }));
  }
}

/**
 * The bytes the chain hashes into a leaf for a record (RFC 6962 leaf = SHA-256(0x00 || these)): the
 * canonical JSON of `{id, kind, data}` as the hub posted it. The hub recomputes a receipt's leaf
 * from them to bind the receipt to the leaf an inclusion proof names.
 */
export function chainLeafData(id: string, kind: string, data: unknown): string {
  return canonicalJson({ id, kind, data } as Json);
}

export interface ChainLink {
  tx_id: string;
  leaf_index: number;
  tree_size: number;
}

export class ChainClient {
  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
  ) {}
  private get base() {
    return this.url.replace(/\/+$/, '');
  }
  record(id: string, kind: string, data: Json, signal?: AbortSignal): Promise<ChainLink> {
    return jsonCall('chain', `${this.base}/api/records`, {
      method: 'POST',
      idempotencyKey: id,
      json: { id, kind, data },
      timeoutMs: this.timeoutMs,
      signal,
    });
  }
  proof(leafIndex: number, treeSize?: number): Promise<{ leaf_index: number; tree_size: number; leaf_hash: string; audit_path: string[]; root: string }> {
    const size = treeSize === undefined ? '' : `&tree_size=${treeSize}`;
    return jsonCall('chain', `${this.base}/api/proof?leaf_index=${leafIndex}${size}`, { timeoutMs: this.timeoutMs });
  }
  /** The chain's signed tree head (checked by TreeHeads, src/payment/tree-heads.ts). */
  sth(): Promise<unknown> {
    return jsonCall('chain', `${this.base}/api/sth`, { timeoutMs: this.timeoutMs });
  }
  consistency(first: number, second: number): Promise<{ first: number; second: number; consistency?: unknown[] }> {
    return jsonCall('chain', `${this.base}/api/consistency?first=${first}&second=${second}`, { timeoutMs: this.timeoutMs });
  }
}

export class BrokerClient {
  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
  ) {}
  createAccount(input: { account_id: string; user: string; account_size: number; challenge: string }, signal?: AbortSignal) {
    return jsonCall('broker', `${this.url.replace(/\/+$/, '')}/api/accounts`, {
      method: 'POST',
      idempotencyKey: input.account_id,
      json: input,
      timeoutMs: this.timeoutMs,
      signal,
    });
  }
}

export class BankingClient {
  constructor(
    readonly url: string,
    private readonly timeoutMs: number,
  ) {}
  /** The bank's events after `after` (a sequence number), oldest first. */
  events(after: number, limit = 100): Promise<{ events?: unknown[]; has_more?: boolean }> {
    return jsonCall('banking', `${this.url.replace(/\/+$/, '')}/api/events?after=${after}&limit=${limit}`, { timeoutMs: this.timeoutMs });
  }
  /** The bank's own settlement of a UTC day (the stand-in's: src/payment/standin-bank.ts). */
  settlement(date: string): Promise<{ payments?: unknown[]; onramps?: unknown; offramps?: unknown }> {
    return jsonCall('banking', `${this.url.replace(/\/+$/, '')}/api/settlement?date=${encodeURIComponent(date)}`, { timeoutMs: this.timeoutMs });
  }
  payment(id: string): Promise<Record<string, unknown>> {
    return jsonCall('banking', `${this.url.replace(/\/+$/, '')}/api/payments/${encodeURIComponent(id)}`, { timeoutMs: this.timeoutMs });
  }
  offramp(id: string, payload: Json, signal?: AbortSignal) {
    return jsonCall('banking', `${this.url.replace(/\/+$/, '')}/api/offramp`, {
      method: 'POST',
      idempotencyKey: id,
      json: payload,
      timeoutMs: this.timeoutMs,
      signal,
    });
  }
}

/**
 * Standard Webhooks verification: `webhook-id`, `webhook-timestamp` (seconds, within `toleranceS`
 * of now either way) and `webhook-signature` (space-separated `v1,<base64 HMAC-SHA256 of
 * id.timestamp.body>`). Returns a reason when it fails.
 */
export function verifyWebhook(secret: string, headers: Record<string, string>, body: string, nowMs: number, toleranceS = 300): string | undefined {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigs = headers['webhook-signature'];
  if (!id || !ts || !sigs) return 'missing webhook-id, webhook-timestamp or webhook-signature';
  if (!/^\d{1,12}$/.test(ts)) return 'bad webhook-timestamp';
  if (Math.abs(nowMs / 1000 - Number(ts)) > toleranceS) return 'webhook-timestamp outside the tolerance';
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest();
  for (const s of sigs.split(' ')) {
    const [v, b64] = s.split(',');
    if (v !== 'v1' || !b64) continue;
    const got = Buffer.from(b64, 'base64');
    if (got.length === expected.length && timingSafeEqual(got, expected)) return undefined;
  }
  return 'no valid signature';
}

export const CHAIN_DEST = 'chain';
export const BROKER_DEST = 'broker';
export const BANKING_DEST = 'banking';

export interface PaymentPeerClients {
  chain?: ChainClient;
  broker?: BrokerClient;
  banking?: BankingClient;
}

/**
 * Outbox deliverers: 'chain' records the item (id = idempotency key) and hands the link to
 * `onRecorded` (the receipt keeps it), 'broker' creates the account, 'banking' pays an off-ramp.
 * A peer without a URL keeps its items pending.
 */
export function paymentDeliverers(c: PaymentPeerClients, onRecorded: (id: string, kind: string, link: ChainLink) => Promise<void>): Record<string, Deliver> {
  const missing = (what: string): Deliver => notConfigured(`${what} is not configured`);
  return {
    [CHAIN_DEST]: c.chain
      ? async (item, signal) => {
          const p = item.payload as { kind: string; data: Json };
          const link = await c.chain!.record(item.id, p.kind, p.data, signal);
          await onRecorded(item.id, p.kind, link);
        }
      : missing('chain service'),
    [BROKER_DEST]: c.broker
      ? async (item, signal) => {
          await c.broker!.createAccount(item.payload as any, signal);
        }
      : missing('broker'),
    [BANKING_DEST]: c.banking
      ? async (item, signal) => {
          await c.banking!.offramp(item.id, item.payload, signal);
        }
      : missing('banking service'),
  };
}

/** One payment of the bank's daily settlement (`GET /api/settlement?date=`), as the bank lists it. */
export interface BankSettlementPayment {
  kind: 'onramp' | 'offramp';
  /** An on-ramp's banking payment id (a declined one: its ref); an off-ramp's id (its Idempotency-Key without `offramp:`). */
  id: string;
  status: 'confirmed' | 'declined' | 'pending' | 'paid' | 'failed';
  ts: number;
  amount_krw?: number;
  usd_micro?: number;
  ref?: string;
  /** An off-ramp's net token units and fee (decimal strings, as the hub sent them). */
  amount?: string;
  fee?: string;
}
