import { AppError } from '../errors.js';
import type { Json, Store, UpdatePlan, Write } from '../store/port.js';

/**
 * Batched ledger updates (docs/payment.md "Batches"), TigerBeetle's group commit on the Store.
 *
 * Every ledger step (a transfer, a linked group of them with its receipt, a payout, a resolution:
 * whatever one `ledgerUpdate` call used to write in its own `store.update`) is a LedgerOp. Ops asked
 * for while a commit is in flight wait in a queue; the queue closes into one batch, applied in ONE
 * atomic `store.update` over the union of the ops' keys:
 *
 * - the ops run one after the other in the order they were asked for, each over the values the
 *   batch read with the writes of the ops before it laid over them (so the second op of a batch
 *   reads the receipt chain head and the accounts the first one wrote: one read of the head, the
 *   batch's receipts appended in order);
 * - an op that throws (insufficient balance, a duplicate id with other fields, any refusal) fails
 *   alone: none of its writes are kept, the ops after it run as if it had never been asked; an op's
 *   own transfers (a linked group) stand or fall together, as TigerBeetle's `linked` flag;
 * - each caller gets its own result or its own error once the batch is committed; if the commit
 *   itself fails (the store out of reach), every op of the batch gets that error and nothing of the
 *   batch is written.
 *
 * So a batch is exactly the ops applied one by one in the recorded order, in one commit: idempotency
 * keys, payout records, the 2x pool rule and the circuit breaker read what the ops before them in
 * the batch wrote, as they would have read it from the store.
 *
 * When a batch closes: at once when no commit is in flight (a lone op never waits for company: it
 * is sent on the next turn of the event loop, with whatever arrived in the same turn); while a
 * commit is in flight, when `maxBatch` ops are waiting, when a commit finishes, or `delayMs` after
 * the first op waited (at most `maxInflight` commits at once; the store orders them).
 */

/** The values an op sees: its own keys only, as the ops before it in the batch left them. */
export interface ValueView {
  has(key: string): boolean;
  get(key: string): Json | undefined;
}

/** One ledger step: the keys it reads and its body (ledgerUpdate builds it around a LedgerTx). */
export interface LedgerOp<R> {
  keys: string[];
  apply: (view: ValueView) => UpdatePlan<R>;
}

export interface BatchOptions {
  /** Ops in one batch at most (default 512). */
  maxBatch?: number;
  /** While a commit is in flight, the longest an op waits before its batch closes, ms (default 2). */
  delayMs?: number;
  /** Batches committing at once at most (default 2). */
  maxInflight?: number;
  /** Steps waiting at most; one more is refused with 503 `ledger_busy` (default 50,000). */
  maxQueue?: number;
}

export const BATCH_DEFAULTS = { maxBatch: 512, delayMs: 2, maxInflight: 2, maxQueue: 50_000 } as const;

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** What one batch did: its ops in the order applied, each with its outcome (for tests and traces). */
export interface BatchTrace {
  ops: LedgerOp<unknown>[];
  outcomes: Outcome[];
}

/** Light checks of an op's writes, so a malformed write fails its own op and not the batch. */
function checkWrites(writes: Write[]): void {
  for (const w of writes) {
    if (!w || typeof w !== 'object' || typeof w.key !== 'string') throw new TypeError('a ledger write needs a string key');
    if (w.op === 'index' && (typeof w.member !== 'string' || (typeof w.score === 'number' && !Number.isFinite(w.score)))) throw new RangeError('bad index write');
    if (w.op === 'unindex' && typeof w.member !== 'string') throw new RangeError('bad unindex write');
    if (w.op === 'push' && !(Number.isSafeInteger(w.cap) && w.cap >= 1)) throw new RangeError('bad push cap');
    if (w.op === 'incr' && !Number.isSafeInteger(w.by)) throw new RangeError('bad incr');
    if (w.op === 'set' && w.value === undefined) throw new TypeError('a set needs a value');
  }
}

/**
 * Applies `ops` in order over the values read for `keys` (the union of theirs): the Store update
 * body of a batch. Pure: the Redis adapter may run it again after a conflict.
 */
export function applyOps(keys: string[], current: (Json | undefined)[], ops: LedgerOp<unknown>[]): { writes: Write[]; result: Outcome[] } {
  const base = new Map<string, Json | undefined>();
  keys.forEach((k, i) => base.set(k, current[i]));
  // the values as the ops before the current one left them
  const over = new Map<string, Json | undefined>();
  const read = (k: string) => (over.has(k) ? over.get(k) : base.get(k));
  const all: Write[] = [];
  const outcomes: Outcome[] = [];
  for (const op of ops) {
    const mine = new Set(op.keys);
    const view: ValueView = { has: (k) => mine.has(k), get: read };
    try {
      const r = op.apply(view);
      const writes = r.writes;
      checkWrites(writes);
      for (const w of writes) {
        if (w.op === 'set') over.set(w.key, w.value);
        else if (w.op === 'del') over.set(w.key, undefined);
        else if (w.op === 'incr' && (base.has(w.key) || over.has(w.key))) {
          const cur = read(w.key);
          over.set(w.key, (typeof cur === 'number' ? cur : Number(cur ?? 0)) + w.by);
        }
        all.push(w);
      }
      outcomes.push({ ok: true, value: r.result });
    } catch (error) {
      outcomes.push({ ok: false, error });
    }
  }
  return { writes: ops.length > 1 ? collapse(all) : all, result: outcomes };
}

/**
 * The batch's writes with every `set` of a key but its last dropped (the accounts and the chain
 * head are written once per batch, not once per op), unless the key is also deleted or counted on
 * in the batch (then every write is kept, in order).
 */
function collapse(writes: Write[]): Write[] {
  const last = new Map<string, number>();
  const mixed = new Set<string>();
  writes.forEach((w, i) => {
    if (w.op === 'set') last.set(w.key, i);
    else if (w.op === 'del' || w.op === 'incr') mixed.add(w.key);
  });
  return writes.filter((w, i) => w.op !== 'set' || mixed.has(w.key) || last.get(w.key) === i);
}

interface Waiting {
  op: LedgerOp<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class LedgerBatcher {
  private queue: Waiting[] = [];
  private inflight = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private readonly opts: Required<BatchOptions>;
  /** Called after each batch committed (tests record the order applied). */
  onBatch: ((trace: BatchTrace) => void) | undefined;
  /** Batches committed and ops in them, since start. */
  readonly stats = { batches: 0, ops: 0 };

  constructor(
    private readonly store: Store,
    opts: BatchOptions = {},
  ) {
    this.opts = { ...BATCH_DEFAULTS, ...opts };
  }

  run<R>(op: LedgerOp<R>): Promise<R> {
    if (this.queue.length >= this.opts.maxQueue) {
      return Promise.reject(new AppError('unavailable', 'ledger_busy', `${this.queue.length} ledger steps are waiting; try again shortly`));
    }
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ op: op as LedgerOp<unknown>, resolve: resolve as (v: unknown) => void, reject });
      this.schedule();
    });
  }

  /** Several ops at once, each with its own outcome (the operators' batch API). */
  runAll<R>(ops: LedgerOp<R>[]): Promise<PromiseSettledResult<R>[]> {
    return Promise.allSettled(ops.map((op) => this.run(op)));
  }

  private schedule(): void {
    // every commit slot taken: the queue closes into a batch when one of them finishes
    if (this.inflight >= this.opts.maxInflight) return;
    if (this.inflight === 0 || this.queue.length >= this.opts.maxBatch) {
      // idle (or a full batch): send on the next turn, gathering what arrives in this one
      this.immediate ??= setImmediate(() => {
        this.immediate = undefined;
        this.flush();
      });
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, this.opts.delayMs);
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.queue.length > 0 && this.inflight < this.opts.maxInflight) {
      const batch = this.queue.splice(0, this.opts.maxBatch);
      void this.commit(batch);
    }
  }

  private async commit(batch: Waiting[]): Promise<void> {
    this.inflight++;
    const ops = batch.map((w) => w.op);
    try {
      const keys = [...new Set(ops.flatMap((o) => o.keys))];
      const outcomes = await this.store.update(keys, (current) => applyOps(keys, current, ops));
      this.stats.batches++;
      this.stats.ops += ops.length;
      this.onBatch?.({ ops, outcomes });
      outcomes.forEach((o, i) => (o.ok ? batch[i]!.resolve(o.value) : batch[i]!.reject(o.error)));
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.inflight--;
      if (this.queue.length > 0) this.flush();
    }
  }
}

const batchers = new WeakMap<Store, LedgerBatcher>();

/** The batcher of a store (one per store instance: every ledger update of the process goes through it). */
export function ledgerBatcher(store: Store, opts?: BatchOptions): LedgerBatcher {
  let b = batchers.get(store);
  if (!b) batchers.set(store, (b = new LedgerBatcher(store, opts)));
  return b;
}

/** An error as it crosses processes (AppError kept: kind, code, message, details). */
export function errorJson(err: unknown): Json {
  if (err instanceof AppError) return { app: true, kind: err.kind, code: err.code, message: err.message, details: (err.details ?? null) as Json };
  return { app: false, message: err instanceof Error ? err.message : String(err) };
}

export function errorFromJson(j: Json): Error {
  const o = (j ?? {}) as { app?: boolean; kind?: string; code?: string; message?: string; details?: Json };
  if (o.app) return new AppError(o.kind as AppError['kind'], String(o.code), String(o.message), o.details ?? undefined);
  return new Error(String(o.message));
}
