import { createHash, createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../canonical.js';
import { AppError } from '../errors.js';
import type { Clock } from '../clock.js';
import { codec, F } from '../store/codec.js';
import type { Store } from '../store/port.js';
import { K } from './keys.js';
import { keysOfShow } from './locate.js';
import { ensureShowIndex } from './lists.js';
import { iso, reservations, type ShowRecord, type TicketStatus } from './records.js';
import { doorOf, firstOn, insideOn, DEFAULT_KIND, type CheckInList } from './door.js';

/**
 * The offline check-in list (pretixSCAN's offline mode; docs/ticket.md, "Offline mode"): what a
 * door needs to answer without network, for one show. Each ticket is named by a hash of its show
 * and code (the door hashes what it scans), with its status and seat; no holder names. The list is
 * canonical JSON signed with the hub's Ed25519 key, so the page can check a copy before every use.
 */

/** A list holds at most this many tickets (a show bigger than this has no offline list: 413). */
export const MAX_LIST_TICKETS = 50_000;
const BATCH = 500;

export interface ListTicket {
  /** base64url of the first 16 bytes of SHA-256("<show_id>:<code>"). */
  h: string;
  status: TicketStatus;
  seat: string;
  /** When it was checked in (for a ticket already in at download), else null; on a list's set, its first entry on that list. */
  checked_in_at: string | null;
  /** On a list's own set (v 2): the ticket kind, and whether it has an entry that stands on the list and is inside on it. */
  kind?: string;
  entered?: boolean;
  inside?: boolean;
}

/** The rules a door applies offline: the list's, as the hub applies them (src/ticket/door.ts). */
export type ListRules = Pick<CheckInList, 'id' | 'name' | 'kinds' | 'seats' | 'allow_multiple_entries' | 'allow_entry_after_exit' | 'valid_from' | 'valid_until'>;

export interface ListPayload {
  kind: 'maru.checkin-list';
  /** 1: the show's tickets (no list named); 2: one check-in list's own set, with its rules. */
  v: 1 | 2;
  show: Pick<ShowRecord, 'id' | 'name' | 'venue' | 'date'>;
  list?: ListRules;
  /** Hash of show and tickets: the list's ETag; unchanged tickets give the same version. */
  version: string;
  generated_at: string;
  count: number;
  tickets: ListTicket[];
}

export interface SignedList {
  alg: 'Ed25519';
  key_id: string;
  /** base64url of the raw 32-byte public key. */
  public_key: string;
  /** The canonical JSON text of a ListPayload: the signed bytes are its UTF-8 encoding. */
  payload: string;
  /** base64url of the 64-byte Ed25519 signature over `payload`. */
  signature: string;
}

interface StoredKey {
  alg: 'Ed25519';
  key_id: string;
  public_key: string;
  /** base64url of the PKCS#8 DER private key. */
  private_key: string;
  created_at: string;
}

const listKeys = codec<StoredKey>('list signing key', {
  fields: { alg: (v) => v === 'Ed25519', key_id: F.str, public_key: F.str, private_key: F.str, created_at: F.str },
});

/** The ticket hash of the list: the same on the page (WebCrypto SHA-256). */
export function ticketHash(showId: string, code: string): string {
  return createHash('sha256').update(`${showId}:${code}`).digest().subarray(0, 16).toString('base64url');
}

export class OfflineLists {
  private key: { stored: StoredKey; privateKey: KeyObject } | undefined;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /**
   * The signing key: made on first use and kept in the store, so every hub process sharing it
   * signs with the same key. A candidate is drawn outside the atomic update; inside, a key already
   * there wins.
   */
  async signingKey(): Promise<{ stored: StoredKey; privateKey: KeyObject }> {
    if (this.key) return this.key;
    let stored = listKeys.decode(await this.store.get(K.listSigningKey));
    if (!stored) {
      const pair = generateKeyPairSync('ed25519');
      const publicKey = pair.publicKey.export({ format: 'jwk' }).x!;
      const candidate: StoredKey = {
        alg: 'Ed25519',
        key_id: createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('base64url').slice(0, 16),
        public_key: publicKey,
        private_key: pair.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64url'),
        created_at: iso(this.clock.now()),
      };
      stored = await this.store.update([K.listSigningKey], ([cur]) =>
        cur !== undefined ? { writes: [], result: listKeys.decode(cur)! } : { writes: [{ op: 'set', key: K.listSigningKey, value: listKeys.encode(candidate) }], result: candidate },
      );
    }
    const privateKey = createPrivateKey({ key: Buffer.from(stored.private_key, 'base64url'), format: 'der', type: 'pkcs8' });
    this.key = { stored, privateKey };
    return this.key;
  }

  /** The version (ETag) of a show's list as it would be built now, and the list's tickets. */
  private async tickets(show: ShowRecord, list?: CheckInList): Promise<ListTicket[]> {
    await ensureShowIndex(this.store, show.id);
    const k = await keysOfShow(this.store, show.id);
    const key = k.showReservations;
    const total = await this.store.indexCount(key);
    if (total > MAX_LIST_TICKETS) {
      throw new AppError('too_large', 'list_too_large', `a show with more than ${MAX_LIST_TICKETS} tickets has no offline list`, { tickets: total, max: MAX_LIST_TICKETS });
    }
    const out: ListTicket[] = [];
    for (let offset = 0; ; offset += BATCH) {
      const entries = await this.store.indexRange(key, { limit: BATCH, offset });
      if (entries.length === 0) break;
      const recs = await this.store.getMany(entries.map((e) => k.reservation(e.member)));
      for (const raw of recs) {
        const r = reservations.decode(raw);
        if (!r || r.show_id !== show.id) continue;
        if (!list) out.push({ h: ticketHash(show.id, r.code), status: r.status, seat: r.seat, checked_in_at: r.checkin?.at ?? null });
        else {
          const scans = doorOf(r)[list.id];
          const first = firstOn(scans);
          out.push({ h: ticketHash(show.id, r.code), status: r.status, seat: r.seat, kind: r.kind ?? DEFAULT_KIND, checked_in_at: first?.at ?? null, entered: first !== null, inside: insideOn(scans) });
        }
      }
      if (entries.length < BATCH) break;
    }
    // sorted by hash: the order tells nothing of when tickets were booked
    return out.sort((a, b) => (a.h < b.h ? -1 : a.h > b.h ? 1 : 0));
  }

  /** The signed list of one show's tickets; with a check-in list, that list's own set (v 2) with its rules. */
  async list(show: ShowRecord, checkInList?: CheckInList): Promise<SignedList & { version: string }> {
    const tickets = await this.tickets(show, checkInList);
    const showPart = { id: show.id, name: show.name, venue: show.venue, date: show.date };
    const rules: ListRules | undefined = checkInList && {
      id: checkInList.id, name: checkInList.name, kinds: checkInList.kinds, seats: checkInList.seats, allow_multiple_entries: checkInList.allow_multiple_entries,
      allow_entry_after_exit: checkInList.allow_entry_after_exit, valid_from: checkInList.valid_from, valid_until: checkInList.valid_until,
    };
    const version = createHash('sha256').update(canonicalJson(rules ? { show: showPart, list: rules, tickets } : { show: showPart, tickets })).digest('base64url').slice(0, 22);
    const payload: ListPayload = {
      kind: 'maru.checkin-list',
      v: rules ? 2 : 1,
      show: showPart,
      ...(rules ? { list: rules } : {}),
      version,
      generated_at: iso(this.clock.now()),
      count: tickets.length,
      tickets,
    };
    const text = canonicalJson(payload);
    const { stored, privateKey } = await this.signingKey();
    return {
      alg: 'Ed25519',
      key_id: stored.key_id,
      public_key: stored.public_key,
      payload: text,
      signature: sign(null, Buffer.from(text, 'utf8'), privateKey).toString('base64url'),
      version,
    };
  }
}
