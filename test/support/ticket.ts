import type { Json, Store } from '../../src/store/port.js';

/**
 * A reservation as the old table held it: no bingo_cards column. Written under the key layout
 * spelled out (not through the service's key helpers), as records written before it would be.
 */
export async function legacyReservation(store: Store, id: string, code: string, over: Record<string, Json> = {}) {
  await store.set(`ticket:reservation:${id}`, {
    id,
    code,
    show_id: 's_legacy0000',
    show_name: '옛 공연',
    venue: '소극장',
    date: '2026-10-01',
    seat: 'B-3',
    amount_paid: 30000,
    holder: null,
    status: 'entry_allowed',
    created_at: '2026-09-01T00:00:00.000Z',
    checkin: null,
    cancelled_at: null,
    cancel_reason: null,
    ...over,
  });
  await store.set(`ticket:code:${code}`, id);
}
