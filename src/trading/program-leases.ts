import { mergedIndexRange, type Store } from '../store/port.js';
import { K, runOf, type ProgramRecord, programRecords } from './program-model.js';

/**
 * Ownership of running programs: each is driven by exactly one process, the holder of its store
 * lease (a key with a time to live, renewed every third of it). A process that dies stops renewing;
 * after the lease expires another process takes it and continues the program from its last
 * committed bar (program-journal.ts refuses any later write of the old holder).
 */
export type Renewal = 'mine' | 'lost' | 'deleted' | { left: ProgramRecord } | 'other_run';

export class Leases {
  constructor(
    private readonly store: Store,
    readonly owner: string,
    readonly ttlMs: number,
  ) {}

  /**
   * Renews the lease of a program this process drives on run `run`, but only while it still holds
   * it and the program is still running that run (a missed status event cannot leave a paused,
   * deleted or restarted program running here).
   */
  renew(id: string, run: number): Promise<Renewal> {
    return this.store.update([K.lease(id), K.rec(id)], ([cur, rec]) => {
      if (cur !== this.owner) return { writes: [], result: 'lost' as Renewal };
      if (!rec) return { writes: [], result: 'deleted' as Renewal };
      const r = programRecords.decode(rec)!;
      if (runOf(r) !== run) return { writes: [], result: 'other_run' as Renewal };
      if (r.state !== 'running') return { writes: [], result: { left: r } as Renewal };
      return { writes: [{ op: 'set', key: K.lease(id), value: this.owner, ttlMs: this.ttlMs }], result: 'mine' as Renewal };
    });
  }

  /** Takes the lease when it is free or already this process's (renewed); false when another process holds it. */
  hold(id: string): Promise<boolean> {
    return this.store.update([K.lease(id)], ([cur]) =>
      cur === undefined || cur === this.owner
        ? { writes: [{ op: 'set' as const, key: K.lease(id), value: this.owner, ttlMs: this.ttlMs }], result: true }
        : { writes: [], result: false },
    );
  }

  /** Gives the lease up (only when this process holds it). */
  async drop(id: string): Promise<void> {
    await this.store.update([K.lease(id)], ([cur]) => ({ writes: cur === this.owner ? [{ op: 'del' as const, key: K.lease(id) }] : [], result: null }));
  }

  /** Programs in state running (any owner): every partition's list and the global one of before. */
  async running(): Promise<string[]> {
    return (await mergedIndexRange(this.store, K.runningParts)).map((e) => e.member);
  }
}
