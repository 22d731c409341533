import { canonicalJson, sha256Hex } from '../canonical.js';
import { outboxWrites } from '../outbox.js';
import { codec } from '../store/codec.js';
import type { Json, Store, Write } from '../store/port.js';
import { CHAIN_DEST, chainLeafData } from './peers.js';

/**
 * Receipts: every payment and payout leaves one, hashed with SHA-256 over its canonical JSON, which
 * includes the previous receipt's hash (`prev_hash`), so the receipts form one chain. Each receipt
 * and each chain-recorded event goes to the chain service through the durable outbox (the item id is
 * the idempotency key), in the same atomic write as the payment: a dead chain delays the recording,
 * never the payment. The chain's answer (tx id, leaf index) is kept as the receipt's chain link.
 */

export const GENESIS = '0'.repeat(64);

export const RK = {
  head: 'pay:receipt:head',
  receipt: (hash: string) => `pay:receipt:${hash}`,
  all: 'pay:receipts',
  user: (user: string) => `pay:ureceipts:${user}`,
  link: (chainId: string) => `pay:chainlink:${chainId}`,
};

export interface Receipt {
  n: number;
  prev_hash: string;
  kind: string;
  user: string | null;
  amount: string;
  transfers: string[];
  ref: string;
  ts: number;
}

export const receipts = codec<Receipt>('receipt', (r) => typeof r.n === 'number' && typeof r.prev_hash === 'string');

export const receiptHash = (r: Receipt) => sha256Hex(canonicalJson(r));

/** What the hub records on the chain for a receipt (its hash, link and kind), under `receipt:{hash}`. */
const receiptChainData = (hash: string, r: Receipt): Json => ({ hash, prev_hash: r.prev_hash, n: r.n, kind: r.kind });

/**
 * The chain leaf's data of a receipt, recomputed from its content: its hash is recomputed too, so a
 * leaf matches only a receipt whose every field is the one recorded. Null when `hash` is not the
 * receipt's hash.
 */
export function receiptLeafData(hash: string, r: Receipt): string | null {
  if (receiptHash(r) !== hash) return null;
  return chainLeafData(`receipt:${hash}`, 'receipt', receiptChainData(hash, r));
}

/**
 * The `near` of every payment outbox message: every `pay:` key is one aggregate, the ledger
 * (SERVICE_AGGREGATES in src/store/partition.ts), so any of them names the ledger's partition, where
 * a payment update's messages are written beside it.
 */
export const LEDGER_NEAR = RK.head;

/** Chain event (not a receipt): recorded through the outbox with a stable id, in the ledger's partition. */
export function chainEventWrites(id: string, kind: string, data: Json, ts: number): Write[] {
  return outboxWrites({ id, dest: CHAIN_DEST, payload: { kind, data }, createdAt: ts }, LEDGER_NEAR);
}

/**
 * The next receipt after `head` (the value read at RK.head): its hash and the writes that store it,
 * move the head and enqueue it for the chain.
 */
export function receiptWrites(head: Json | undefined, r: Omit<Receipt, 'n' | 'prev_hash'>): { hash: string; receipt: Receipt; writes: Write[] } {
  const h = head as { hash?: string; n?: number } | undefined;
  const receipt: Receipt = { n: (h?.n ?? 0) + 1, prev_hash: h?.hash ?? GENESIS, ...r };
  const hash = receiptHash(receipt);
  const writes: Write[] = [
    { op: 'set', key: RK.receipt(hash), value: receipts.encode(receipt) },
    { op: 'set', key: RK.head, value: { hash, n: receipt.n } },
    { op: 'index', key: RK.all, member: hash, score: receipt.n },
    ...chainEventWrites(`receipt:${hash}`, 'receipt', receiptChainData(hash, receipt), r.ts),
  ];
  if (r.user) writes.push({ op: 'index', key: RK.user(r.user), member: hash, score: receipt.n });
  return { hash, receipt, writes };
}

/** Walks the whole chain of receipts: every hash recomputes and links to the one before. */
export async function verifyReceiptChain(store: Store): Promise<{ ok: boolean; count: number; broken?: string }> {
  let prev = GENESIS;
  let count = 0;
  for (let offset = 0; ; offset += 500) {
    const page = await store.indexRange(RK.all, { offset, limit: 500 });
    if (page.length === 0) break;
    const recs = await store.getMany<Json>(page.map((e) => RK.receipt(e.member)));
    for (let i = 0; i < page.length; i++) {
      const r = receipts.decode(recs[i]);
      if (!r || r.prev_hash !== prev || receiptHash(r) !== page[i]!.member) return { ok: false, count, broken: page[i]!.member };
      prev = page[i]!.member;
      count++;
    }
    if (page.length < 500) break;
  }
  const head = (await store.get(RK.head)) as { hash?: string } | undefined;
  if ((head?.hash ?? GENESIS) !== prev) return { ok: false, count, broken: 'head' };
  return { ok: true, count };
}
