import { UNIT, DEFAULT_RULES, payoutWeekOf, type Payment } from '../payment/index.js';

/**
 * The demo's weekly payouts (docs/payment.md "Payouts"), made by the payment relay's own functions:
 * the demo user's second challenge (`standard_25k`, not bound to a program) was bought sixteen days
 * ago, judged passed by an operator, and booked realized P&L in each of the last two finished weeks;
 * the payout of the older week is paid (a posted transfer and a payout receipt), and after a rule
 * violation two days ago the payout of the last week is held for review (a pending transfer, an open
 * review item and a warning for the operator).
 *
 * Past weeks cannot be booked now (a fill received after its week closed is booked to the open week),
 * so the purchase, the judgement and the fills go through a PaymentService over the same store,
 * idempotency and peg whose clock reads the instant of each step; the payouts, the pool funding and
 * the violation run on the relay's own services at the present time. Each step is recorded in the
 * demo state, and every one is idempotent of itself (fills and violations per event id, a payout
 * once per week and user), so a second start adds nothing and a crash half-way seeds only the rest.
 */

export const PAYOUT_CHALLENGE = 'standard_25k';
const DAY = 86_400_000;
/** Profit of the paid week and of the held week (USD cents). */
const PAID_CENTS = 150_000;
const HELD_CENTS = 80_000;
/** The payout pool the operator funds: large enough that the paid week passes the circuit breaker (5 % of escrow) and the pool floor. */
const POOL_TOKENS = 200_000n;

export interface PayoutDemoState {
  /** The instant the story is told from (the first seeding); every step's time derives from it. */
  t0?: number;
  challenge?: string;
  pool?: boolean;
  paid?: PayoutSeen;
  held?: PayoutSeen;
}

export interface PayoutSeen {
  week: string;
  status: string;
  amount: string;
  receipt_hash?: string | null;
  review?: string;
  reason?: string;
}

/** Seeds (or finds) the two payouts of `user`; answers them. */
export async function seedPayouts(payment: Payment, user: string, state: PayoutDemoState, save: () => Promise<unknown>): Promise<{ paid: PayoutSeen; held: PayoutSeen }> {
  if (state.paid && state.held) return { paid: state.paid, held: state.held };
  const { service, lifecycle, payouts } = payment;
  const t0 = (state.t0 ??= service.now());
  const at = (ms: number) => service.withClock({ now: () => ms });
  // the judgement comes first, so the rules (fills of an active challenge) are never consulted
  const engineAt = (ms: number) => lifecycle.at({ now: () => ms }, { rules: DEFAULT_RULES, violationDeductPercent: 10n });
  const paidAt = t0 - 14 * DAY;
  const heldAt = t0 - 7 * DAY;

  if (!state.challenge) {
    const bought = (await at(t0 - 16 * DAY).buy(user, PAYOUT_CHALLENGE, {})) as { challenge: string };
    state.challenge = bought.challenge;
    await save();
  }
  const id = state.challenge;
  if ((await service.challenge(id)).state === 'active') await engineAt(t0 - 15 * DAY).judge(id, 'pass', 'demo-operator', 'profit target reached (demo)');

  if (!state.pool) {
    await service.fundPool(POOL_TOKENS * UNIT, 'demo-operator', {});
    state.pool = true;
    await save();
  }

  if (!state.paid) {
    await engineAt(paidAt).event(id, { type: 'fill', event_id: 'demo-paid-week', realized_cents: PAID_CENTS, ts: paidAt });
    state.paid = seen(await payouts.payout(payoutWeekOf(paidAt), user));
    await save();
  }
  if (!state.held) {
    await engineAt(heldAt).event(id, { type: 'fill', event_id: 'demo-held-week', realized_cents: HELD_CENTS, ts: heldAt });
    // a daily-loss violation two days ago: the next payout waits for an operator's review
    await lifecycle.event(id, { type: 'violation', event_id: 'demo-violation', rule: 'daily_loss', ts: t0 - 2 * DAY });
    state.held = seen(await payouts.payout(payoutWeekOf(heldAt), user));
    await save();
  }
  return { paid: state.paid, held: state.held };
}

function seen(answer: unknown): PayoutSeen {
  const a = answer as { week: string; status: string; amount: string; receipt_hash?: string | null; review?: string; reason?: string };
  return {
    week: a.week,
    status: a.status,
    amount: a.amount,
    receipt_hash: a.receipt_hash ?? null,
    ...(a.review ? { review: a.review } : {}),
    ...(a.reason ? { reason: a.reason } : {}),
  };
}
