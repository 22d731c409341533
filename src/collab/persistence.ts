import * as Y from 'yjs';
import type { Clock } from '../clock.js';
import { F } from '../store/codec.js';
import type { Json, Store, Write } from '../store/port.js';

/**
 * Where a live document lives in the Store, under the document's aggregate (docs/partitions.md):
 *   `md:doc:<slug>:ydoc`  the compacted Yjs state (base64), with `md:doc:<slug>:yupto` the last
 *                     update-log sequence number merged into it;
 *   `md:doc:<slug>:ylog`  the update log: every update a peer sends is appended here, numbered by
 *                     `md:doc:<slug>:yseq`, right after it is applied and fanned out (one group
 *                     commit), so an edit survives kill -9 once its append committed even when no
 *                     client is left to resend it (docs/collab.md, "What a crash can lose");
 *   the debounced save compacts the log into the state.
 * The state and log of the global layout (`md:ydoc:<slug>`, `md:yupto:<slug>`, `md:ylog:<slug>`,
 * `md:yseq:<slug>`) are still loaded, merged with the new (Yjs updates merge idempotently), and
 * dropped once a compaction has written the merged state under the document.
 */
export const YKEY = (slug: string) => `md:doc:${slug}:ydoc`;
const UPTO = (slug: string) => `md:doc:${slug}:yupto`;
const SEQ = (slug: string) => `md:doc:${slug}:yseq`;
const LOG = (slug: string) => `md:doc:${slug}:ylog`;
const OLD = {
  ydoc: (slug: string) => `md:ydoc:${slug}`,
  upto: (slug: string) => `md:yupto:${slug}`,
  seq: (slug: string) => `md:yseq:${slug}`,
  log: (slug: string) => `md:ylog:${slug}`,
};

/** Updates the log holds; a room saves long before (see UNSAVED_FLUSH). */
export const LOG_CAP = 20_000;
/** Unsaved updates after which a room saves at once instead of waiting for the debounce. */
export const UNSAVED_FLUSH = 2_000;

export const b64 = (u: Uint8Array) => Buffer.from(u).toString('base64');
export const unb64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));

/** One logged update: its sequence number and the update (base64); anything else in the log is skipped. */
type LogEntry = { s: number; u: string };
const isEntry = (v: Json): v is LogEntry => F.obj(v) && typeof v.s === 'number' && typeof v.u === 'string';

export class DocStore {
  constructor(private readonly store: Store) {}

  /** The stored state with every logged update not yet compacted; undefined for a new document. */
  async load(slug: string): Promise<Uint8Array | undefined> {
    const parts = [...(await this.stored(OLD.ydoc(slug), OLD.upto(slug), OLD.log(slug))), ...(await this.stored(YKEY(slug), UPTO(slug), LOG(slug)))];
    if (parts.length === 0) return undefined;
    return parts.length === 1 ? parts[0] : Y.mergeUpdates(parts);
  }

  /** The state at `ydoc` and the updates of `log` after its mark `upto`. */
  private async stored(ydoc: string, upto: string, log: string): Promise<Uint8Array[]> {
    const [[snap, mark], entries] = await Promise.all([this.store.getMany([ydoc, upto]), this.store.range(log)]);
    const from = typeof mark === 'number' ? mark : 0;
    const parts = typeof snap === 'string' ? [unb64(snap)] : [];
    for (const e of entries) if (isEntry(e) && e.s > from) parts.push(unb64(e.u));
    return parts;
  }

  /** Appends one update to the log (durable when this resolves). */
  append(slug: string, update: Uint8Array): Promise<void> {
    return this.appendAll(slug, [update]);
  }

  /** Appends updates to the log in one atomic write, in order (durable when this resolves). */
  async appendAll(slug: string, updates: readonly Uint8Array[]): Promise<void> {
    if (updates.length === 0) return;
    const us = updates.map(b64);
    await this.store.update([SEQ(slug)], ([cur]) => {
      const first = (typeof cur === 'number' ? cur : 0) + 1;
      const writes: Write[] = [{ op: 'set', key: SEQ(slug), value: first + us.length - 1 }];
      us.forEach((u, i) => writes.push({ op: 'push', key: LOG(slug), value: { s: first + i, u }, cap: LOG_CAP }));
      return { writes, result: null };
    });
  }

  /**
   * Merges `state` and the logged updates into the stored state and moves the compaction mark past
   * them. Updates logged after the log was read keep higher numbers and stay in the log.
   */
  async compact(slug: string, state: Uint8Array): Promise<void> {
    // what the global layout held is in `state` (the room loaded it) unless it was written since the load: merged in too
    const old = await this.stored(OLD.ydoc(slug), OLD.upto(slug), OLD.log(slug));
    const log = (await this.store.range(LOG(slug))).flatMap((e) => (isEntry(e) ? [e] : []));
    await this.store.update([YKEY(slug), UPTO(slug)], ([snap, upto]) => {
      const from = typeof upto === 'number' ? upto : 0;
      const parts = [...old, ...(typeof snap === 'string' ? [unb64(snap)] : []), state];
      let last = from;
      for (const e of log) {
        if (e.s <= from) continue;
        parts.push(unb64(e.u));
        last = Math.max(last, e.s);
      }
      const writes: Write[] = [
        { op: 'set', key: YKEY(slug), value: b64(Y.mergeUpdates(parts)) },
        { op: 'set', key: UPTO(slug), value: last },
      ];
      return { writes, result: null };
    });
    if (old.length > 0) for (const key of Object.values(OLD)) await this.store.del(key(slug));
  }

  /**
   * Applies `fix(state)` to the stored state of a document no room holds here (an HTTP save):
   * returns the update written, if any.
   */
  async amend(slug: string, fix: (state: Uint8Array | undefined) => Uint8Array | undefined): Promise<Uint8Array | undefined> {
    const state = await this.load(slug);
    let out: Uint8Array | undefined;
    await this.store.update([YKEY(slug)], ([snap]) => {
      const base = typeof snap === 'string' ? unb64(snap) : undefined;
      const merged = state && base ? Y.mergeUpdates([base, state]) : (state ?? base);
      out = fix(merged);
      if (!out) return { writes: [], result: null };
      return { writes: [{ op: 'set', key: YKEY(slug), value: b64(merged ? Y.mergeUpdates([merged, out]) : out) }], result: null };
    });
    return out;
  }
}

/**
 * Debounce with a maximum wait, measured on the injected Clock: `touch()` (re)arms the timer to fire
 * `debounceMs` after the last touch, but never later than `maxDelayMs` after the first untouched one.
 */
export class Debounce {
  private dirtySince?: number;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly clock: Clock,
    private readonly debounceMs: number,
    private readonly maxDelayMs: number,
    private readonly fire: () => void,
  ) {}

  get pending(): boolean {
    return this.dirtySince !== undefined;
  }

  touch(): void {
    const now = this.clock.now();
    this.dirtySince ??= now;
    clearTimeout(this.timer);
    const wait = Math.max(0, Math.min(this.debounceMs, this.dirtySince + this.maxDelayMs - now));
    this.timer = setTimeout(() => this.fire(), wait);
    this.timer.unref?.();
  }

  /** Clears the pending state; returns whether there was one (the caller then saves). */
  take(): boolean {
    clearTimeout(this.timer);
    this.timer = undefined;
    const was = this.dirtySince !== undefined;
    this.dirtySince = undefined;
    return was;
  }
}
