import type { Store } from '../store/port.js';
import { reservations } from './records.js';
import { K } from './keys.js';
import { keysOfShow } from './locate.js';

/** The door counter of one show: tickets sold (not cancelled), checked in, cancelled. */
export interface ShowCounts {
  show_id: string;
  tickets: number;
  checked_in: number;
  cancelled: number;
}

const BATCH = 500;

/**
 * The door counter of a show (the scanner page's "checked in / total"): three store counters the
 * booking, check-in and cancel updates add to in the same atomic write, so they are exact on every
 * process. A show created before the counters existed has none: it is counted once by a pass over
 * the reservations (countByScan).
 */
export async function showCounts(store: Store, showId: string): Promise<ShowCounts> {
  const k = await keysOfShow(store, showId);
  const [tickets, checkedIn, cancelled] = await store.getMany([k.count('tickets'), k.count('checked_in'), k.count('cancelled')]);
  if (typeof tickets !== 'number') return countByScan(store, showId);
  return { show_id: showId, tickets, checked_in: typeof checkedIn === 'number' ? checkedIn : 0, cancelled: typeof cancelled === 'number' ? cancelled : 0 };
}

export async function countByScan(store: Store, showId: string): Promise<ShowCounts> {
  const ids = (await store.indexRange(K.reservations)).map((e) => e.member);
  const out: ShowCounts = { show_id: showId, tickets: 0, checked_in: 0, cancelled: 0 };
  for (let i = 0; i < ids.length; i += BATCH) {
    for (const r of reservations.decodeMany(await store.getMany(ids.slice(i, i + BATCH).map((id) => K.reservation(id))))) {
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
