import type { PriceSample, PriceSource } from '../../src/payment/peers.js';
import type { PaymentStandins } from '../../src/payment/standins.js';
import { AUTH_TEST_ENV } from './auth.js';
import { tempDir } from './process.js';

/**
 * The settings of a hub started in the test process on the payment relay's loopback stand-ins:
 * SSO from the bank's JWKS (issuer and audience checked), the bank with its webhook secret, the chain
 * (with its tree-head key when `chainKey`), the broker and the three price providers, a fresh
 * DATA_DIR named after `name`. `extra` is added last.
 */
export function paymentHubEnv(peers: PaymentStandins, secret: string, name: string, opts: { chainKey?: boolean; extra?: Record<string, string> } = {}): Record<string, string> {
  return {
    ...AUTH_TEST_ENV,
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: tempDir(name),
    LOG_LEVEL: 'silent',
    TRADING_WORKERS: '1',
    SSO_JWKS_URL: `${peers.banking.url}/.well-known/jwks.json`,
    SSO_ISSUER: peers.banking.url,
    SSO_AUDIENCE: 'maru',
    BANKING_URL: peers.banking.url,
    BANKING_WEBHOOK_SECRET: secret,
    CHAIN_URL: peers.chain.url,
    ...(opts.chainKey ? { CHAIN_PUBLIC_KEY: peers.chain.state.publicKey } : {}),
    BROKER_URL: peers.broker.url,
    PRICE_PROVIDER_URLS: peers.prices.map((p) => p.url).join(','),
    // the price stand-ins answer from the test's own process, which a burst can keep busy past the
    // 1.5 s default (a test of the time-out sets its own)
    PEG_TIMEOUT_MS: '5000',
    ...opts.extra,
  };
}

/** A price provider quoting one price (KRW per token unit) every 30 s over any window. */
export const flatPriceSource = (name: string, price = 1380): PriceSource => ({
  name,
  quotes: async (from: number, to: number) => {
    const out: PriceSample[] = [];
    for (let t = from - (from % 30_000); t <= to; t += 30_000) out.push({ t, price });
    return out;
  },
});
