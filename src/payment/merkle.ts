import { createHash } from 'node:crypto';
import { consistencyWalk, inclusionSides } from './merkle-walk.js';

/**
 * RFC 6962 / 9162 Merkle tree hashing: leaf = SHA-256(0x00 || data), node = SHA-256(0x01 || left ||
 * right), audit paths for inclusion proofs and their verification. Used by the chain stand-in (the
 * append-only log) and by the hub to check what the chain answers; the /wallet page runs the same
 * verification with WebCrypto; both fold the index walks of merkle-walk.ts.
 */

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

export function leafHash(data: Buffer | string): Buffer {
  return sha(Buffer.from([0]), typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
}

export function nodeHash(left: Buffer, right: Buffer): Buffer {
  return sha(Buffer.from([1]), left, right);
}

/** Largest power of two strictly below n (n >= 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH over leaf hashes [from, to). */
export function treeHash(leaves: Buffer[], from = 0, to = leaves.length): Buffer {
  const n = to - from;
  if (n === 0) return createHash('sha256').digest();
  if (n === 1) return leaves[from]!;
  const k = split(n);
  return nodeHash(treeHash(leaves, from, from + k), treeHash(leaves, from + k, to));
}

/** PATH(m, D[from:to]): the audit path of leaf `m` (relative to `from`). */
export function auditPath(leaves: Buffer[], m: number, from = 0, to = leaves.length): Buffer[] {
  const n = to - from;
  if (n <= 1) return [];
  const k = split(n);
  if (m < k) return [...auditPath(leaves, m, from, from + k), treeHash(leaves, from + k, to)];
  return [...auditPath(leaves, m - k, from + k, to), treeHash(leaves, from, from + k)];
}

/** RFC 9162 2.1.3.2: does `path` prove leaf `index` of a tree of `size` leaves with `root`? */
export function verifyInclusion(leaf: Buffer, index: number, size: number, path: Buffer[], root: Buffer): boolean {
  const sides = inclusionSides(index, size, path.length);
  if (!sides) return false;
  const r = path.reduce((acc, p, i) => (sides[i] ? nodeHash(p, acc) : nodeHash(acc, p)), leaf);
  return r.equals(root);
}

/** RFC 6962 2.1.2 PROOF(m, D[n]): the consistency proof from the first `m` leaves to all of them (0 < m <= n). */
export function consistencyProof(leaves: Buffer[], m: number, from = 0, to = leaves.length, whole = true): Buffer[] {
  const n = to - from;
  if (m === n) return whole ? [] : [treeHash(leaves, from, to)];
  const k = split(n);
  if (m <= k) return [...consistencyProof(leaves, m, from, from + k, whole), treeHash(leaves, from + k, to)];
  return [...consistencyProof(leaves, m - k, from + k, to, false), treeHash(leaves, from, from + k)];
}

/**
 * RFC 9162 2.1.4.2: does `path` prove that the tree of `first` leaves with `firstRoot` is a prefix of
 * the tree of `second` leaves with `secondRoot`? (Every tree extends the empty one.)
 */
export function verifyConsistency(first: number, second: number, path: Buffer[], firstRoot: Buffer, secondRoot: Buffer): boolean {
  if (!Number.isInteger(first) || !Number.isInteger(second) || first < 0 || second < first) return false;
  if (first === 0) return path.length === 0;
  if (first === second) return path.length === 0 && firstRoot.equals(secondRoot);
  const walk = consistencyWalk(first, second, path.length);
  if (!walk) return false;
  const c = walk.seedIsFirstRoot ? [firstRoot, ...path] : path;
  let fr = c[0]!;
  let sr = c[0]!;
  walk.steps.forEach((both, i) => {
    const p = c[i + 1]!;
    if (both) {
      fr = nodeHash(p, fr);
      sr = nodeHash(p, sr);
    } else {
      sr = nodeHash(sr, p);
    }
  });
  return fr.equals(firstRoot) && sr.equals(secondRoot);
}
