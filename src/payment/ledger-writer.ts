import { randomUUID } from 'node:crypto';
import { AppError } from '../errors.js';
import type { Json, Store, Unsubscribe } from '../store/port.js';
import { BATCH_DEFAULTS, errorFromJson, errorJson, ledgerBatcher, type LedgerBatcher, type LedgerOp } from './ledger-batch.js';

/**
 * One writer of the ledger across hub processes (docs/payment.md "One writer").
 *
 * Ledger steps that can cross processes are commands: a name and JSON arguments, each name built
 * into a LedgerOp by the same code in every process (`register`). The process holding the writer
 * lease (`pay:ledger:writer`, renewed every `renewMs`, held `leaseMs`, as the payout run and the
 * reconciliation pull hold theirs) applies them in its batches; every other process hands its
 * commands to the writer by pub/sub (one message per event-loop turn with every command of that
 * turn, to the writer's own channel) and gets the results back the same way (one message per batch
 * and asking process). On LMDB (one process) or with no writer started, `exec` is the local batcher.
 *
 * Exactly once: a command handed over carries an id; the writer applies it inside a batch together
 * with a record of its result (`pay:ledger:cmd:{id}`, kept `resultTtlMs`), read by the same update.
 * A command whose answer does not come within `attemptMs` is sent again when the lease has moved
 * (to whoever holds it then, or applied here when this process takes it) or a whole lease has passed
 * since it was sent, and one that was applied already answers from its record: a writer killed between its commit and its answer loses nothing and applies nothing
 * twice. A command not answered within `deadlineMs` fails with 503 `ledger_unavailable` (it may have
 * been applied; the record answers the same id later).
 *
 * Safety never rests on the lease: every batch is one atomic, optimistic `store.update`, so two
 * processes that both believe they write (a paused writer whose lease ran out) still commit
 * correctly; they only retry against each other until the older one sees it lost the lease.
 */

export const LK = {
  lease: 'pay:ledger:writer',
  result: (id: string) => `pay:ledger:cmd:${id}`,
  inbox: (token: string) => `pay:ledger:in:${token}`,
  replies: (token: string) => `pay:ledger:out:${token}`,
};

export interface WriterOptions {
  leaseMs?: number;
  renewMs?: number;
  attemptMs?: number;
  deadlineMs?: number;
  resultTtlMs?: number;
}

export const WRITER_DEFAULTS = { leaseMs: 3000, renewMs: 1000, attemptMs: 1000, deadlineMs: 10_000, resultTtlMs: 600_000 } as const;

type Build = (args: Json) => LedgerOp<Json>;

interface Asked {
  id: string;
  name: string;
  args: Json;
  resolve: (v: Json) => void;
  reject: (e: unknown) => void;
  started: number;
  timer?: NodeJS.Timeout;
  /** The writer it was last sent to, and when. */
  sentTo?: string;
  sentAt?: number;
}

interface LeaseValue {
  token: string;
  until: number;
}

const isLease = (v: Json | undefined): v is Json & LeaseValue =>
  !!v && typeof v === 'object' && !Array.isArray(v) && typeof (v as { token?: unknown }).token === 'string' && typeof (v as { until?: unknown }).until === 'number';

export class LedgerWriter {
  private readonly commands = new Map<string, Build>();
  private readonly opts: Required<WriterOptions>;
  /** This process's token: its lease value and its channels. */
  readonly token = randomUUID();
  private writer: string | undefined;
  private leaseUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The look at the lease planned for when another's runs out (takeAt). */
  private taker: NodeJS.Timeout | undefined;
  private takeUntil = 0;
  private subs: Unsubscribe[] = [];
  private started = false;
  private readonly asked = new Map<string, Asked>();
  /** Commands to hand over at the end of this turn, by writer token. */
  private outbox = new Map<string, Asked[]>();
  private sending: NodeJS.Immediate | undefined;
  /** Results to send back at the end of this turn, by reply channel. */
  private answers = new Map<string, Json[]>();
  private answering: NodeJS.Immediate | undefined;
  readonly stats = { local: 0, forwarded: 0, served: 0, resent: 0 };
  /** Told when this process takes or loses the writer lease (the hub logs it). */
  onLease: ((held: boolean) => void) | undefined;

  constructor(
    private readonly store: Store,
    opts: WriterOptions = {},
    readonly batcher: LedgerBatcher = ledgerBatcher(store),
  ) {
    this.opts = { ...WRITER_DEFAULTS, ...opts };
  }

  /** Declares a command: the same name must build the same op in every process. */
  register(name: string, build: Build): void {
    this.commands.set(name, build);
  }

  /** Whether this process applies the ledger (always, until started on a shared store). */
  get isWriter(): boolean {
    return !this.started || this.writer === this.token;
  }

  /** Starts competing for the lease on a shared store (Redis); on LMDB nothing is needed. */
  async start(): Promise<void> {
    if (this.started || this.store.kind !== 'redis') return;
    this.subs.push(await this.store.subscribe(LK.inbox(this.token), (m) => this.serve(m)));
    this.subs.push(await this.store.subscribe(LK.replies(this.token), (m) => this.answered(m)));
    this.started = true;
    await this.renew().catch(() => undefined);
    this.timer = setInterval(() => void this.renew().catch(() => undefined), this.opts.renewMs);
    this.timer.unref();
  }

  /** Stops, giving the lease up (another process takes it at its next renewal). */
  async stop(): Promise<void> {
    if (!this.started) return;
    clearInterval(this.timer);
    clearTimeout(this.taker);
    const was = this.writer === this.token;
    this.started = false;
    for (const u of this.subs.splice(0)) await u().catch(() => undefined);
    for (const a of this.asked.values()) {
      clearTimeout(a.timer);
      a.reject(new AppError('unavailable', 'ledger_unavailable', 'the hub is stopping'));
    }
    this.asked.clear();
    if (was) {
      await this.store
        .update([LK.lease], ([cur]) => ({ writes: isLease(cur) && cur.token === this.token ? [{ op: 'del', key: LK.lease }] : [], result: null }))
        .catch(() => undefined);
    }
  }

  /** Takes or renews the lease if free or ours; otherwise learns who holds it. */
  private async renew(): Promise<void> {
    const now = Date.now();
    const until = now + this.opts.leaseMs;
    const held = await this.store.update<LeaseValue>([LK.lease], ([cur]) => {
      if (isLease(cur) && cur.until > now && cur.token !== this.token) return { writes: [], result: { token: cur.token, until: cur.until } };
      return { writes: [{ op: 'set', key: LK.lease, value: { token: this.token, until }, ttlMs: this.opts.leaseMs }], result: { token: this.token, until } };
    });
    const holder = held.token;
    const was = this.writer === this.token;
    this.writer = holder;
    if (holder === this.token) this.leaseUntil = until;
    else this.takeAt(held.until);
    if (was !== (holder === this.token)) this.onLease?.(!was);
  }

  /**
   * Another process holds the lease until `until`: look again just after it runs out, not only at the
   * next renewal, so a dead writer's lease is taken within the lease (plus this timer's lateness).
   */
  private takeAt(until: number): void {
    if (!this.started || until <= this.takeUntil) return;
    this.takeUntil = until;
    clearTimeout(this.taker);
    this.taker = setTimeout(() => void this.renew().catch(() => undefined), Math.max(0, until - Date.now()) + 10);
    this.taker.unref();
  }

  /** Runs a command: here when this process writes, else by the writer; its result or its error. */
  exec(name: string, args: Json): Promise<Json> {
    const build = this.commands.get(name);
    if (!build) return Promise.reject(new Error(`ledger: no command ${name}`));
    if (this.isWriter && (!this.started || this.leaseUntil > Date.now())) {
      this.stats.local++;
      try {
        return this.batcher.run(build(args));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    if (this.asked.size >= BATCH_DEFAULTS.maxQueue) {
      return Promise.reject(new AppError('unavailable', 'ledger_busy', `${this.asked.size} ledger steps are waiting for the writer; try again shortly`));
    }
    return new Promise<Json>((resolve, reject) => {
      const a: Asked = { id: randomUUID(), name, args, resolve, reject, started: Date.now() };
      this.asked.set(a.id, a);
      this.stats.forwarded++;
      this.send(a);
    });
  }

  /** The op of a command handed over: applied at most once, its result kept under its id. */
  private once(id: string, op: LedgerOp<Json>): LedgerOp<Json> {
    const key = LK.result(id);
    return {
      keys: [...op.keys, key],
      apply: (view) => {
        const kept = view.get(key) as { value: Json } | undefined;
        if (kept && typeof kept === 'object') return { writes: [], result: kept.value };
        const plan = op.apply(view);
        plan.writes.push({ op: 'set', key, value: { value: plan.result }, ttlMs: this.opts.resultTtlMs });
        return plan;
      },
    };
  }

  private send(a: Asked): void {
    clearTimeout(a.timer);
    a.timer = setTimeout(() => void this.retry(a), this.opts.attemptMs);
    if (this.writer === this.token) {
      // this process took the lease meanwhile: apply it here, still at most once
      this.runHere(a);
      return;
    }
    const to = this.writer;
    if (!to) return; // no writer known yet: the retry looks again
    a.sentTo = to;
    a.sentAt = Date.now();
    let list = this.outbox.get(to);
    if (!list) this.outbox.set(to, (list = []));
    list.push(a);
    this.sending ??= setImmediate(() => {
      this.sending = undefined;
      const out = this.outbox;
      this.outbox = new Map();
      for (const [writer, cmds] of out) {
        const message = JSON.stringify({ reply: this.token, cmds: cmds.map((c) => ({ id: c.id, name: c.name, args: c.args })) });
        this.store.publish(LK.inbox(writer), message).catch(() => undefined); // the retry sends again
      }
    });
  }

  private runHere(a: Asked): void {
    let op: LedgerOp<Json>;
    try {
      op = this.once(a.id, this.commands.get(a.name)!(a.args));
    } catch (e) {
      this.settle(a.id, { id: a.id, ok: false, error: errorJson(e) });
      return;
    }
    this.batcher.run(op).then(
      (v) => this.settle(a.id, { id: a.id, ok: true, value: v }),
      (e) => this.settle(a.id, { id: a.id, ok: false, error: errorJson(e) }),
    );
  }

  private async retry(a: Asked): Promise<void> {
    if (!this.asked.has(a.id)) return;
    if (Date.now() - a.started >= this.opts.deadlineMs) {
      this.asked.delete(a.id);
      a.reject(new AppError('unavailable', 'ledger_unavailable', 'the ledger writer did not answer in time; the same request may be retried'));
      return;
    }
    await this.renew().catch(() => undefined);
    if (!this.asked.has(a.id)) return;
    // the same writer, still renewing its lease, is slow, not gone: wait for it (a message lost on
    // the way is sent again once a whole lease has passed)
    if (this.writer === a.sentTo && this.writer !== this.token && Date.now() - (a.sentAt ?? 0) < this.opts.leaseMs) {
      a.timer = setTimeout(() => void this.retry(a), this.opts.attemptMs);
      return;
    }
    this.stats.resent++;
    this.send(a);
  }

  /** The writer's side: applies the commands of a message in its batches, answers each. */
  private serve(message: string): void {
    let m: { reply: string; cmds: { id: string; name: string; args: Json }[] };
    try {
      m = JSON.parse(message) as typeof m;
    } catch {
      return;
    }
    if (typeof m.reply !== 'string' || !Array.isArray(m.cmds)) return;
    for (const c of m.cmds) {
      const build = this.commands.get(c.name);
      if (!build) {
        this.answer(m.reply, { id: c.id, ok: false, error: errorJson(new Error(`ledger: no command ${c.name}`)) });
        continue;
      }
      this.stats.served++;
      let op: LedgerOp<Json>;
      try {
        op = this.once(c.id, build(c.args));
      } catch (e) {
        this.answer(m.reply, { id: c.id, ok: false, error: errorJson(e) });
        continue;
      }
      this.batcher.run(op).then(
        (v) => this.answer(m.reply, { id: c.id, ok: true, value: v }),
        (e) => this.answer(m.reply, { id: c.id, ok: false, error: errorJson(e) }),
      );
    }
  }

  private answer(to: string, result: Json): void {
    if (to === this.token) {
      this.settle((result as { id: string }).id, result);
      return;
    }
    let list = this.answers.get(to);
    if (!list) this.answers.set(to, (list = []));
    list.push(result);
    this.answering ??= setImmediate(() => {
      this.answering = undefined;
      const out = this.answers;
      this.answers = new Map();
      for (const [channel, results] of out) this.store.publish(LK.replies(channel), JSON.stringify(results)).catch(() => undefined);
    });
  }

  private answered(message: string): void {
    let results: Json[];
    try {
      results = JSON.parse(message) as Json[];
    } catch {
      return;
    }
    if (!Array.isArray(results)) return;
    for (const r of results) this.settle((r as { id: string }).id, r);
  }

  private settle(id: string, r: Json): void {
    const a = this.asked.get(id);
    if (!a) return; // answered already (a command sent twice)
    this.asked.delete(id);
    clearTimeout(a.timer);
    const o = r as { ok: boolean; value?: Json; error?: Json };
    if (o.ok) a.resolve(o.value ?? null);
    else a.reject(errorFromJson(o.error ?? null));
  }
}

const writers = new WeakMap<Store, LedgerWriter>();

/** The ledger writer of a store (one per store instance, over its batcher). */
export function ledgerWriter(store: Store): LedgerWriter {
  let w = writers.get(store);
  if (!w) writers.set(store, (w = new LedgerWriter(store)));
  return w;
}
