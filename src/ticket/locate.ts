import type { Json, Store } from '../store/port.js';
import { K, showKeys, type Layout, type ShowKeys } from './keys.js';
import { reservations, ticketCodes } from './records.js';

/**
 * Where a show's tickets are (keys.ts: the show's layout, or the global one of before the
 * partitions), and the lookups from a reservation id or a ticket code to its show.
 */

/** A reservation found by its id or code: its show and the keys of that show's layout. */
export interface Located {
  id: string;
  showId: string;
  keys: ShowKeys;
}

/** The layout of a show: its own (created since the partitions) or the global one. */
export async function showLayout(store: Store, showId: string): Promise<Layout> {
  return (await store.get(K.showPartitioned(showId))) !== undefined ? 'show' : 'global';
}

export async function keysOfShow(store: Store, showId: string): Promise<ShowKeys> {
  return showKeys(showId, await showLayout(store, showId));
}

/** The layouts of several shows, in order. */
export async function keysOfShows(store: Store, showIds: string[]): Promise<ShowKeys[]> {
  const marks = showIds.length ? await store.getMany(showIds.map((id) => K.showPartitioned(id))) : [];
  return showIds.map((id, i) => showKeys(id, marks[i] !== undefined ? 'show' : 'global'));
}

/** A reservation by its id: the pointer to its show, or a record of the global layout. */
export async function locateById(store: Store, id: string): Promise<Located | undefined> {
  const [show, old] = await store.getMany([K.ridShow(id), K.reservation(id)]);
  if (typeof show === 'string') return { id, showId: show, keys: showKeys(show, 'show') };
  const r = reservations.decode(old);
  return r ? { id, showId: r.show_id, keys: showKeys(r.show_id, 'global') } : undefined;
}

/** A reservation by its ticket code: `{show_id, id}`, or (global layout) the reservation id. */
export async function locateByCode(store: Store, code: string): Promise<Located | undefined> {
  const v = await store.get(K.code(code));
  const p = pointer(v);
  if (p) return { id: p.id, showId: p.show_id, keys: showKeys(p.show_id, 'show') };
  const id = ticketCodes.decode(v); // the global layout's reservation id (anything else is corrupt_record)
  if (id === undefined) return undefined;
  const r = reservations.decode(await store.get(K.reservation(id)));
  return r ? { id, showId: r.show_id, keys: showKeys(r.show_id, 'global') } : undefined;
}

function pointer(v: Json | undefined): { show_id: string; id: string } | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  return typeof v.show_id === 'string' && typeof v.id === 'string' ? { show_id: v.show_id, id: v.id } : undefined;
}

/** Lists across shows: the global one of before the partitions, then each partition's (store/merged.ts). */
export { across, newestAcross } from '../store/port.js';
