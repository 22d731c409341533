import type { BankSettlementPayment } from './peers.js';
import { utcDayRange } from './rules.js';
import { HttpError } from '../peers/index.js';

/**
 * The banking stand-in's daily settlement (`GET /api/settlement?date=YYYY-MM-DD`): its own list of
 * the payments it dated that UTC day by its own clock (an on-ramp when it confirmed or declined it, an
 * off-ramp when it received the instruction), each by id with its amount and status, and its totals.
 * Totals count confirmed on-ramps (KRW) and off-ramps not failed (token units, net of the fee);
 * declined on-ramps and failed off-ramps are listed, not counted.
 */

/** What the settlement reads of the banking stand-in's state (BankingState). */
export interface BankBooks {
  payments: Map<string, { id: string; ref: string; amount_krw: number; usd_micro: number; ts: number }>;
  declined: Map<string, { ref: string; amount_krw: number; ts: number }>;
  offramps: Map<string, { key: string; body: unknown; status: 'pending' | 'paid' | 'failed'; ts: number }>;
}

export function bankSettlement(state: BankBooks, date: string) {
  const day = utcDayRange(date);
  if (!day) throw new HttpError(400, 'invalid_date', 'date must be a UTC day YYYY-MM-DD');
  const inDay = (ts: number) => ts >= day.from && ts < day.to;
  const payments: BankSettlementPayment[] = [];
  for (const p of state.payments.values()) {
    if (inDay(p.ts)) payments.push({ kind: 'onramp', id: p.id, ref: p.ref, status: 'confirmed', ts: p.ts, amount_krw: p.amount_krw, usd_micro: p.usd_micro });
  }
  for (const d of state.declined.values()) {
    if (inDay(d.ts)) payments.push({ kind: 'onramp', id: d.ref, ref: d.ref, status: 'declined', ts: d.ts, amount_krw: d.amount_krw });
  }
  for (const o of state.offramps.values()) {
    if (!inDay(o.ts)) continue;
    const b = (o.body ?? {}) as { tokens?: unknown; fee?: unknown };
    payments.push({ kind: 'offramp', id: o.key.replace(/^offramp:/, ''), status: o.status, ts: o.ts, amount: String(b.tokens ?? '0'), fee: String(b.fee ?? '0') });
  }
  payments.sort((a, b) => a.ts - b.ts || a.id.localeCompare(b.id));
  const on = payments.filter((p) => p.kind === 'onramp' && p.status === 'confirmed');
  const off = payments.filter((p) => p.kind === 'offramp' && p.status !== 'failed');
  return {
    date,
    from: day.from,
    to: day.to,
    onramps: { count: on.length, sum_krw: on.reduce((s, p) => s + (p.amount_krw ?? 0), 0) },
    offramps: { count: off.length, sum: off.reduce((s, p) => s + BigInt(p.amount ?? '0'), 0n).toString() },
    payments,
  };
}
