import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import { codec, F, optional } from '../store/codec.js';
import type { Json, Store } from '../store/port.js';
import { K, ledgerUpdate, parseTransfer, transferKeys, type TransferInput } from './ledger.js';
import type { BankingClient } from './peers.js';
import { RK, receiptWrites } from './receipts.js';
import { onrampRecords, PK, type PaymentService } from './service.js';

/**
 * Reconciliation with the bank (issue 23, defect 4): the bank's webhook can be lost, so the hub also
 * reads the bank's event list after a stored cursor, on a schedule (under a store lease: one process
 * pulls at a time) and on demand (POST /api/token/ops/reconcile). A confirmed payment is settled
 * through the same PaymentService.confirmOnramp as the webhook (once per banking payment id, in any
 * order); a declined on-ramp is marked declined; an off-ramp is tracked until the bank pays it or
 * rejects it, and a rejected one is returned to the wallet with its fee by a new transfer. The cursor
 * moves only after an event is settled, so a crash between the two re-reads the event and settles it
 * once. An event that cannot be settled (unknown payment, another amount) moves nothing and is kept as
 * a difference.
 */

export const RECON = {
  cursor: 'pay:recon:cursor',
  lease: 'pay:recon:lease',
  differences: 'pay:recon:differences',
  offramp: (id: string) => `pay:offramp:${id}`,
};

/** A run's lease (the reconciliation pull, a week's payouts): held by `token` until `until`. */
export interface Lease {
  token: string;
  until: number;
}
export const leases = codec<Lease>('lease', { fields: { token: F.str, until: F.num } });

/** An off-ramp the bank settled: paid, or returned (with the reason and the transfer back). */
export interface OfframpOutcome {
  state: 'paid' | 'returned';
  ts: number;
  reason?: string;
  transfer?: string;
}
export const offrampOutcomes = codec<OfframpOutcome>('off-ramp outcome', {
  fields: { state: (v) => v === 'paid' || v === 'returned', ts: F.num, reason: optional(F.str), transfer: optional(F.str) },
});

export interface BankEvent {
  id: string;
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

export interface PullReport {
  status: 'done' | 'busy';
  events: number;
  credited: number;
  declined: number;
  offramps_paid: number;
  offramps_returned: number;
  differences: number;
  cursor: number;
  /** Open on-ramps the events had not settled whose status the bank was asked (GET /api/payments/:ref). */
  status_checked: number;
}

const isEvent = (e: unknown): e is BankEvent => {
  const x = e as BankEvent;
  return !!x && typeof x === 'object' && Number.isSafeInteger(x.seq) && typeof x.type === 'string' && !!x.data && typeof x.data === 'object';
};

export class Reconciler {
  private timer?: NodeJS.Timeout;
  constructor(
    private readonly svc: PaymentService,
    private readonly store: Store,
    private readonly bank: BankingClient,
    private readonly opts: {
      periodMs: number;
      leaseMs: number;
      /** An on-ramp still open this long after it was opened is asked for by its status (RECONCILE_STATUS_AFTER_MS). */
      statusAfterMs?: number;
      logger?: Logger;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      void this.pull().catch((err: unknown) => this.opts.logger?.warn({ err }, 'bank reconciliation failed'));
    }, this.opts.periodMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One pull of the bank's events since the cursor (at most 20 pages of 100). */
  async pull(): Promise<PullReport> {
    const store = this.store;
    const token = randomUUID();
    const now = this.svc.now();
    const got = await store.update([RECON.lease], ([cur]) => {
      const c = leases.decode(cur);
      if (c && (c.until ?? 0) > now) return { writes: [], result: false };
      return { writes: [{ op: 'set', key: RECON.lease, value: leases.encode({ token, until: now + this.opts.leaseMs }) }], result: true };
    });
    const report: PullReport = { status: 'busy', events: 0, credited: 0, declined: 0, offramps_paid: 0, offramps_returned: 0, differences: 0, cursor: 0, status_checked: 0 };
    if (!got) return report;
    report.status = 'done';
    try {
      let cursor = Number((await store.get(RECON.cursor)) ?? 0);
      for (let page = 0; page < 20; page++) {
        const answer = await this.bank.events(cursor, 100).catch((err: unknown) => {
          throw new AppError('unavailable', 'bank_unavailable', `the bank did not answer: ${(err as Error).message}`);
        });
        const events = (answer.events ?? []).filter(isEvent).filter((e) => e.seq > cursor);
        // a page's events are settled at once: their transfers reach the ledger together and land in
        // batches (each settled once, whatever the order); the cursor then moves over them one by one,
        // in order, while the lease is still this pull's, up to the first that failed (read again by
        // the next pull: settling it is idempotent)
        const settled = await Promise.allSettled(events.map((ev) => this.apply(ev)));
        for (const [i, ev] of events.entries()) {
          const r = settled[i]!;
          if (r.status === 'rejected') throw r.reason;
          report.events++;
          if (r.value !== 'none') report[r.value]++;
          cursor = ev.seq;
          if (!(await this.advance(cursor, token))) {
            // the lease ran out (or was lost in a failover) and another pull holds it: it goes on from
            // the stored cursor; the events applied here are settled once whoever applies them
            report.cursor = cursor;
            return report;
          }
        }
        if (!answer.has_more || events.length === 0) break;
      }
      report.cursor = cursor;
      await this.askStatuses(now, token, report);
      return report;
    } finally {
      await store.update([RECON.lease], ([cur]) => ({ writes: leases.decode(cur)?.token === token ? [{ op: 'del', key: RECON.lease }] : [], result: null }));
    }
  }

  /**
   * Moves the stored cursor forward to `seq`, only while this pull's lease is still its own and
   * never backwards: a pull that lost its lease cannot take the cursor back behind a newer pull's.
   */
  private advance(seq: number, token: string): Promise<boolean> {
    return this.store.update([RECON.cursor, RECON.lease], ([cur, lease]) => {
      if (leases.decode(lease)?.token !== token) return { writes: [], result: false };
      return { writes: Number(cur ?? 0) < seq ? [{ op: 'set', key: RECON.cursor, value: seq }] : [], result: true };
    });
  }

  private async apply(ev: BankEvent): Promise<'credited' | 'declined' | 'offramps_paid' | 'offramps_returned' | 'differences' | 'none'> {
    try {
      if (ev.type === 'payment.confirmed') {
        const d = ev.data as { payment_id: string; ref: string; amount_krw: number; usd_micro: number };
        const r = await this.svc.confirmOnramp({ payment_id: String(d.payment_id), ref: String(d.ref), amount_krw: Number(d.amount_krw), usd_micro: Number(d.usd_micro) });
        return r.credited ? 'credited' : 'none';
      }
      if (ev.type === 'payment.declined') return (await this.declined(String(ev.data.ref))) ? 'declined' : 'none';
      if (ev.type === 'offramp.paid' || ev.type === 'offramp.failed') {
        const key = String(ev.data.key ?? '');
        if (!key.startsWith('offramp:')) throw new AppError('not_found', 'offramp_not_found', `no off-ramp ${key}`);
        const done = await this.offrampOutcome(key.slice('offramp:'.length), ev.type === 'offramp.paid' ? 'paid' : 'returned', String(ev.data.reason ?? ''));
        return done ? (ev.type === 'offramp.paid' ? 'offramps_paid' : 'offramps_returned') : 'none';
      }
      return 'none';
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      await this.store.push(RECON.differences, { event: ev.id, type: ev.type, code: err.code, message: err.message, data: ev.data as Json, ts: this.svc.now() }, 10_000);
      this.opts.logger?.warn({ event: ev.id, code: err.code }, 'bank event not settled: kept as a difference');
      return 'differences';
    }
  }

  private declined(ref: string): Promise<boolean> {
    return this.store.update([PK.onramp(ref)], ([cur]) => {
      const o = onrampRecords.decode(cur);
      if (!o) throw new AppError('not_found', 'onramp_not_found', `no on-ramp ${ref}`);
      if (o.state !== 'open') return { writes: [], result: false };
      return {
        writes: [
          { op: 'set', key: PK.onramp(ref), value: onrampRecords.encode({ ...o, state: 'declined' }) },
          { op: 'unindex', key: PK.onrampsOpen, member: ref },
        ],
        result: true,
      };
    });
  }

  /**
   * The payments the events never settled: each on-ramp still open `statusAfterMs` after it was
   * opened is asked for by its status at the bank (`GET /api/payments/:ref`, at most 100 a pull),
   * then settled as its event would be: confirmed credits through confirmOnramp (once per banking
   * payment id, whatever comes first: webhook, event or status), declined marks it declined. One
   * the bank does not know yet (404, or still pending) is asked again a period `statusAfterMs`
   * later; one that cannot be settled (another amount) is kept as a difference and not asked again.
   */
  private async askStatuses(now: number, token: string, report: PullReport): Promise<void> {
    const after = this.opts.statusAfterMs;
    if (after === undefined) return;
    const store = this.store;
    const due = await store.indexRange(PK.onrampsOpen, { max: now - after, limit: 100 });
    for (const { member: ref } of due) {
      if (leases.decode(await store.get(RECON.lease))?.token !== token) return; // another pull took over
      const o = onrampRecords.decode(await store.get(PK.onramp(ref)));
      if (!o || o.state !== 'open') {
        await store.update([], () => ({ writes: [{ op: 'unindex' as const, key: PK.onrampsOpen, member: ref }], result: null }));
        continue;
      }
      let p: Record<string, unknown> | undefined;
      try {
        p = await this.bank.payment(ref);
      } catch (err) {
        if ((err as { status?: number }).status !== 404) {
          throw new AppError('unavailable', 'bank_unavailable', `the bank did not answer the status of ${ref}: ${(err as Error).message}`);
        }
      }
      report.status_checked++;
      const status = p?.status;
      if (status !== 'confirmed' && status !== 'declined') {
        // not known (or not final) at the bank yet: asked again a period later, if still open then
        await store.update([PK.onramp(ref)], ([cur]) => ({
          writes: [onrampRecords.decode(cur)?.state === 'open' ? { op: 'index', key: PK.onrampsOpen, member: ref, score: now } : { op: 'unindex', key: PK.onrampsOpen, member: ref }],
          result: null,
        }));
        continue;
      }
      const ev: BankEvent = {
        id: `status:${ref}`,
        seq: 0,
        type: status === 'confirmed' ? 'payment.confirmed' : 'payment.declined',
        data: status === 'confirmed' ? { payment_id: p!.payment_id, ref, amount_krw: p!.amount_krw, usd_micro: p!.usd_micro } : { ref },
      };
      const outcome = await this.apply(ev);
      if (outcome !== 'none') report[outcome]++;
      // settled, or kept as a difference for an operator: not asked again
      await store.update([], () => ({ writes: [{ op: 'unindex' as const, key: PK.onrampsOpen, member: ref }], result: null }));
    }
  }

  /** Marks an off-ramp paid, or returns it (net + fee) to the wallet by a new transfer; once. */
  private async offrampOutcome(id: string, outcome: 'paid' | 'returned', reason: string): Promise<boolean> {
    const [netV, feeV] = await this.store.getMany([K.transfer(`${id}:net`), K.transfer(`${id}:fee`)]);
    const net = parseTransfer(netV);
    const fee = parseTransfer(feeV);
    if (!net || !fee || net.code !== 'offramp') throw new AppError('not_found', 'offramp_not_found', `no off-ramp ${id}`);
    const back: TransferInput = { id: `${id}:return`, debit: 'bank', credit: net.debit, amount: net.amount + fee.amount, code: 'offramp_return', meta: { offramp: id, reason } };
    const now = this.svc.now();
    const user = net.debit.split(':')[1] ?? null;
    return ledgerUpdate(this.store, () => now, [RECON.offramp(id), RK.head, ...(outcome === 'returned' ? transferKeys([back]) : [])], (tx, get) => {
      if (get(RECON.offramp(id))) return { result: false };
      if (outcome === 'paid') return { writes: [{ op: 'set', key: RECON.offramp(id), value: offrampOutcomes.encode({ state: 'paid', ts: now }) }], result: true };
      tx.transfer(back);
      const r = receiptWrites(get(RK.head), { kind: 'offramp_return', user, amount: back.amount.toString(), transfers: [back.id], ref: id, ts: now });
      return { writes: [...r.writes, { op: 'set', key: RECON.offramp(id), value: offrampOutcomes.encode({ state: 'returned', reason, transfer: back.id, ts: now }) }], result: true };
    });
  }

  /** An off-ramp's status for its owner: sent (waiting for the bank), paid or returned. */
  async offrampStatus(id: string, user: string): Promise<Json> {
    const [netV, rec] = await this.store.getMany([K.transfer(`${id}:net`), RECON.offramp(id)]);
    const net = parseTransfer(netV);
    if (!net || net.debit !== `u:${user}:wallet`) throw new AppError('not_found', 'offramp_not_found', `no off-ramp ${id}`);
    const r = offrampOutcomes.decode(rec);
    return { offramp: id, state: r?.state ?? 'sent', reason: r?.reason ?? null, settled_at: r?.ts ?? null };
  }

  async differences(): Promise<Json[]> {
    return this.store.range(RECON.differences, -100, -1);
  }
}
