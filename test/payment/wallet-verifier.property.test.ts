import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { auditPath, consistencyProof, leafHash, treeHash, verifyConsistency, verifyInclusion } from '../../src/payment/merkle.js';
import { rawPublicKey, signTreeHead } from '../../src/payment/sth.js';
import * as page from '../../web/wallet/merkle.js';

/**
 * The /wallet page's verifier (web/wallet/merkle.ts, WebCrypto) against the hub's (src/payment/merkle.ts,
 * node:crypto): the same answer for every proof, genuine or bent, and the chain's Ed25519 signature
 * checked as the hub signs it.
 */

const leavesArb = fc.array(fc.uint8Array({ minLength: 0, maxLength: 8 }), { minLength: 1, maxLength: 40 }).map((xs) => xs.map((x) => leafHash(Buffer.from(x))));
const hex = (b: Buffer) => b.toString('hex');
/** A proof bent or left alone: a hash flipped, one dropped, one added, or none. */
const bend = (path: Buffer[], how: number, at: number): Buffer[] => {
  const p: Buffer[] = path.map((x) => Buffer.from(x));
  if (how === 1 && p.length) p[at % p.length]![0]! ^= 1;
  if (how === 2 && p.length) p.splice(at % p.length, 1);
  if (how === 3) p.splice(at % (p.length + 1), 0, leafHash(`x${at}`));
  return p;
};

describe('the wallet page verifies proofs as the hub does', () => {
  it('inclusion: genuine proofs verify, bent ones and wrong indexes agree with the hub', async () => {
    await fc.assert(
      fc.asyncProperty(leavesArb, fc.nat(), fc.integer({ min: 0, max: 3 }), fc.nat(), fc.integer({ min: -1, max: 1 }), async (leaves, r, how, at, shift) => {
        const n = leaves.length;
        const i = r % n;
        const path = bend(auditPath(leaves, i), how, at);
        const root = treeHash(leaves);
        const idx = i + (how === 0 ? 0 : shift);
        const hub = verifyInclusion(leaves[i]!, idx, n, path, root);
        const web = await page.verifyInclusion(new Uint8Array(leaves[i]!), idx, n, path.map(hex), hex(root));
        expect(web).toBe(hub);
        if (how === 0 && shift === 0) expect(web).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('consistency: every prefix\'s proof verifies; bent proofs, rewritten leaves and wrong sizes agree with the hub', async () => {
    await fc.assert(
      fc.asyncProperty(leavesArb, fc.nat(), fc.integer({ min: 0, max: 4 }), fc.nat(), async (leaves, r, how, at) => {
        const n = leaves.length;
        const m = 1 + (r % n);
        let proof = bend(consistencyProof(leaves, m), how === 4 ? 0 : how, at);
        let firstRoot = treeHash(leaves.slice(0, m));
        if (how === 4) firstRoot = treeHash([leafHash('rewritten'), ...leaves.slice(1, m)]);
        const secondRoot = treeHash(leaves);
        if (m === n) proof = how === 0 ? [] : proof;
        const hub = verifyConsistency(m, n, proof, firstRoot, secondRoot);
        const web = await page.verifyConsistency(m, n, proof.map(hex), hex(firstRoot), hex(secondRoot));
        expect(web).toBe(hub);
        if (how === 0) expect(web).toBe(true);
        if (how === 4) expect(web).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('a signed tree head verifies with the chain\'s key; a changed field, another key or a bad signature does not', async () => {
    const key = generateKeyPairSync('ed25519').privateKey;
    const other = generateKeyPairSync('ed25519').privateKey;
    const pub = rawPublicKey(key);
    const sth = signTreeHead(key, { tree_size: 13, timestamp: Date.now(), root: hex(treeHash([leafHash('a')])) });
    expect(await page.verifyHeadSignature(pub, sth)).toBe(true);
    expect(await page.verifyHeadSignature(pub, { ...sth, tree_size: 14 })).toBe(false);
    expect(await page.verifyHeadSignature(pub, { ...sth, timestamp: sth.timestamp + 1 })).toBe(false);
    expect(await page.verifyHeadSignature(pub, { ...sth, root: '0'.repeat(64) })).toBe(false);
    expect(await page.verifyHeadSignature(rawPublicKey(other), sth)).toBe(false);
    expect(await page.verifyHeadSignature(pub, { ...sth, signature: 'not base64!' })).toBe(false);
    expect(await page.verifyHeadSignature(pub, { ...sth, root: 'zz' })).toBe(false);
  });
});
