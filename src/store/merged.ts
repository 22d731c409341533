import { partitionKeys } from './partition.js';

// the shapes of port.ts's IndexEntry and RangeOptions, restated: port.ts re-exports this module
interface IndexEntry {
  member: string;
  score: number;
}
interface RangeOptions {
  min?: number;
  max?: number;
  reverse?: boolean;
  limit?: number;
  offset?: number;
}
/** What a merged read needs of a Store. */
interface IndexReader {
  indexRange(key: string, opts?: RangeOptions): Promise<IndexEntry[]>;
}

/**
 * An ordered index kept per partition (partition.ts) read as one: the entries of every key, ordered
 * as one index would order them (score, then member by byte order; reversed with `reverse`), each
 * member once (the first seen in that order). Paging (`offset`, `limit`) applies to the merged
 * order; each part is read up to offset + limit entries, so a page costs one small range per key.
 */
export async function mergedIndexRange(store: IndexReader, keys: string[], opts: RangeOptions = {}): Promise<IndexEntry[]> {
  const offset = opts.offset ?? 0;
  const perKey: RangeOptions = { ...opts, offset: 0 };
  if (opts.limit !== undefined) perKey.limit = offset + opts.limit;
  const parts = await Promise.all(keys.map((k) => store.indexRange(k, perKey)));
  const all = parts.flat();
  const dir = opts.reverse ? -1 : 1;
  all.sort((a, b) => dir * (a.score - b.score || Buffer.compare(Buffer.from(a.member), Buffer.from(b.member))));
  const seen = new Set<string>();
  const unique = all.filter((e) => (seen.has(e.member) ? false : (seen.add(e.member), true)));
  return unique.slice(offset, opts.limit === undefined ? undefined : offset + opts.limit);
}

/** The number of members of a per-partition index (a member in several parts counts once). */
export async function mergedIndexCount(store: IndexReader, keys: string[]): Promise<number> {
  return (await mergedIndexRange(store, keys)).length;
}

/**
 * The number of members of a per-partition index whose parts are disjoint (each member is written
 * to one part only: its aggregate's partition, or the global index of before the partitions): the
 * sum of the parts' counts, without reading their entries.
 */
export async function summedIndexCount(store: { indexCount(key: string): Promise<number> }, keys: string[]): Promise<number> {
  const counts = await Promise.all(keys.map((k) => store.indexCount(k)));
  return counts.reduce((a, b) => a + b, 0);
}

/** A key of the global layout of before the partitions, then the same name in every partition. */
export const across = (name: string): string[] => [name, ...partitionKeys(name)];

/**
 * The newest `limit` entries of capped lists kept per partition (each oldest first), newest first:
 * each list's own order is kept, the lists merged by `at` (ties: the list read first).
 */
export async function newestAcross<T extends { at: string | number }>(
  store: { range(key: string, start?: number, stop?: number): Promise<unknown[]> },
  keys: string[],
  limit: number,
  decode: (v: never) => T | undefined,
): Promise<T[]> {
  const lists = await Promise.all(keys.map(async (k) => (await store.range(k, -limit, -1)).map((v) => decode(v as never)).filter((x): x is T => x !== undefined).reverse()));
  const at = lists.map(() => 0);
  const out: T[] = [];
  while (out.length < limit) {
    let best = -1;
    for (let i = 0; i < lists.length; i++) {
      const e = lists[i]![at[i]!];
      if (e !== undefined && (best < 0 || e.at > lists[best]![at[best]!]!.at)) best = i;
    }
    if (best < 0) break;
    out.push(lists[best]![at[best]!]!);
    at[best] = at[best]! + 1;
  }
  return out;
}

/**
 * The entries of a per-partition index in merged order (as mergedIndexRange orders them, each
 * member once), at most `max`, each part read lazily in pages of `batch`: a scan that stops early
 * reads only the pages it used.
 */
export async function* mergedIndexScan(store: IndexReader, keys: string[], opts: { reverse?: boolean; batch: number; max: number }): AsyncGenerator<IndexEntry> {
  const dir = opts.reverse ? -1 : 1;
  const parts = keys.map((key) => ({ key, buf: [] as IndexEntry[], next: 0, done: false }));
  const fill = async (p: (typeof parts)[number]) => {
    if (p.buf.length > 0 || p.done) return;
    const page = await store.indexRange(p.key, { reverse: opts.reverse, offset: p.next, limit: opts.batch });
    p.next += page.length;
    p.buf = page;
    if (page.length < opts.batch) p.done = true;
  };
  const before = (a: IndexEntry, b: IndexEntry) => dir * (a.score - b.score || Buffer.compare(Buffer.from(a.member), Buffer.from(b.member))) < 0;
  const seen = new Set<string>();
  let given = 0;
  await Promise.all(parts.map(fill));
  let last: (typeof parts)[number] | undefined;
  while (given < opts.max) {
    if (last) await fill(last);
    let best: (typeof parts)[number] | undefined;
    for (const p of parts) if (p.buf.length > 0 && (!best || before(p.buf[0]!, best.buf[0]!))) best = p;
    if (!best) return;
    const e = best.buf.shift()!;
    last = best;
    if (seen.has(e.member)) continue;
    seen.add(e.member);
    given++;
    yield e;
  }
}
