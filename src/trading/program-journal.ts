import { EMIT_RETRY_MS, retryWhileUnavailable, type Bus } from '../bus.js';
import type { Json, Store, Write } from '../store/port.js';
import { alertKey, alertWrites } from './alerts.js';
import { K, PROGRAM_EVENTS_TOPIC, runOf, type ProgramEvent, type ProgramRecord, programRecords, programEvents } from './program-model.js';

/**
 * The one path by which program output reaches the store and the Bus, in the order it was made.
 * Entries queued while a batch commits go into the next batch; a batch is one atomic store update
 * per program (statistics, book, signals, logs and equity points together, in the program's
 * aggregate), and its events are published on the
 * Bus only after it committed, so a subscriber never sees an event the store lost. The Bus numbers
 * and keeps them (topic `program:events`, its history): their stream positions are the SSE ids. A
 * store outage between the commit and the publication is waited out (up to EMIT_RETRY_MS), so a
 * committed event is not missing from the stream.
 *
 * An entry of a run (`run`) is the output of one processed bar (or of the flatten at a pause): it is
 * committed only while this process holds the program's lease, the program is still on that run
 * (its from_bar), and, once the program left `running`, only for bars that closed before it did.
 * So after a failover the old owner can write nothing more, and the new owner, which reads the
 * statistics after taking the lease, continues from the last bar committed: no bar twice, none
 * skipped. Writes of a program that no longer exists are left out; its events (a `deleted` status)
 * are not.
 */
export interface JournalEntry {
  program: string;
  writes: Write[];
  events: ProgramEvent[];
  run?: { from: number; bar: number | null };
}

export interface JournalOptions {
  store: Store;
  bus: Pick<Bus, 'publishMany'>;
  owner: string;
  barMs: number;
  onError?: (err: unknown) => void;
  /**
   * Alerts (alerts.ts): each program's alert is read in the batch's update and its events are
   * enqueued in the outbox in the same write; `kick` wakes the outbox after such a commit.
   */
  alerts?: { kick(): void };
}

export class Journal {
  private queue: { e: JournalEntry; done: (committed: boolean) => void }[] = [];
  private flushing: Promise<void> | undefined;

  constructor(private readonly opts: JournalOptions) {}

  /** Queues an entry; resolves with whether it was committed (and its events published). */
  add(e: JournalEntry): Promise<boolean> {
    return new Promise((done) => {
      this.queue.push({ e, done });
      this.flushing ??= this.flush();
    });
  }

  /** Waits until everything queued so far is committed (or refused). */
  async flushed(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flush(): Promise<void> {
    await Promise.resolve();
    const { bus } = this.opts;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0);
      const committed: boolean[] = batch.map(() => false);
      const events: ProgramEvent[][] = batch.map(() => []);
      let enqueued = false;
      try {
        // one update per program, its aggregate (docs/partitions.md), the programs side by side
        const ids = [...new Set(batch.map((b) => b.e.program))];
        await Promise.all(
          ids.map(async (id) => {
            const at = batch.flatMap((b, i) => (b.e.program === id ? [i] : []));
            try {
              const out = await this.commit(id, at.map((i) => batch[i]!.e));
              out.ok.forEach((ok, j) => {
                committed[at[j]!] = ok;
                if (ok) events[at[j]!] = batch[at[j]!]!.e.events;
              });
              if (out.enqueued) enqueued = true;
            } catch (err) {
              this.opts.onError?.(err);
            }
          }),
        );
        if (enqueued) this.opts.alerts?.kick();
        // committed: the events must reach the stream, so a store outage here is waited out (in
        // order: the next batch waits behind this one)
        const out = events.flat();
        if (out.length > 0) {
          const encoded = out.map(programEvents.encode);
          await retryWhileUnavailable(() => bus.publishMany(PROGRAM_EVENTS_TOPIC, encoded), Date.now() + EMIT_RETRY_MS);
        }
      } catch (err) {
        this.opts.onError?.(err);
      } finally {
        batch.forEach((b, i) => b.done(committed[i]!));
      }
    }
    this.flushing = undefined;
  }

  /** Commits one program's entries of a batch in one update of its aggregate: which were accepted. */
  private commit(id: string, entries: JournalEntry[]): Promise<{ ok: boolean[]; enqueued: boolean }> {
    const alerting = !!this.opts.alerts;
    const keys = [K.rec(id), K.lease(id), ...(alerting ? [alertKey(id)] : [])];
    return this.opts.store.update(keys, ([recRaw, lease, alert]) => {
      const r = programRecords.decode(recRaw);
      const writes: Write[] = [];
      const ok: boolean[] = [];
      let enqueued = false;
      for (const e of entries) {
        const accepted = e.run === undefined || this.current(r, lease, e.run);
        ok.push(accepted);
        if (!accepted) continue;
        if (r) writes.push(...e.writes);
        // the program's alert: its events to the outbox in this very write, in the program's partition
        const sends = alerting ? alertWrites(alert, e.events, K.rec(id)) : [];
        if (sends.length) (writes.push(...sends), (enqueued = true));
      }
      return { writes, result: { ok, enqueued } };
    });
  }

  private current(r: ProgramRecord | undefined, lease: Json | undefined, run: { from: number; bar: number | null }): boolean {
    if (!r || lease !== this.opts.owner || runOf(r) !== run.from) return false;
    if (r.state === 'running' || run.bar === null) return true;
    // the program left running: bars that closed before it did still count
    return (run.bar + 1) * this.opts.barMs <= r.updated_at;
  }
}
