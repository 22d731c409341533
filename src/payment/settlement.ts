import { AppError } from '../errors.js';
import type { Json, Store } from '../store/port.js';
import { BOUNDARY_ACCOUNT, K, parseTransfer, type Transfer } from './ledger.js';
import type { BankSettlementPayment, BankingClient } from './peers.js';
import { DAY_MS, utcDayRange } from './rules.js';
import { offrampOutcomes, RECON } from './reconcile.js';
import { onrampRecords, PK } from './service.js';

/**
 * The daily settlement report (docs/payment.md "Daily settlement"): the `bank` boundary account's
 * payments of a UTC day matched against the bank's own list and totals for that day
 * (`GET /api/settlement?date=` at the bank), every difference listed.
 *
 * Which clock dates a payment: the bank's. The bank's statement is what both sides must agree on, and
 * a payment the hub books late (a lost webhook settled by the next morning's reconciliation) is still
 * the bank's payment of the day it took the money. So every payment the bank dates D is looked up in
 * the hub's ledger by its id (`onramp:<payment id>`, `<off-ramp id>:net`), whenever the hub booked it.
 * A hub payment the bank does not list at all is dated by the hub's own clock (its transfer's time):
 * it is `missing_at_bank` on that day, unless the bank lists it on the day before or after (a payment
 * across midnight is matched on the bank's day, not reported twice).
 *
 * Matched: on-ramps by banking payment id and KRW amount (status confirmed / declined against the
 * hub's credit); off-ramps by id, net token units and fee, status pending/paid/failed against the
 * hub's sent/paid/returned. Totals: confirmed on-ramps (count, KRW) and off-ramps not failed / not
 * returned (count, net units), each side from its own records.
 */

export type DifferenceKind = 'missing_at_hub' | 'missing_at_bank' | 'amount_mismatch' | 'status_mismatch';

interface HubPayment {
  kind: 'onramp' | 'offramp';
  id: string;
  status: string;
  ts: number;
  transfer: string;
  amount_krw?: number;
  units?: string;
  amount?: string;
  fee?: string;
}

export interface Difference {
  kind: DifferenceKind;
  payment: 'onramp' | 'offramp';
  id: string;
  hub: HubPayment | null;
  bank: BankSettlementPayment | null;
}

interface Totals {
  onramps: { count: number; sum_krw: number };
  offramps: { count: number; sum: string };
}

/** The bank's off-ramp status and the hub's that agree with it. */
const AGREES: Record<string, string> = { pending: 'sent', paid: 'paid', failed: 'returned' };
const MAX_DAY_TRANSFERS = 50_000;

const isPayment = (p: unknown): p is BankSettlementPayment => {
  const x = p as BankSettlementPayment;
  return !!x && typeof x === 'object' && (x.kind === 'onramp' || x.kind === 'offramp') && typeof x.id === 'string' && typeof x.status === 'string';
};

export class Settlement {
  constructor(
    private readonly store: Store,
    private readonly bank: BankingClient,
    private readonly now: () => number,
  ) {}

  private async bankDay(date: string): Promise<{ payments: BankSettlementPayment[]; totals: unknown }> {
    const answer = await this.bank.settlement(date).catch((err: unknown) => {
      throw new AppError('unavailable', 'bank_unavailable', `the bank did not answer: ${(err as Error).message}`);
    });
    return { payments: (Array.isArray(answer.payments) ? answer.payments : []).filter(isPayment), totals: { onramps: answer.onramps, offramps: answer.offramps } };
  }

  private async hubOnramp(paymentId: string): Promise<HubPayment | undefined> {
    const t = parseTransfer(await this.store.get(K.transfer(`onramp:${paymentId}`)));
    return t ? onrampOf(paymentId, t) : undefined;
  }

  private async hubOfframp(id: string): Promise<HubPayment | undefined> {
    const [netV, feeV, retV, rec] = await this.store.getMany([K.transfer(`${id}:net`), K.transfer(`${id}:fee`), K.transfer(`${id}:return`), RECON.offramp(id)]);
    const net = parseTransfer(netV);
    if (!net || net.code !== 'offramp') return undefined;
    const state = parseTransfer(retV) ? 'returned' : (offrampOutcomes.decode(rec)?.state ?? 'sent');
    return { kind: 'offramp', id, status: state, ts: net.ts, transfer: net.id, amount: net.amount.toString(), fee: parseTransfer(feeV)?.amount.toString() ?? '0' };
  }

  async report(date: string): Promise<Json> {
    const day = utcDayRange(date);
    if (!day) throw new AppError('invalid', 'invalid_date', 'date must be a real UTC day YYYY-MM-DD', { date });
    if (day.from > this.now()) throw new AppError('invalid', 'future_date', 'a settlement is for today or an earlier day', { date });
    const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    // the day after is asked only once it has begun (nothing can be dated in a day still to come)
    const none = Promise.resolve({ payments: [] as BankSettlementPayment[], totals: undefined });
    const [before, theDay, after] = await Promise.all([this.bankDay(iso(day.from - DAY_MS)), this.bankDay(date), day.to <= this.now() ? this.bankDay(iso(day.to)) : none]);
    const list = theDay.payments;
    const differences: Difference[] = [];
    const hubTotals = { onramps: { count: 0, sum_krw: 0 }, offramps: { count: 0, sum: 0n } };
    const count = (h: HubPayment) => {
      if (h.kind === 'onramp' && h.status === 'credited') {
        hubTotals.onramps.count++;
        hubTotals.onramps.sum_krw += h.amount_krw ?? 0;
      } else if (h.kind === 'offramp' && h.status !== 'returned') {
        hubTotals.offramps.count++;
        hubTotals.offramps.sum += BigInt(h.amount ?? '0');
      }
    };
    const diff = (kind: DifferenceKind, hub: HubPayment | null, bank: BankSettlementPayment | null) =>
      differences.push({ kind, payment: (hub ?? bank)!.kind, id: (hub ?? bank)!.id, hub, bank });

    for (const b of list) {
      if (b.kind === 'onramp' && b.status === 'declined') {
        // no money moved at the bank: a difference only when the hub credited it all the same
        const onr = onrampRecords.decode(await this.store.get(PK.onramp(b.id)));
        const h = onr?.state === 'credited' && onr.payment_id ? await this.hubOnramp(onr.payment_id) : undefined;
        if (h) {
          count(h);
          diff('status_mismatch', h, b);
        }
        continue;
      }
      const h = b.kind === 'onramp' ? await this.hubOnramp(b.id) : await this.hubOfframp(b.id);
      if (!h) {
        diff('missing_at_hub', null, b);
        continue;
      }
      count(h);
      if (b.kind === 'onramp' ? h.amount_krw !== b.amount_krw : h.amount !== b.amount || h.fee !== b.fee) diff('amount_mismatch', h, b);
      else if (b.kind === 'offramp' && AGREES[b.status] !== h.status) diff('status_mismatch', h, b);
    }

    // the hub's payments booked this day (its clock) that the bank lists on none of the three days
    const known = new Set([...before.payments, ...list, ...after.payments].map((p) => `${p.kind}:${p.id}`));
    const entries = await this.store.indexRange(K.history(BOUNDARY_ACCOUNT), { min: day.from, max: day.to - 1, limit: MAX_DAY_TRANSFERS + 1 });
    if (entries.length > MAX_DAY_TRANSFERS) throw new AppError('invalid', 'day_too_large', `more than ${MAX_DAY_TRANSFERS} boundary transfers in the day`);
    for (const e of entries) {
      const on = /^onramp:(.+)$/.exec(e.member);
      const off = /^(.+):net$/.exec(e.member);
      const kind = on ? 'onramp' : off ? 'offramp' : undefined;
      const id = on?.[1] ?? off?.[1];
      if (!kind || !id || known.has(`${kind}:${id}`)) continue;
      const h = kind === 'onramp' ? await this.hubOnramp(id) : await this.hubOfframp(id);
      if (!h) continue;
      count(h);
      diff('missing_at_bank', h, null);
    }

    // the bank's totals as it states them, and as its own list adds up (they should agree)
    const listed = totalsOf(list);
    const bankTotals = theDay.totals as Totals;
    const hub: Totals = { onramps: hubTotals.onramps, offramps: { count: hubTotals.offramps.count, sum: hubTotals.offramps.sum.toString() } };
    const same = (a: Totals, b: Totals) => JSON.stringify([a.onramps?.count, a.onramps?.sum_krw, a.offramps?.count, a.offramps?.sum]) === JSON.stringify([b.onramps?.count, b.onramps?.sum_krw, b.offramps?.count, b.offramps?.sum]);
    const sameTotals = same(hub, bankTotals) && same(listed, bankTotals);
    return {
      date,
      from: day.from,
      to: day.to,
      dated_by: 'bank',
      balanced: differences.length === 0 && sameTotals,
      hub,
      bank: bankTotals,
      bank_list_totals: listed,
      payments: list.length,
      differences,
    } as unknown as Json;
  }
}

function onrampOf(paymentId: string, t: Transfer): HubPayment {
  const meta = (t.meta ?? {}) as { amount_krw?: unknown };
  return { kind: 'onramp', id: paymentId, status: 'credited', ts: t.ts, transfer: t.id, amount_krw: Number(meta.amount_krw ?? 0), units: t.amount.toString() };
}

/** The bank's totals, recomputed from its own list (what it says it settled that day). */
function totalsOf(list: BankSettlementPayment[]): Totals {
  const on = list.filter((p) => p.kind === 'onramp' && p.status === 'confirmed');
  const off = list.filter((p) => p.kind === 'offramp' && p.status !== 'failed');
  return {
    onramps: { count: on.length, sum_krw: on.reduce((s, p) => s + (p.amount_krw ?? 0), 0) },
    offramps: { count: off.length, sum: off.reduce((s, p) => s + BigInt(/^\d+$/.test(p.amount ?? '') ? p.amount! : '0'), 0n).toString() },
  };
}
