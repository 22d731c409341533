import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { consistencyProof, leafHash, nodeHash, treeHash, verifyConsistency } from '../../src/payment/merkle.js';
import { chainPublicKey, rawPublicKey, signTreeHead, verifyTreeHead } from '../../src/payment/sth.js';

/** An independent MTH: level by level, carrying an odd node up (RFC 6962's tree shape), no recursion. */
function mthByLevels(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return treeHash([]);
  let level = leaves;
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? nodeHash(level[i]!, level[i + 1]!) : level[i]!);
    level = next;
  }
  return level[0]!;
}

const leavesArb = fc.array(fc.uint8Array({ minLength: 0, maxLength: 8 }), { minLength: 1, maxLength: 70 }).map((xs) => xs.map((x) => leafHash(Buffer.from(x))));

describe('RFC 6962 consistency proofs', () => {
  it('the level-by-level root agrees with the recursive one', () => {
    fc.assert(fc.property(leavesArb, (leaves) => mthByLevels(leaves).equals(treeHash(leaves))));
  });

  it('a proof from every prefix verifies against independently recomputed roots', () => {
    fc.assert(
      fc.property(leavesArb, fc.nat(), (leaves, r) => {
        const n = leaves.length;
        const m = 1 + (r % n);
        const proof = consistencyProof(leaves, m);
        return verifyConsistency(m, n, proof, mthByLevels(leaves.slice(0, m)), mthByLevels(leaves));
      }),
      { numRuns: 400 },
    );
  });

  it('a rewritten old leaf, a wrong size or a changed proof hash fails', () => {
    fc.assert(
      fc.property(leavesArb, fc.nat(), fc.nat(), (leaves, r, w) => {
        const n = leaves.length;
        const m = 1 + (r % n);
        const proof = consistencyProof(leaves, m);
        const oldRoot = mthByLevels(leaves.slice(0, m));
        const newRoot = mthByLevels(leaves);
        // the log rewrote leaf i < m after the old head was seen
        const i = w % m;
        const rewritten = leaves.slice();
        rewritten[i] = leafHash(`rewritten ${i}`);
        const forgedProof = consistencyProof(rewritten, m);
        if (verifyConsistency(m, n, forgedProof, oldRoot, mthByLevels(rewritten))) return false;
        if (m < n && verifyConsistency(m, n, proof, oldRoot, leafHash('other root'))) return false;
        if (m < n && m > 1 && verifyConsistency(m - 1, n, proof, oldRoot, newRoot)) return false;
        if (proof.length > 0) {
          const bent = proof.slice();
          const j = w % bent.length;
          bent[j] = leafHash(bent[j]!);
          if (verifyConsistency(m, n, bent, oldRoot, newRoot)) return false;
        }
        return true;
      }),
      { numRuns: 400 },
    );
  });

  it('edge cases: empty old tree, equal sizes, shrinking', () => {
    const leaves = [0, 1, 2, 3, 4].map((i) => leafHash(String(i)));
    const root = treeHash(leaves);
    expect(verifyConsistency(0, 5, [], treeHash([]), root)).toBe(true);
    expect(verifyConsistency(5, 5, [], root, root)).toBe(true);
    expect(verifyConsistency(5, 5, [], root, treeHash(leaves.slice(0, 4)))).toBe(false);
    expect(verifyConsistency(5, 4, [], root, root)).toBe(false);
    expect(verifyConsistency(3, 5, [], treeHash(leaves.slice(0, 3)), root)).toBe(false);
  });
});

describe('signed tree heads', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');
  const head = signTreeHead(privateKey, { tree_size: 7, timestamp: 1_790_000_000_000, root: 'ab'.repeat(32) });

  it('verifies with the configured key (raw base64 or PEM) and not with another', () => {
    expect(verifyTreeHead(chainPublicKey(rawPublicKey(publicKey)), head)).toBe(true);
    expect(verifyTreeHead(chainPublicKey(publicKey.export({ type: 'spki', format: 'pem' }) as string), head)).toBe(true);
    expect(verifyTreeHead(other.publicKey, head)).toBe(false);
  });

  it('any changed field breaks the signature', () => {
    expect(verifyTreeHead(publicKey, { ...head, tree_size: 8 })).toBe(false);
    expect(verifyTreeHead(publicKey, { ...head, timestamp: head.timestamp + 1 })).toBe(false);
    expect(verifyTreeHead(publicKey, { ...head, root: 'cd'.repeat(32) })).toBe(false);
    expect(verifyTreeHead(publicKey, { ...head, signature: 'AAAA' })).toBe(false);
  });
});
