import { sign, verify, type KeyObject } from 'node:crypto';
import { codec, F } from '../store/codec.js';

/**
 * Signed tree heads (RFC 6962 3.5): the chain signs, with its Ed25519 key, the TreeHeadSignature
 * structure (version v1 = 0, signature_type tree_hash = 1, timestamp ms uint64, tree_size uint64,
 * sha256_root_hash 32 bytes). The hub holds the chain's public key (CHAIN_PUBLIC_KEY) and accepts a
 * head only when this signature verifies.
 */

export interface SignedTreeHead {
  tree_size: number;
  timestamp: number;
  /** 64 hex digits. */
  root: string;
  /** base64 Ed25519 signature over sthSignedBytes. */
  signature: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** The last verified head as the Store keeps it. */
export const treeHeads = codec<SignedTreeHead>('signed tree head', { fields: { tree_size: F.int, timestamp: F.int, root: F.str, signature: F.str } });

export function sthSignedBytes(h: { tree_size: number; timestamp: number; root: string }): Buffer {
  const b = Buffer.alloc(2 + 8 + 8 + 32);
  b[0] = 0; // v1
  b[1] = 1; // tree_hash
  b.writeBigUInt64BE(BigInt(h.timestamp), 2);
  b.writeBigUInt64BE(BigInt(h.tree_size), 10);
  Buffer.from(h.root, 'hex').copy(b, 18);
  return b;
}

export function signTreeHead(key: KeyObject, h: { tree_size: number; timestamp: number; root: string }): SignedTreeHead {
  return { tree_size: h.tree_size, timestamp: h.timestamp, root: h.root, signature: sign(null, sthSignedBytes(h), key).toString('base64') };
}

/** The shape of a head (sizes and times are safe non-negative integers, root 64 hex digits), or a reason. */
export function sthShapeProblem(h: unknown): string | undefined {
  const x = h as Partial<SignedTreeHead> | null;
  if (!x || typeof x !== 'object') return 'a tree head is an object';
  if (!Number.isSafeInteger(x.tree_size) || x.tree_size! < 0) return 'tree_size must be a non-negative integer';
  if (!Number.isSafeInteger(x.timestamp) || x.timestamp! < 0) return 'timestamp must be a non-negative integer (ms)';
  if (typeof x.root !== 'string' || !HEX64.test(x.root)) return 'root must be 64 lower-case hex digits';
  if (typeof x.signature !== 'string' || x.signature.length > 200) return 'signature must be base64';
  return undefined;
}

export function verifyTreeHead(key: KeyObject, h: SignedTreeHead): boolean {
  if (sthShapeProblem(h)) return false;
  try {
    return verify(null, sthSignedBytes(h), key, Buffer.from(h.signature, 'base64'));
  } catch {
    return false;
  }
}

export { chainPublicKey } from './chain-keys.js';

export const rawPublicKey = (key: KeyObject): string => Buffer.from(key.export({ format: 'jwk' }).x as string, 'base64url').toString('base64');
