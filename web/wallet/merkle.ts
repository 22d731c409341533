// RFC 6962 / 9162 checks in the browser with WebCrypto: the signed tree head's Ed25519 signature
// (RFC 6962 3.5 TreeHeadSignature, as src/payment/sth.ts signs it), inclusion and consistency proofs.
// The index walks are the hub's own (src/payment/merkle-walk.ts); only the hashing differs.
import { consistencyWalk, inclusionSides } from '../../src/payment/merkle-walk.js';

export type { SignedTreeHead } from '../../src/payment/sth.js';
import type { SignedTreeHead } from '../../src/payment/sth.js';

const HEX64 = /^[0-9a-f]{64}$/;
export const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
export const unhex = (h: string) => new Uint8Array((h.match(/../g) ?? []).map((x) => parseInt(x, 16)));
const b64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const buf = (b: Uint8Array) => b as unknown as BufferSource;

export async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', buf(bytes)));
}
const cat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) (out.set(p, o), (o += p.length));
  return out;
};
export const leafHash = (data: Uint8Array) => sha256(cat(new Uint8Array([0]), data));
const nodeHash = (l: Uint8Array, r: Uint8Array) => sha256(cat(new Uint8Array([1]), l, r));
const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

export function isHead(h: unknown): h is SignedTreeHead {
  const x = h as SignedTreeHead | null;
  return !!x && typeof x === 'object' && Number.isSafeInteger(x.tree_size) && x.tree_size >= 0 && Number.isSafeInteger(x.timestamp) && x.timestamp >= 0
    && typeof x.root === 'string' && HEX64.test(x.root) && typeof x.signature === 'string';
}

/** The bytes the chain signs: v1 (0), tree_hash (1), timestamp and tree_size (uint64 BE), root. */
export function sthSignedBytes(h: SignedTreeHead): Uint8Array {
  const b = new Uint8Array(50);
  const v = new DataView(b.buffer);
  b[0] = 0;
  b[1] = 1;
  v.setBigUint64(2, BigInt(h.timestamp));
  v.setBigUint64(10, BigInt(h.tree_size));
  b.set(unhex(h.root), 18);
  return b;
}

/** Does the chain's Ed25519 key (base64 of the 32 raw bytes) sign this head? */
export async function verifyHeadSignature(publicKey: string, h: SignedTreeHead): Promise<boolean> {
  if (!isHead(h)) return false;
  try {
    const key = await crypto.subtle.importKey('raw', buf(b64(publicKey)), { name: 'Ed25519' }, false, ['verify']);
    return await crypto.subtle.verify({ name: 'Ed25519' }, key, buf(b64(h.signature)), buf(sthSignedBytes(h)));
  } catch {
    return false;
  }
}

/** RFC 9162 2.1.3.2 over WebCrypto. */
export async function verifyInclusion(leaf: Uint8Array, index: number, size: number, path: string[], root: string): Promise<boolean> {
  const sides = inclusionSides(index, size, path.length);
  if (!sides || !path.every((p) => HEX64.test(p))) return false;
  let r: Uint8Array = leaf;
  for (const [i, p] of path.entries()) r = sides[i] ? await nodeHash(unhex(p), r) : await nodeHash(r, unhex(p));
  return hex(r) === root;
}

/** RFC 9162 2.1.4.2 over WebCrypto: is the tree of `first` leaves with `firstRoot` a prefix of the other? */
export async function verifyConsistency(first: number, second: number, path: string[], firstRoot: string, secondRoot: string): Promise<boolean> {
  if (!path.every((p) => HEX64.test(p)) || second < first || first < 0) return false;
  if (first === 0) return path.length === 0;
  if (first === second) return path.length === 0 && firstRoot === secondRoot;
  const walk = consistencyWalk(first, second, path.length);
  if (!walk) return false;
  const c = (walk.seedIsFirstRoot ? [firstRoot, ...path] : path).map(unhex);
  let fr: Uint8Array = c[0]!;
  let sr: Uint8Array = c[0]!;
  for (const [i, both] of walk.steps.entries()) {
    const p = c[i + 1]!;
    if (both) {
      fr = await nodeHash(p, fr);
      sr = await nodeHash(p, sr);
    } else sr = await nodeHash(sr, p);
  }
  return same(fr, unhex(firstRoot)) && same(sr, unhex(secondRoot));
}
