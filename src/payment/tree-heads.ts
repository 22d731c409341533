import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { Json, Store } from '../store/port.js';
import { leafHash, verifyConsistency, verifyInclusion } from './merkle.js';
import type { ChainClient } from './peers.js';
import { codec, F } from '../store/codec.js';
import type { KnownHead } from './chain-keys.js';
import { sthShapeProblem, treeHeads, verifyTreeHead, type SignedTreeHead } from './sth.js';

/**
 * The hub's view of the chain's log. It keeps (in the Store) the last signed tree head it verified and
 * accepts a newer one only when (1) the chain's Ed25519 signature verifies with CHAIN_PUBLIC_KEY,
 * (2) it is not older (size and timestamp never go back; the same size has the same root), and (3) the
 * chain's consistency proof (RFC 9162 2.1.4) shows the last verified tree is a prefix of it. A head
 * that fails is refused (400 forged, 409 out of order or inconsistent), nothing is stored, and an alarm
 * is kept (GET /api/token/ops/chain/alarms) and logged.
 */

export const TK = {
  verified: 'pay:sth:verified',
  alarms: 'pay:sth:alarms',
  /** The known-good head an operator reset to (`cli.js chain-reset`): later heads must extend it. */
  anchor: 'pay:sth:anchor',
};

const knownHeads = codec<KnownHead>('known tree head', { fields: { tree_size: F.int, root: F.str } });

/**
 * After a forged or rewritten head was accepted, the hub refuses the honest log (it does not extend
 * the kept head). The operator's recovery: the kept head is dropped (kept in the alarms as
 * `tree_head_reset`, with the dropped head) and `known` becomes the anchor every later head must
 * extend (signature, then consistency from it), instead of trusting the next head on first use.
 */
export async function resetTreeHead(store: Store, now: number, known: KnownHead, by: string, logger?: Logger): Promise<{ dropped: SignedTreeHead | null; anchor: KnownHead }> {
  const dropped = await store.update([TK.verified, TK.anchor], ([cur]) => ({
    writes: [
      { op: 'del' as const, key: TK.verified },
      { op: 'set' as const, key: TK.anchor, value: knownHeads.encode(known) },
      { op: 'push' as const, key: TK.alarms, value: { code: 'tree_head_reset', message: `an operator reset the verified head to the known head of ${known.tree_size} leaves`, source: `operator:${by}`, head: (cur ?? null) as Json, anchor: known as unknown as Json, ts: now }, cap: 1000 },
    ],
    result: treeHeads.decode(cur) ?? null,
  }));
  logger?.warn({ dropped, anchor: known, by }, 'chain tree head reset by an operator');
  return { dropped, anchor: known };
}

export interface HeadCheck {
  sth: SignedTreeHead;
  /** The head it was checked against (null: the first one seen). */
  previous: SignedTreeHead | null;
  /** The consistency proof from `previous` to `sth` (hex hashes); empty when the sizes are equal. */
  consistency: string[];
}

const hex = (s: string) => Buffer.from(s, 'hex');

export class TreeHeads {
  private watchTimer?: NodeJS.Timeout;
  /** Called for each refused head (the relay counts them in a metric). */
  onAlarm?: (code: string, source: string) => void;

  constructor(
    private readonly store: Store,
    private readonly chain: ChainClient,
    private readonly key: KeyObject,
    private readonly clock: Clock,
    private readonly logger?: Logger,
    /** CHAIN_PINNED_HEAD: every head must extend it (no trust on first use). */
    private readonly pinned?: KnownHead,
  ) {}

  /**
   * Pulls and checks the chain's head every `intervalMs` with no request needed: a forged head, one
   * out of order or a rewritten log raises its alarm (kept, logged at error, counted) within
   * intervalMs + the chain's time-outs.
   */
  watch(intervalMs: number): void {
    this.watchTimer = setInterval(() => {
      this.refresh('watch').catch((err: unknown) => {
        // refusals were alarmed in accept(); a chain that does not answer is only logged
        if (!(err instanceof AppError) || err.code === 'chain_unavailable') this.logger?.warn({ err }, 'chain tree head watch: the chain did not answer');
      });
    }, intervalMs);
    this.watchTimer.unref();
  }

  stopWatch(): void {
    if (this.watchTimer) clearInterval(this.watchTimer);
  }

  async reset(known: KnownHead | undefined, by: string) {
    const k = known ?? this.pinned;
    if (!k) throw new AppError('invalid', 'known_head_required', 'a reset needs the known-good head (tree_size and root), or CHAIN_PINNED_HEAD');
    return resetTreeHead(this.store, this.clock.now(), k, by, this.logger);
  }

  async lastVerified(): Promise<SignedTreeHead | null> {
    return treeHeads.decode(await this.store.get(TK.verified)) ?? null;
  }

  /** Pulls the chain's current head and checks it. */
  async refresh(source = 'chain'): Promise<HeadCheck> {
    const head = await this.chain.sth().catch((err: unknown) => {
      throw new AppError('unavailable', 'chain_unavailable', `the chain did not answer: ${(err as Error).message}`);
    });
    return this.accept(head as unknown, source);
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
      // the known-good heads (configured pin, operator's anchor) the kept head has not yet passed
      const anchor = knownHeads.decode(await this.store.get(TK.anchor));
      for (const known of [this.pinned, anchor]) {
        if (known && (!previous || previous.tree_size < known.tree_size)) await this.checkKnown(known, sth, source);
      }
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

  /** `sth` must be the known head or extend it (a consistency proof from it). */
  private async checkKnown(known: KnownHead, sth: SignedTreeHead, source: string): Promise<void> {
    if (sth.tree_size < known.tree_size) {
      throw await this.alarm('conflict', 'tree_head_out_of_order', `a head of size ${sth.tree_size} is older than the known-good head of ${known.tree_size} leaves`, source, sth);
    }
    if (sth.tree_size === known.tree_size) {
      if (sth.root !== known.root) throw await this.alarm('conflict', 'tree_head_inconsistent', `the head of ${sth.tree_size} leaves is not the known-good one: the log was rewritten`, source, sth);
      return;
    }
    const proof = await this.chain.consistency(known.tree_size, sth.tree_size).catch((err: unknown) => {
      throw new AppError('unavailable', 'chain_unavailable', `the chain gave no consistency proof: ${(err as Error).message}`);
    });
    const path = Array.isArray(proof.consistency) ? proof.consistency.filter((x): x is string => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x)) : [];
    if (path.length !== (proof.consistency?.length ?? -1) || !verifyConsistency(known.tree_size, sth.tree_size, path.map(hex), hex(known.root), hex(sth.root))) {
      throw await this.alarm('conflict', 'tree_head_inconsistent', `the log of ${sth.tree_size} leaves does not extend the known-good head of ${known.tree_size}: the log was rewritten`, source, sth);
    }
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
    // the watch meets the same bad head at every tick: it is kept once (the log and the metric count each)
    const [last] = source === 'watch' ? await this.store.range(TK.alarms, -1, -1).catch(() => []) : [];
    const l = last as { code?: string; source?: string; head?: { tree_size?: unknown; root?: unknown } | null } | undefined;
    const h = head as { tree_size?: unknown; root?: unknown } | null | undefined;
    const repeat = !!l && l.code === code && l.source === source && l.head?.tree_size === h?.tree_size && l.head?.root === h?.root;
    if (!repeat) await this.store.push(TK.alarms, entry, 1000).catch(() => undefined);
    this.logger?.error({ alarm: entry }, 'chain tree head refused');
    this.onAlarm?.(code, source);
    return new AppError(kind, code, message, { source });
  }
}
