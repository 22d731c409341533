import type { Clock } from '../clock.js';
import type { Store, Write } from '../store/port.js';
import { partsCount } from './parts.js';
import { OUTBOX_PARTS, outboxDueKey, outboxHeldKey, type Deliver, type OutboxHold, type OutboxLogger } from './records.js';

/**
 * Items for a peer that is not configured (its deliverer made by `notConfigured`): kept in
 * `outbox:held:<dest>:{#p}` instead of `outbox:due:{#p}` (p: the item's partition), so nothing
 * attempts them; said once per destination in the log and at /readyz; taken back into delivery by a
 * process that has the peer configured (held items of the global layout are moved into their
 * partition then).
 */
export class Holds {
  /** Holds already reported in the log (once each). */
  private readonly told = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly deliver: Record<string, Deliver>,
    private readonly logger: OutboxLogger | undefined,
    /** Moves an item of the global layout into its partition, due at `dueAt` (Outbox.adopt). */
    private readonly adopt: (id: string, dueAt: number) => Promise<boolean>,
  ) {}

  /** Whether items of `dest` are kept rather than attempted. */
  isHeld(dest: string): boolean {
    return this.deliver[dest]?.held !== undefined;
  }

  /** The writes that move a due item of partition p into its destination's held index. */
  holdWrites(id: string, dest: string, createdAt: number, p: number): Write[] {
    return [
      { op: 'unindex', key: outboxDueKey(p), member: id },
      { op: 'index', key: outboxHeldKey(dest, p), member: id, score: createdAt },
    ];
  }

  /** The destinations this process keeps items for and how many each. */
  async holding(): Promise<OutboxHold[]> {
    // read at each call: deliverers may be added to the map after construction
    const held = Object.entries(this.deliver).filter(([, d]) => d.held !== undefined);
    const counts = await Promise.all(held.map(([dest]) => partsCount(this.store, (part) => outboxHeldKey(dest, part))));
    return held.map(([dest, d], i) => ({ dest, reason: d.held!, items: counts[i]! }));
  }

  /** One line for /readyz: "ok", or what is kept and why (held items do not make the hub unready). */
  async readiness(): Promise<string> {
    const held = (await this.holding()).filter((h) => h.items > 0);
    if (held.length === 0) return 'ok';
    const total = held.reduce((n, h) => n + h.items, 0);
    return `holding ${total} ${total === 1 ? 'delivery' : 'deliveries'}: ${held.map((h) => `${h.dest} ${h.items} (${h.reason})`).join('; ')}`;
  }

  /** Logs, once per destination, that items are kept because its peer is not configured. */
  async tell(only?: string): Promise<void> {
    if (only !== undefined && this.told.has(only)) return;
    for (const h of await this.holding()) {
      if (this.told.has(h.dest) || h.items === 0 || (only !== undefined && h.dest !== only)) continue;
      this.told.add(h.dest);
      this.logger?.warn(
        { dest: h.dest, held: h.items, reason: h.reason },
        'outbox keeps the deliveries for a peer that is not configured; they go out once it is (said once)',
      );
    }
  }

  /** Takes back into delivery the items held (here or by another process) for destinations this process can deliver to. */
  async release(): Promise<void> {
    for (const [dest, deliver] of Object.entries(this.deliver)) {
      if (deliver.held !== undefined) continue;
      // the first batch of every part read at once; a part with more is read on, batch by batch
      const firsts = await Promise.all(OUTBOX_PARTS.map((part) => this.store.indexRange(outboxHeldKey(dest, part), { limit: 200 })));
      for (const [i, part] of OUTBOX_PARTS.entries()) {
        const key = outboxHeldKey(dest, part);
        let entries = firsts[i]!;
        for (;;) {
          if (entries.length === 0) break;
          const now = this.clock.now();
          if (part === undefined) {
            // the global layout: each item moves into its partition, due now
            for (const e of entries) {
              await this.adopt(e.member, now);
              await this.store.unindex(key, e.member); // also when the record was gone
            }
          } else {
            const batch = entries;
            await this.store.update([], () => ({
              writes: batch.flatMap((e): Write[] => [
                { op: 'unindex', key, member: e.member },
                { op: 'index', key: outboxDueKey(part), member: e.member, score: now },
              ]),
              result: undefined,
            }));
          }
          this.logger?.debug({ dest, items: entries.length }, 'outbox took back held items');
          if (entries.length < 200) break;
          entries = await this.store.indexRange(key, { limit: 200 });
        }
      }
    }
  }
}
