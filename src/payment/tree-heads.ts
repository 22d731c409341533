import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { Json, Store } from '../store/port.js';
import { leafHash, verifyConsistency, verifyInclusion } from './merkle.js';
import type { ChainClient } from './peers.js';
import { sthShapeProblem, treeHeads, verifyTreeHead, type SignedTreeHead } from './sth.js';

/**
 * The hub's view of the chain's log. It keeps (in the Store) the last signed tree head it verified and
 * accepts a newer one only when (1) the chain's Ed25519 signature verifies with CHAIN_PUBLIC_KEY,
 * (2) it is not older (size and timestamp never go back; the same size has the same root), and (3) the
 * chain's consistency proof (RFC 9162 2.1.4) shows the last verified tree is a prefix of it. A head
 * that fails is refused (400 forged, 409 out of order or inconsistent), nothing is stored, and an alarm
 * is kept (GET /api/token/ops/chain/alarms) and logged.
 */

export const TK = { verified: 'pay:sth:verified', alarms: 'pay:sth:alarms' };

export interface HeadCheck {
  sth: SignedTreeHead;
  /** The head it was checked against (null: the first one seen). */
  previous: SignedTreeHead | null;
  /** The consistency proof from `previous` to `sth` (hex hashes); empty when the sizes are equal. */
  consistency: string[];
}

const hex = (s: string) => Buffer.from(s, 'hex');

export class TreeHeads {
  constructor(
    private readonly store: Store,
    private readonly chain: ChainClient,
    private readonly key: KeyObject,
    private readonly clock: Clock,
    private readonly logger?: Logger,
  ) {}

  async lastVerified(): Promise<SignedTreeHead | null> {
    return treeHeads.decode(await this.store.get(TK.verified)) ?? null;
  }

  /** Pulls the chain's current head and checks it. */
  async refresh(): Promise<HeadCheck> {
    const head = await this.chain.sth().catch((err: unknown) => {
      throw new AppError('unavailable', 'chain_unavailable', `the chain did not answer: ${(err as Error).message}`);
    });
    return this.accept(head as unknown, 'chain');
  }

  /** Checks a head (pulled from the chain or submitted) against the last verified one and keeps it. */
  async accept(head: unknown, source: string): Promise<HeadCheck> {
    const shape = sthShapeProblem(head);
    if (shape) throw await this.alarm('invalid', 'invalid_tree_head', shape, source, head);
    const h = head as SignedTreeHead;
    const sth: SignedTreeHead = { tree_size: h.tree_size, timestamp: h.timestamp, root: h.root, signature: h.signature };
    if (!verifyTreeHead(this.key, sth)) throw await this.alarm('invalid', 'tree_head_signature_invalid', 'the tree head is not signed by the chain\'s key', source, sth);
    for (let attempt = 0; attempt < 3; attempt++) {
      const previous = await this.lastVerified();
      const consistency = previous ? await this.check(previous, sth, source) : [];
      const stored = await this.store.update([TK.verified], ([cur]) => {
        const c = treeHeads.decode(cur);
        if ((c?.signature ?? null) !== (previous?.signature ?? null)) return { writes: [], result: false };
        const newer = !c || sth.tree_size > c.tree_size || sth.timestamp > c.timestamp;
        return { writes: newer ? [{ op: 'set' as const, key: TK.verified, value: treeHeads.encode(sth) }] : [], result: true };
      });
      if (stored) return { sth, previous, consistency };
    }
    throw new AppError('conflict', 'tree_head_busy', 'the verified tree head kept changing; try again');
  }

  /** The order and consistency checks of `sth` against `prev`; the proof on success. */
  private async check(prev: SignedTreeHead, sth: SignedTreeHead, source: string): Promise<string[]> {
    if (sth.tree_size < prev.tree_size || sth.timestamp < prev.timestamp) {
      throw await this.alarm('conflict', 'tree_head_out_of_order', `a head of size ${sth.tree_size} at ${sth.timestamp} is older than the verified one (size ${prev.tree_size} at ${prev.timestamp})`, source, sth);
    }
    if (sth.tree_size === prev.tree_size) {
      if (sth.root !== prev.root) throw await this.alarm('conflict', 'tree_head_inconsistent', `two roots for a tree of ${sth.tree_size} leaves: the log was rewritten`, source, sth);
      return [];
    }
    const proof = await this.chain.consistency(prev.tree_size, sth.tree_size).catch((err: unknown) => {
      throw new AppError('unavailable', 'chain_unavailable', `the chain gave no consistency proof: ${(err as Error).message}`);
    });
    const path = Array.isArray(proof.consistency) ? proof.consistency.filter((x): x is string => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x)) : [];
    if (path.length !== (proof.consistency?.length ?? -1) || !verifyConsistency(prev.tree_size, sth.tree_size, path.map(hex), hex(prev.root), hex(sth.root))) {
      throw await this.alarm('conflict', 'tree_head_inconsistent', `the log of ${sth.tree_size} leaves does not extend the verified one of ${prev.tree_size}: the log was rewritten`, source, sth);
    }
    return path;
  }

  /** Checks a chain inclusion proof against a verified head. */
  inclusion(sth: SignedTreeHead, proof: { leaf_index: number; tree_size: number; leaf_hash: string; audit_path: string[] }, leafData?: string): boolean {
    if (proof.tree_size !== sth.tree_size) return false;
    if (leafData !== undefined && leafHash(leafData).toString('hex') !== proof.leaf_hash) return false;
    return verifyInclusion(hex(proof.leaf_hash), proof.leaf_index, proof.tree_size, proof.audit_path.map(hex), hex(sth.root));
  }

  async alarms(): Promise<Json[]> {
    return this.store.range(TK.alarms, -100, -1);
  }

  private async alarm(kind: 'invalid' | 'conflict', code: string, message: string, source: string, head: unknown): Promise<AppError> {
    const entry = { code, message, source, head: (head ?? null) as Json, ts: this.clock.now() };
    await this.store.push(TK.alarms, entry, 1000).catch(() => undefined);
    this.logger?.error({ alarm: entry }, 'chain tree head refused');
    return new AppError(kind, code, message, { source });
  }
}
