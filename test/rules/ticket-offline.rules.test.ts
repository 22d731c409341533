import { createHash, createPrivateKey, createPublicKey, verify } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { canonicalJson } from '../../src/canonical.js';
import { ManualClock } from '../../src/clock.js';
import { createBus } from '../../src/bus.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store, Write } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { refusal as refused } from '../support/refusal.js';

// The signed offline check-in list (src/ticket/offline.ts; docs/ticket.md, "Offline mode"): every
// ticket of the show (cancelled ones too, no other show's) as {h, status, seat, checked_in_at},
// h = base64url of the first 16 bytes of SHA-256("<show_id>:<code>"), sorted by h; read in
// batches; more than 50 000 tickets: 413 list_too_large. The payload is canonical JSON with the
// show (id, name, venue, date), a version hashing show and tickets (unchanged tickets, the same
// version), generated_at and count, signed with an Ed25519 key made on first use, kept in the store
// (a key already there wins) and reused. The module (and the service importing it) is loaded afresh
// in each test, so the code it runs at load (the stored key's codec) is covered by every test, and
// a mutant that breaks loading fails the tests instead of the file's collection.
const load = async () => {
  vi.resetModules();
  return { ...(await import('../../src/ticket/offline.js')), TicketService: (await import('../../src/ticket/service.js')).TicketService };
};
const T0 = Date.parse('2026-12-24T18:00:00+09:00');
const iso = (ms: number) => new Date(ms).toISOString();
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

/** `global`: shows of the global layout of before the partitions, whose updates span aggregates (one Redis only): no partition check. */
async function setup(opts: { global?: boolean } = {}) {
  const { OfflineLists, ticketHash, MAX_LIST_TICKETS, TicketService } = await load();
  const store = await openLmdbStore({ path: tempDir('ticket-offline-rules'), ...(opts.global ? { partitionCheck: false } : {}) });
  stores.push(store);
  const recorded = recordingStore(store);
  const clock = new ManualClock(T0);
  const service = new TicketService({ store, clock, bus: createBus(store, `offline-${Math.random()}`) });
  const show = await service.createShow({ name: '오프라인 공연', venue: '소극장', date: '2026-12-24T20:00:00+09:00' });
  const lists = new OfflineLists(recorded.store, clock);
  return { OfflineLists, ticketHash, MAX_LIST_TICKETS, store, recorded, clock, service, show, lists };
}

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest();
const hashOf = (showId: string, code: string) => sha(`${showId}:${code}`).subarray(0, 16).toString('base64url');

/**
 * Index entries (and, when `records`, bare reservation records) of a show, written directly: under
 * the show (a show created since the partitions), or under the global keys of before them.
 */
async function seed(store: Store, showId: string, n: number, records: boolean, layout: 'show' | 'global' = 'global') {
  const writes: Write[] = [];
  for (let i = 0; i < n; i++) {
    const id = `r_seed${String(i).padStart(6, '0')}`;
    writes.push({ op: 'index', key: layout === 'show' ? `ticket:show:${showId}:reservations` : `ticket:show-reservations:${showId}`, member: id, score: i });
    const rec = { id, code: `TK-S${i}`, show_id: showId, seat: `S-${i}`, status: 'entry_allowed', checkin: null };
    if (records) writes.push({ op: 'set', key: layout === 'show' ? `ticket:show:${showId}:res:${id}` : `ticket:reservation:${id}`, value: rec });
  }
  await store.update([], () => ({ writes, result: undefined }));
}

describe('the ticket hash', () => {
  it('is base64url of the first 16 bytes of SHA-256 of "<show_id>:<code>"', async () => {
    const { ticketHash } = await load();
    expect(ticketHash('s_abc', 'TK-Q9BM2G7R')).toBe(hashOf('s_abc', 'TK-Q9BM2G7R'));
    expect(ticketHash('s_abc', 'TK-Q9BM2G7R')).toHaveLength(22);
    expect(ticketHash('s_abd', 'TK-Q9BM2G7R')).not.toBe(ticketHash('s_abc', 'TK-Q9BM2G7R'));
  });
});

describe('the signing key', () => {
  it('is an Ed25519 pair made on first use and stored: key id, raw public key, PKCS#8 private key, when', async () => {
    const { lists, store, recorded, clock } = await setup();
    clock.advance(42_000);
    const { stored, privateKey } = await lists.signingKey();
    expect(await store.get('ticket:list-signing-key')).toEqual(stored);
    expect(recorded.writes).toEqual([{ op: 'set', key: 'ticket:list-signing-key', value: stored }]);
    expect(stored).toEqual({ alg: 'Ed25519', key_id: expect.any(String), public_key: expect.any(String), private_key: expect.any(String), created_at: iso(T0 + 42_000) });
    const raw = Buffer.from(stored.public_key, 'base64url');
    expect(raw).toHaveLength(32);
    expect(stored.key_id).toBe(sha(raw).toString('base64url').slice(0, 16));
    const priv = createPrivateKey({ key: Buffer.from(stored.private_key, 'base64url'), format: 'der', type: 'pkcs8' });
    expect(priv.asymmetricKeyType).toBe('ed25519');
    expect(createPublicKey(priv).export({ format: 'jwk' }).x).toBe(stored.public_key);
    expect(createPublicKey(privateKey).export({ format: 'jwk' }).x).toBe(stored.public_key);
  });

  it('is made once: the same key again, without another write, and the same for another instance on the store', async () => {
    const { OfflineLists, lists, store, recorded, clock } = await setup();
    const first = await lists.signingKey();
    recorded.writes.length = 0;
    expect(await lists.signingKey()).toBe(first);
    // another process finding the key stored takes it as it is: no key of its own, no update
    let updated = false;
    recorded.race.next = async () => {
      updated = true;
    };
    const other = await new OfflineLists(recorded.store, clock).signingKey();
    expect(updated).toBe(false);
    recorded.race.next = undefined;
    expect(other.stored).toEqual(first.stored);
    expect(recorded.writes).toEqual([]);
    expect(await store.get('ticket:list-signing-key')).toEqual(first.stored);
  });

  it('a key another process stored meanwhile wins over the candidate', async () => {
    const { OfflineLists, lists, store, recorded, clock } = await setup();
    let theirs: Awaited<ReturnType<typeof lists.signingKey>> | undefined;
    recorded.race.next = async () => {
      theirs = await new OfflineLists(store, clock).signingKey();
    };
    const mine = await lists.signingKey();
    expect(theirs).toBeDefined();
    expect(mine.stored).toEqual(theirs!.stored);
    expect(recorded.writes).toEqual([]);
    expect(createPublicKey(mine.privateKey).export({ format: 'jwk' }).x).toBe(theirs!.stored.public_key);
  });

  it('a stored key that is not an Ed25519 key record is refused as corrupt, naming the field', async () => {
    const good = { alg: 'Ed25519', key_id: 'k', public_key: 'p', private_key: 'q', created_at: iso(T0) };
    for (const [field, bad] of [['alg', 'RSA'], ['key_id', 1], ['public_key', null], ['private_key', undefined], ['created_at', 5]] as const) {
      const { lists, store } = await setup();
      const value: Record<string, unknown> = { ...good, [field]: bad };
      if (bad === undefined) delete value[field];
      await store.set('ticket:list-signing-key', value as never);
      expect(await refused(lists.signingKey())).toMatchObject({ code: 'corrupt_record', message: `a stored list signing key is not readable (field ${field})` });
    }
  });
});

describe('the list', () => {
  it('holds every ticket of the show, cancelled ones too, by hash, sorted by hash; signed over its canonical JSON', async () => {
    const { lists, service, show, clock } = await setup();
    const booked = [];
    for (const seat of ['A-1', 'A-2', 'A-3', 'A-4', 'A-5']) booked.push(await service.reserve({ show_id: show.id, seat, amount_paid: 30_000, holder: `홀더-${seat}` }));
    const elsewhere = await service.createShow({ name: '다른 공연', venue: '대극장', date: '2026-12-25' });
    await service.reserve({ show_id: elsewhere.id, seat: 'A-1', amount_paid: 0 });
    clock.advance(1_000);
    await service.cancel(booked[1]!.id);
    clock.advance(1_000);
    await service.checkInByCode(booked[2]!.code, {});
    clock.advance(1_000);
    const signed = await lists.list(show);
    const tickets = booked
      .map((r, i) => ({ h: hashOf(show.id, r.code), status: i === 1 ? 'cancelled' : i === 2 ? 'checked_in' : 'entry_allowed', seat: r.seat, checked_in_at: i === 2 ? iso(T0 + 2_000) : null }))
      .sort((a, b) => (a.h < b.h ? -1 : 1));
    const showPart = { id: show.id, name: '오프라인 공연', venue: '소극장', date: '2026-12-24T20:00:00+09:00' };
    const version = sha(canonicalJson({ show: showPart, tickets })).toString('base64url').slice(0, 22);
    const payload = { kind: 'maru.checkin-list', v: 1, show: showPart, version, generated_at: iso(T0 + 3_000), count: 5, tickets };
    const { stored } = await lists.signingKey();
    expect(signed).toEqual({ alg: 'Ed25519', key_id: stored.key_id, public_key: stored.public_key, payload: canonicalJson(payload), signature: expect.any(String), version });
    expect(signed.payload).not.toContain('홀더');
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: signed.public_key }, format: 'jwk' });
    const sig = Buffer.from(signed.signature, 'base64url');
    expect(sig).toHaveLength(64);
    expect(verify(null, Buffer.from(signed.payload, 'utf8'), key, sig)).toBe(true);
    expect(verify(null, Buffer.from(signed.payload.replace('"v":1', '"v":2'), 'utf8'), key, sig)).toBe(false);
  });

  it('keeps its version while no ticket changes (a later list, the same version), and changes it when one does', async () => {
    const { lists, service, show, clock } = await setup();
    const r = await service.reserve({ show_id: show.id, seat: 'A-1', amount_paid: 0 });
    const first = await lists.list(show);
    clock.advance(60_000);
    const later = await lists.list(show);
    expect(later.version).toBe(first.version);
    expect(JSON.parse(later.payload).generated_at).toBe(iso(T0 + 60_000));
    expect(later.payload).not.toBe(first.payload);
    await service.checkInByCode(r.code, {});
    expect((await lists.list(show)).version).not.toBe(first.version);
    expect((await lists.list({ ...show, name: '새 이름' })).version).not.toBe((await lists.list(show)).version);
    // the same tickets under another show name, venue or date make another version
    expect((await lists.list({ ...show, venue: '대극장' })).version).not.toBe((await lists.list(show)).version);
  });

  it('an empty show has an empty, signed list', async () => {
    const { lists, show } = await setup();
    const signed = await lists.list(show);
    expect(JSON.parse(signed.payload)).toMatchObject({ count: 0, tickets: [] });
  });

  it('reads the show in batches of 500: 499, 500, 501 and 1000 tickets all listed; skips absent records and other shows', async () => {
    const { lists, store, show, service } = await setup({ global: true });
    const elsewhere = await service.createShow({ name: '다른 공연', venue: '대극장', date: '2026-12-25' });
    const foreign = await service.reserve({ show_id: elsewhere.id, seat: 'Z-1', amount_paid: 0 });
    for (const n of [499, 500, 501, 1000]) {
      const s = { ...show, id: `s_batch${n}`.padEnd(12, '0') };
      await store.set(`ticket:show-indexed:${s.id}`, 1);
      await seed(store, s.id, n, true);
      const payload = JSON.parse((await lists.list(s)).payload);
      expect(payload.count, `${n} tickets`).toBe(n);
      expect(new Set(payload.tickets.map((t: { h: string }) => t.h)).size).toBe(n);
      expect(payload.tickets.map((t: { h: string }) => t.h)).toEqual(payload.tickets.map((t: { h: string }) => t.h).sort());
    }
    // an index entry without its record, and one of another show's ticket, are left out
    const odd = { ...show, id: 's_odd0000000' };
    await store.set(`ticket:show-indexed:${odd.id}`, 1);
    await seed(store, odd.id, 2, true);
    await store.update([], () => ({
      writes: [
        { op: 'index', key: `ticket:show-reservations:${odd.id}`, member: 'r_absent0000', score: 5 },
        { op: 'index', key: `ticket:show-reservations:${odd.id}`, member: foreign.id, score: 6 },
      ],
      result: undefined,
    }));
    const payload = JSON.parse((await lists.list(odd)).payload);
    expect(payload.count).toBe(2);
    expect(payload.tickets.map((t: { seat: string }) => t.seat).sort()).toEqual(['S-0', 'S-1']);
  });

  it('indexes a show created before its booking index on first use (the global layout of before the partitions)', async () => {
    const { lists, store, show } = await setup({ global: true });
    const old = { ...show, id: 's_oldindex00' };
    await store.update([], () => ({
      writes: [
        { op: 'set', key: 'ticket:reservation:r_old0000001', value: { id: 'r_old0000001', code: 'TK-OLD1', show_id: old.id, seat: 'A-1', status: 'entry_allowed', checkin: null } },
        { op: 'index', key: 'ticket:reservations', member: 'r_old0000001', score: 1 },
      ],
      result: undefined,
    }));
    expect(JSON.parse((await lists.list(old)).payload).count).toBe(1);
    expect(await store.get(`ticket:show-indexed:${old.id}`)).toBe(1);
  });

  it('lists a show created since the partitions from the index under it', async () => {
    const { lists, show, service } = await setup();
    await service.reserve({ show_id: show.id, seat: 'A-1', amount_paid: 0 });
    await service.reserve({ show_id: show.id, seat: 'A-2', amount_paid: 0 });
    expect(JSON.parse((await lists.list(show)).payload).tickets.map((t: { seat: string }) => t.seat).sort()).toEqual(['A-1', 'A-2']);
  });

  it('a show of 50 000 tickets has a list; of 50 001, 413 list_too_large', async () => {
    const { lists, store, show, MAX_LIST_TICKETS } = await setup();
    expect(MAX_LIST_TICKETS).toBe(50_000);
    await seed(store, show.id, 50_000, false, 'show');
    // the index entries have no records: the list is empty, but it is made
    expect(JSON.parse((await lists.list(show)).payload).count).toBe(0);
    await store.update([], () => ({ writes: [{ op: 'index', key: `ticket:show:${show.id}:reservations`, member: 'r_one_more00', score: 1 }], result: undefined }));
    expect(await refused(lists.list(show), { details: true })).toEqual({
      status: 413,
      code: 'list_too_large',
      message: 'a show with more than 50000 tickets has no offline list',
      details: { tickets: 50_001, max: 50_000 },
    });
  }, 60_000);
});
