import type { Json, Store } from '../store/port.js';
import { K } from './keys.js';

/** The door counter of one show: tickets sold (not cancelled), checked in, cancelled. */
export interface ShowCounts {
  show_id: string;
  tickets: number;
  checked_in: number;
  cancelled: number;
}

const BATCH = 500;

/**
 * A read-side view over the reservations (the scanner page's "checked in / total"): reads every
 * reservation once, in batches, and counts the show's. It costs one pass over all reservations, so
 * callers keep the answer for a few seconds (showCountsCache) rather than asking per check-in.
 */
export async function showCounts(store: Store, showId: string): Promise<ShowCounts> {
  const ids = (await store.indexRange(K.reservations)).map((e) => e.member);
  const out: ShowCounts = { show_id: showId, tickets: 0, checked_in: 0, cancelled: 0 };
  for (let i = 0; i < ids.length; i += BATCH) {
    const recs = await store.getMany<Json>(ids.slice(i, i + BATCH).map((id) => K.reservation(id)));
    for (const raw of recs) {
      const r = raw as { show_id?: string; status?: string } | undefined;
      if (r?.show_id !== showId) continue;
      if (r.status === 'cancelled') out.cancelled++;
      else {
        out.tickets++;
        if (r.status === 'checked_in') out.checked_in++;
      }
    }
  }
  return out;
}

/** showCounts, kept per show for `ttlMs` (one pass serves every scanner of the door meanwhile). */
export function showCountsCache(store: Store, now: () => number, ttlMs = 2000) {
  const kept = new Map<string, { at: number; value: Promise<ShowCounts> }>();
  return (showId: string): Promise<ShowCounts> => {
    const hit = kept.get(showId);
    if (hit && now() - hit.at < ttlMs) return hit.value;
    if (kept.size > 100) kept.clear();
    const value = showCounts(store, showId);
    kept.set(showId, { at: now(), value });
    value.catch(() => kept.delete(showId));
    return value;
  };
}
