import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { auditPath, consistencyProof, leafHash, nodeHash, treeHash, verifyConsistency, verifyInclusion } from '../../src/payment/merkle.js';

// RFC 6962 / 9162 Merkle hashing (docs/payment.md "Receipts and the chain"): leaf = SHA-256(0x00 ||
// data), node = SHA-256(0x01 || left || right), the empty tree is SHA-256 of nothing; inclusion and
// consistency proofs are refused for impossible indexes and sizes rather than checked.

const hex = (b: Buffer) => b.toString('hex');
const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

// The test vectors of RFC 6962's reference implementation (certificate-transparency, merkle_tree_test)
const INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map((h) => Buffer.from(h, 'hex'));
const ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
const LEAVES = INPUTS.map((d) => leafHash(d));

describe('hashing', () => {
  it('a leaf is SHA-256(0x00 || data), a node SHA-256(0x01 || left || right)', () => {
    expect(hex(leafHash(Buffer.alloc(0)))).toBe('6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d');
    expect(leafHash('abc')).toEqual(sha(Buffer.from([0]), Buffer.from('abc')));
    const [a, b] = [leafHash('a'), leafHash('b')];
    expect(nodeHash(a, b)).toEqual(sha(Buffer.from([1]), a, b));
    expect(nodeHash(a, b)).not.toEqual(nodeHash(b, a));
  });

  it('a text leaf is hashed as its UTF-8 bytes, the same as those bytes given', () => {
    expect(leafHash('é ✓')).toEqual(leafHash(Buffer.from('c3a920e29c93', 'hex')));
    expect(leafHash('')).toEqual(leafHash(Buffer.alloc(0)));
  });

  it('the empty tree is SHA-256 of nothing, a one-leaf tree its leaf', () => {
    expect(hex(treeHash([]))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(treeHash([LEAVES[3]!])).toEqual(LEAVES[3]);
    expect(hex(treeHash(LEAVES, 2, 2))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('the roots of every prefix of the reference vectors', () => {
    for (let n = 1; n <= 8; n++) expect(hex(treeHash(LEAVES.slice(0, n)))).toBe(ROOTS[n - 1]);
  });

  it('a root over a range [from, to) is the root of that slice', () => {
    for (let from = 0; from < 8; from++) {
      for (let to = from + 1; to <= 8; to++) expect(treeHash(LEAVES, from, to)).toEqual(treeHash(LEAVES.slice(from, to)));
    }
  });
});

describe('inclusion proofs', () => {
  it('the audit paths of the reference vectors', () => {
    // PATH(0, D[8]) and PATH(5, D[8]) from the reference implementation
    expect(auditPath(LEAVES, 0).map(hex)).toEqual([
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ]);
    expect(auditPath(LEAVES, 5).map(hex)).toEqual([
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ]);
    expect(auditPath([LEAVES[0]!], 0)).toEqual([]);
    expect(auditPath([], 0)).toEqual([]);
  });

  it('a one-leaf tree proves its leaf with an empty path', () => {
    expect(verifyInclusion(LEAVES[2]!, 0, 1, [], LEAVES[2]!)).toBe(true);
    expect(verifyInclusion(LEAVES[2]!, 0, 1, [], LEAVES[3]!)).toBe(false);
  });

  it('every leaf of every size verifies; another leaf, side or root does not', () => {
    for (let size = 1; size <= 8; size++) {
      const tree = LEAVES.slice(0, size);
      const root = treeHash(tree);
      for (let i = 0; i < size; i++) {
        const path = auditPath(tree, i);
        expect(verifyInclusion(tree[i]!, i, size, path, root)).toBe(true);
        expect(verifyInclusion(tree[i]!, i, size, path, leafHash('other'))).toBe(false);
        if (path.length > 0) expect(verifyInclusion(tree[i]!, i, size, path.slice(0, -1), root)).toBe(false);
        expect(verifyInclusion(tree[i]!, i, size, [...path, root], root)).toBe(false);
      }
    }
  });

  it('refuses an index or size no tree has, even when the leaf is the root (an empty path)', () => {
    const x = LEAVES[1]!;
    expect(verifyInclusion(x, 1, 1, [], x)).toBe(false); // index = size
    expect(verifyInclusion(x, 2, 1, [], x)).toBe(false);
    expect(verifyInclusion(x, -1, 1, [], x)).toBe(false);
    expect(verifyInclusion(x, 0, 0, [], x)).toBe(false); // the empty tree has no leaf
    expect(verifyInclusion(x, 0, 2, [], x)).toBe(false); // a path too short for the size
    expect(verifyInclusion(x, 0.5, 1, [], x)).toBe(false);
    expect(verifyInclusion(x, 0, 1.5, [], x)).toBe(false);
    expect(verifyInclusion(x, Number.NaN, 1, [], x)).toBe(false);
  });

  it('refuses a genuine path given with a wrong index or size', () => {
    const root = treeHash(LEAVES);
    const path = auditPath(LEAVES, 5);
    expect(verifyInclusion(LEAVES[5]!, 5, 8, path, root)).toBe(true);
    expect(verifyInclusion(LEAVES[5]!, 4, 8, path, root)).toBe(false);
    expect(verifyInclusion(LEAVES[5]!, 13, 8, path, root)).toBe(false);
    expect(verifyInclusion(LEAVES[5]!, 5, 16, path, root)).toBe(false);
    expect(verifyInclusion(LEAVES[5]!, 5, 5, path, root)).toBe(false);
  });
});

describe('consistency proofs', () => {
  it('the proofs of the reference vectors', () => {
    // PROOF(1, D[8]), PROOF(6, D[8]), PROOF(2, D[5]) from the reference implementation
    expect(consistencyProof(LEAVES, 1).map(hex)).toEqual([
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ]);
    expect(consistencyProof(LEAVES, 6).map(hex)).toEqual([
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ]);
    expect(consistencyProof(LEAVES.slice(0, 5), 2).map(hex)).toEqual([
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ]);
  });

  it('a tree is consistent with itself through an empty proof', () => {
    expect(consistencyProof(LEAVES, 8)).toEqual([]);
    expect(consistencyProof(LEAVES.slice(0, 3), 3)).toEqual([]);
    const r = treeHash(LEAVES.slice(0, 3));
    expect(verifyConsistency(3, 3, [], r, r)).toBe(true);
    expect(verifyConsistency(3, 3, [], r, treeHash(LEAVES.slice(0, 4)))).toBe(false);
    expect(verifyConsistency(3, 3, [r], r, r)).toBe(false);
  });

  it('every tree extends the empty one, through an empty proof only', () => {
    const r = treeHash(LEAVES);
    expect(verifyConsistency(0, 8, [], treeHash([]), r)).toBe(true);
    expect(verifyConsistency(0, 0, [], treeHash([]), treeHash([]))).toBe(true);
    expect(verifyConsistency(0, 8, [r], treeHash([]), r)).toBe(false);
  });

  it('every prefix verifies; another old or new root does not', () => {
    for (let n = 1; n <= 8; n++) {
      const newRoot = treeHash(LEAVES.slice(0, n));
      for (let m = 1; m < n; m++) {
        const oldRoot = treeHash(LEAVES.slice(0, m));
        const proof = consistencyProof(LEAVES.slice(0, n), m);
        expect(verifyConsistency(m, n, proof, oldRoot, newRoot)).toBe(true);
        expect(verifyConsistency(m, n, proof, leafHash('other'), newRoot)).toBe(false);
        expect(verifyConsistency(m, n, proof, oldRoot, leafHash('other'))).toBe(false);
      }
    }
  });

  it('refuses sizes no pair of trees has, even with an empty proof and equal roots', () => {
    const r = treeHash(LEAVES.slice(0, 2));
    expect(verifyConsistency(-1, -1, [], r, r)).toBe(false);
    expect(verifyConsistency(0, -1, [], r, r)).toBe(false);
    expect(verifyConsistency(-1, 2, [], r, r)).toBe(false);
    expect(verifyConsistency(1.5, 1.5, [], r, r)).toBe(false);
    expect(verifyConsistency(0, 1.5, [], r, r)).toBe(false);
    expect(verifyConsistency(2.5, 3, [], r, r)).toBe(false);
    expect(verifyConsistency(3, 2, [], r, r)).toBe(false);
    // a genuine proof given for the sizes the other way round
    const proof = consistencyProof(LEAVES.slice(0, 5), 4);
    expect(verifyConsistency(4, 5, proof, treeHash(LEAVES.slice(0, 4)), treeHash(LEAVES.slice(0, 5)))).toBe(true);
    expect(verifyConsistency(5, 4, proof, treeHash(LEAVES.slice(0, 4)), treeHash(LEAVES.slice(0, 5)))).toBe(false);
  });
});
