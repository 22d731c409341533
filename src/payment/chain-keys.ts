import { createPublicKey, type KeyObject } from 'node:crypto';

/**
 * What the hub is told to trust of the chain, parsed without anything else of the relay (the
 * settings check them at start: src/config.ts): its Ed25519 public key (CHAIN_PUBLIC_KEY) and a
 * known-good head (CHAIN_PINNED_HEAD, `cli.js chain-reset`).
 */

/** The chain's public key from config: a PEM (SPKI) or the base64 of the 32 raw Ed25519 bytes. */
export function chainPublicKey(text: string): KeyObject {
  const t = text.trim();
  if (t.startsWith('-----BEGIN')) return createPublicKey(t);
  const raw = Buffer.from(t, 'base64');
  if (raw.length !== 32) throw new Error('CHAIN_PUBLIC_KEY must be a PEM or 32 base64 bytes of an Ed25519 key');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
}

/** A head known to be good (from config or an operator), without signature: its size and root. */
export interface KnownHead {
  tree_size: number;
  root: string;
}

/** `<tree_size>:<root>` (a positive size, the root as 64 lower-case hex digits); or the reason it is not. */
export function parseKnownHead(text: string): KnownHead | string {
  const m = /^(\d{1,15}):([0-9a-f]{64})$/.exec(text.trim());
  if (!m) return 'a known head is <tree_size>:<root>, the root as 64 lower-case hex digits';
  const tree_size = Number(m[1]);
  if (!Number.isSafeInteger(tree_size) || tree_size < 1) return 'tree_size must be a positive integer';
  return { tree_size, root: m[2]! };
}
