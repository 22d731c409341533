import type { Store } from '../store/port.js';
import { OUTBOX_PARTS, type OutboxPart } from './records.js';

/** An index entry of one part of the outbox (a partition, or the global layout). */
export interface PartEntry {
  part: OutboxPart;
  member: string;
  score: number;
}

/**
 * An index the outbox keeps per part (the global layout and each partition: records.ts) read as one,
 * each entry with the part it was read from: ordered by score, then member (byte order), then part;
 * paging applies to that order (each part is read up to offset + limit entries).
 */
export async function partsRange(
  store: Pick<Store, 'indexRange'>,
  keyOf: (part: OutboxPart) => string,
  opts: { max?: number; offset?: number; limit?: number } = {},
): Promise<PartEntry[]> {
  const offset = opts.offset ?? 0;
  const per: { max?: number; limit?: number } = {};
  if (opts.max !== undefined) per.max = opts.max;
  if (opts.limit !== undefined) per.limit = offset + opts.limit;
  const parts = await Promise.all(
    OUTBOX_PARTS.map(async (part) => (await store.indexRange(keyOf(part), per)).map((e): PartEntry => ({ part, member: e.member, score: e.score }))),
  );
  const all = parts.flat();
  all.sort((a, b) => a.score - b.score || Buffer.compare(Buffer.from(a.member), Buffer.from(b.member)) || (a.part ?? -1) - (b.part ?? -1));
  return all.slice(offset, opts.limit === undefined ? undefined : offset + opts.limit);
}

/** The number of entries of an index kept per part, summed over the parts. */
export async function partsCount(store: Pick<Store, 'indexCount'>, keyOf: (part: OutboxPart) => string): Promise<number> {
  const counts = await Promise.all(OUTBOX_PARTS.map((part) => store.indexCount(keyOf(part))));
  return counts.reduce((a, b) => a + b, 0);
}
