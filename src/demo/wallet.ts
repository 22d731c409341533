import type { Payment } from '../payment/index.js';
import { seedPayouts, type PayoutDemoState, type PayoutSeen } from './payouts.js';

/**
 * The demo's wallet (src/payment): the demo user on-ramps through the bank stand-in's confirmation
 * (the signed webhook credits the wallet, as a real payment does) and buys a challenge, which runs
 * as a live trading program; a second challenge has a paid weekly payout and one held for review
 * (src/demo/payouts.ts). Only with the embedded stand-ins (DEMO=1 starts them when no bank is
 * configured): nothing here talks to a real bank.
 */

export const DEMO_WALLET_USER = 'demo-wallet';
const ONRAMP_KRW = 500_000;
const CHALLENGE = 'starter_10k';

export interface WalletDemoState {
  onramp?: string;
  challenge?: string;
  payouts?: PayoutDemoState;
}

export interface WalletDemo {
  user: string;
  /** The bank stand-in's development sign-in, returning to /wallet with the user's token. */
  sign_in_url: string;
  challenge?: string;
  program?: string;
  /** The payout paid and the one held for review (its review id for the operator). */
  payouts: { paid: PayoutSeen; held: PayoutSeen };
}

/**
 * Seeds the wallet once (per part); undefined when the payment relay runs without the embedded
 * stand-ins. `url` is where people open the hub (PUBLIC_URL or the listening address); `local` where the in-process bank stand-in reaches it.
 */
export async function seedWallet(payment: Payment, at: { url: string; local: string }, state: WalletDemoState, save: () => Promise<unknown>): Promise<WalletDemo | undefined> {
  const { url, local } = at;
  const bank = payment.standins?.banking;
  if (!bank) return undefined;
  const { service } = payment;
  if (!state.onramp) {
    const answer = (await service.onramp(DEMO_WALLET_USER, ONRAMP_KRW, 'card', local, `${url}/wallet`, {})) as unknown as { body: { payment: string; location: string } };
    const location = new URL(answer.body.location);
    const done = await bank.confirm(location.searchParams.get('ref')!, location.searchParams);
    if (done.webhook_status !== 200) throw new Error(`the demo on-ramp webhook answered ${done.webhook_status}`);
    state.onramp = answer.body.payment;
    await save();
  }
  if (!state.challenge) {
    const bought = (await service.buy(DEMO_WALLET_USER, CHALLENGE, {}, payment.program)) as { challenge: string };
    state.challenge = bought.challenge;
    await save();
  }
  const payouts = await seedPayouts(payment, DEMO_WALLET_USER, (state.payouts ??= {}), save);
  const record = await service.challenge(state.challenge);
  return {
    user: DEMO_WALLET_USER,
    sign_in_url: `${bank.url}/sso/login?user=${DEMO_WALLET_USER}&return=${encodeURIComponent(`${url}/wallet`)}`,
    challenge: record.id,
    ...(record.program ? { program: record.program } : {}),
    payouts,
  };
}
