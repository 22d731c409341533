import { z } from 'zod';
import { AppError } from '../errors.js';
import { route, type Hub } from '../hub/declare.js';
import type { Json } from '../store/port.js';
import type { ChainClient } from './peers.js';
import type { TreeHeads } from './tree-heads.js';
import { A, TOKEN_API } from './schemas.js';

/**
 * The payment relay's chain routes (docs/payment.md "Receipts and the chain") and what a page needs to
 * sign in and to check the chain itself: the chain's signed tree head as the hub verified it, the
 * consistency proof between any two sizes (so a page checks its own last verified head against a new
 * one, not the hub's), the chain's public key and the bank's sign-in address.
 */

export interface PaymentChainRoutesOptions {
  chain?: ChainClient;
  /** The chain's signed tree heads, verified (set when CHAIN_PUBLIC_KEY is). */
  treeHeads?: TreeHeads;
  /** The configured CHAIN_PUBLIC_KEY, base64 of the 32 raw Ed25519 bytes. */
  chainPublicKey?: string;
  /** The bank (BANKING_URL): its users sign in there (`/sso/login`). */
  bankingUrl?: string;
}

const OPERATOR = { roles: ['operator'] };
const HEX64 = /^[0-9a-f]{64}$/;

export function registerPaymentChainRoutes(hub: Hub, opts: PaymentChainRoutesOptions) {
  const heads = () => {
    if (!opts.treeHeads) throw new AppError('unavailable', 'chain_key_not_configured', 'CHAIN_URL and CHAIN_PUBLIC_KEY are not configured');
    return opts.treeHeads;
  };

  const config = route({
    method: 'GET',
    path: '/config',
    response: z.object({ sso_login_url: z.string().nullable(), chain_public_key: z.string().nullable() }),
    summary: 'Where the relay\'s users sign in (the bank\'s SSO login) and the chain\'s Ed25519 public key (base64)',
    handler: () => ({
      sso_login_url: opts.bankingUrl ? `${opts.bankingUrl.replace(/\/+$/, '')}/sso/login` : null,
      chain_public_key: opts.chainPublicKey ?? null,
    }),
  });

  const sth = route({
    method: 'GET',
    path: '/chain/sth',
    response: A.treeHead,
    summary: 'The chain\'s current signed tree head, verified by the hub, with the consistency proof from the last head it had verified',
    handler: async () => ({ ...(await heads().refresh()), public_key: opts.chainPublicKey ?? null }) as unknown as Json,
  });

  // open to anyone and a call to the chain each: bounded per client
  const proofLimit = hub.rateLimit('chain-consistency', { limit: 60, windowMs: 60_000 });
  const consistency = route({
    method: 'GET',
    path: '/chain/consistency',
    guards: [proofLimit],
    query: z.object({ first: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER), second: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER) }).strict(),
    response: z.object({ first: z.number().int(), second: z.number().int(), consistency: z.array(z.string()) }),
    summary: 'The chain\'s consistency proof (RFC 6962 2.1.2) from its tree of `first` leaves to its tree of `second`, as the chain gave it (to be checked by the caller)',
    handler: async (ctx) => {
      const { first, second } = ctx.query;
      if (second < first) throw new AppError('invalid', 'invalid_range', 'first must not be above second', { first, second });
      if (!opts.chain) throw new AppError('unavailable', 'chain_not_configured', 'CHAIN_URL is not configured');
      const p = await opts.chain.consistency(first, second).catch((err: unknown) => {
        const status = (err as { status?: number }).status;
        if (status === 400) throw new AppError('invalid', 'invalid_range', 'the chain has no tree of that size', { first, second });
        throw new AppError('unavailable', 'chain_unavailable', `the chain gave no consistency proof: ${(err as Error).message}`);
      });
      const path = Array.isArray(p.consistency) ? p.consistency.filter((x): x is string => typeof x === 'string' && HEX64.test(x)) : [];
      return { first, second, consistency: path };
    },
  });

  const acceptSth = route({
    method: 'POST',
    path: '/ops/chain/sth',
    auth: OPERATOR,
    body: { schema: z.object({ tree_size: z.number().int().min(0), timestamp: z.number().int().min(0), root: z.string(), signature: z.string().max(200) }).strict() },
    response: A.treeHead,
    summary: 'Checks a signed tree head seen elsewhere against the last verified one (400 forged, 409 out of order or inconsistent)',
    handler: async (ctx) => (await heads().accept(ctx.body, `operator:${ctx.identity!.name}`)) as unknown as Json,
  });
  const alarms = route({ method: 'GET', path: '/ops/chain/alarms', auth: OPERATOR, response: z.object({ alarms: z.array(z.unknown()) }), handler: async () => ({ alarms: await heads().alarms() }) });

  return hub.mount(TOKEN_API, {
    config,
    sth,
    consistency,
    acceptSth,
    alarms,
  });
}
