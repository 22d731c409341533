/**
 * Offline mode of the scanner (pretixSCAN's; docs/ticket.md, "Offline mode"): the signed list of
 * the show's tickets kept in IndexedDB, encrypted with a non-extractable AES-GCM key that never
 * leaves this browser; answers from it when the network is gone; a queue of offline check-ins,
 * uploaded when the network returns.
 */

export interface ListTicket {
  h: string; status: 'entry_allowed' | 'checked_in' | 'cancelled'; seat: string; checked_in_at: string | null;
  /** A list's own set (v 2): the kind, an entry that stands on the list, inside on it. */
  kind?: string; entered?: boolean; inside?: boolean;
}
/** The rules of one check-in list, applied here as the hub applies them (docs/ticket.md, "The door"). */
interface ListRules {
  id: string; name: string; kinds: string[] | null; seats: { from: string; to: string }[] | null;
  allow_multiple_entries: boolean; allow_entry_after_exit: boolean; valid_from: string | null; valid_until: string | null;
}
interface ListPayload {
  kind: 'maru.checkin-list';
  v: 1 | 2;
  show: { id: string; name: string; venue: string; date: string };
  list?: ListRules;
  version: string;
  generated_at: string;
  count: number;
  tickets: ListTicket[];
}
interface SignedList { alg: 'Ed25519'; key_id: string; public_key: string; payload: string; signature: string; version: string }
/** What is kept (encrypted) under "list": the signed list as downloaded and the key pinned at the first one. */
interface KeptList { signed: SignedList; pinned_key: string; fetched_at: string }
export interface QueuedScan { id: string; code: string; scanned_at: string; source: 'camera' | 'manual'; seat: string; show_id: string; list_id?: string }
/** Kept under "queue": scans waiting for upload, and tickets this device admitted offline since the list was fetched. */
interface KeptQueue { items: QueuedScan[]; used: Record<string, string> }
export interface UploadResult { id: string; result: 'ok' | 'conflict' | 'invalid'; replayed: boolean; conflict?: { reason: string; code: string; first_checkin: { at: string; scanner: string; gate: string | null } | null } }
export type OfflineAnswer = { result: 'ok' | 'already_redeemed' | 'canceled' | 'invalid' | 'product' | 'invalid_time'; seat?: string; at?: string; same?: boolean; saved?: Promise<void> };
type Fetch = (url: string, init?: { method?: string; body?: unknown; headers?: Record<string, string> }) => Promise<Response>;

import { sha256 } from './sha256.js';

const DB = 'maru-scan-offline';
const STORE = 'kv';
const MAX_TICKETS = 50_000;
/** Scans per upload (the hub takes at most 200). */
const UPLOAD_BATCH = 100;
const STATUSES = new Set(['entry_allowed', 'checked_in', 'cancelled']);
const enc = new TextEncoder();
const dec = new TextDecoder();
const b64u = (s: string) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
const toB64u = (b: Uint8Array) => btoa(String.fromCharCode(...b)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

function idb<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** The ticket hash of the list: base64url of the first 16 bytes of SHA-256("<show_id>:<code>"). */
export function ticketHash(showId: string, code: string): string {
  return toB64u(sha256(`${showId}:${code}`).subarray(0, 16));
}

const natural = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
const rulesShape = (r: ListRules | undefined) =>
  !!r && typeof r.id === 'string' && /^(main|cl_[A-Za-z0-9_-]{10})$/.test(r.id) && typeof r.name === 'string' &&
  typeof r.allow_multiple_entries === 'boolean' && typeof r.allow_entry_after_exit === 'boolean' &&
  (r.kinds === null || (Array.isArray(r.kinds) && r.kinds.every((k) => typeof k === 'string'))) &&
  (r.seats === null || (Array.isArray(r.seats) && r.seats.every((x) => typeof x?.from === 'string' && typeof x.to === 'string'))) &&
  (r.valid_from === null || typeof r.valid_from === 'string') && (r.valid_until === null || typeof r.valid_until === 'string');

/** The list's entry rule (pretix's; src/ticket/door.ts entryVerdict), for a ticket of its own set. */
function entryRule(r: ListRules, t: ListTicket, usedHere: boolean, now: number): 'ok' | 'already_redeemed' | 'product' | 'invalid_time' {
  if (r.kinds && !r.kinds.includes(t.kind ?? 'standard')) return 'product';
  if (r.seats && !r.seats.some((s) => natural.compare(s.from, t.seat) <= 0 && natural.compare(t.seat, s.to) <= 0)) return 'product';
  if ((r.valid_from && now < Date.parse(r.valid_from)) || (r.valid_until && now > Date.parse(r.valid_until))) return 'invalid_time';
  if (!t.entered && !usedHere) return 'ok';
  if (r.allow_multiple_entries) return 'ok';
  if (r.allow_entry_after_exit && !t.inside && !usedHere) return 'ok';
  return 'already_redeemed';
}

/** The shape a list must have before it is used (after its signature was checked). */
function listShape(p: unknown): p is ListPayload {
  const l = p as ListPayload;
  return (
    !!l && l.kind === 'maru.checkin-list' && (l.v === 1 ? l.list === undefined : l.v === 2 && rulesShape(l.list)) && typeof l.version === 'string' &&
    typeof l.show?.id === 'string' && /^s_[A-Za-z0-9_-]{10}$/.test(l.show.id) && typeof l.show.name === 'string' &&
    Array.isArray(l.tickets) && l.tickets.length === l.count && l.count <= MAX_TICKETS &&
    l.tickets.every((t) => typeof t?.h === 'string' && /^[A-Za-z0-9_-]{22}$/.test(t.h) && STATUSES.has(t.status) && typeof t.seat === 'string' && (t.checked_in_at === null || typeof t.checked_in_at === 'string'))
  );
}

/** Checks the signature with the pinned key and the shape; the payload, or undefined. */
async function verified(signed: SignedList, pinnedKey: string): Promise<ListPayload | undefined> {
  if (signed?.alg !== 'Ed25519' || signed.public_key !== pinnedKey || typeof signed.payload !== 'string') return undefined;
  try {
    const key = await crypto.subtle.importKey('raw', b64u(pinnedKey), { name: 'Ed25519' }, false, ['verify']);
    if (!(await crypto.subtle.verify({ name: 'Ed25519' }, key, b64u(signed.signature), enc.encode(signed.payload)))) return undefined;
    const payload: unknown = JSON.parse(signed.payload);
    return listShape(payload) ? payload : undefined;
  } catch {
    return undefined;
  }
}

export class OfflineDoor {
  private db: IDBDatabase | undefined;
  private key: CryptoKey | undefined;
  private list: ListPayload | undefined;
  private kept: KeptList | undefined;
  private byHash = new Map<string, ListTicket>();
  private queue: KeptQueue = { items: [], used: {} };
  private syncing: Promise<void> | undefined;
  private wanted: { show: string | undefined; list: string | undefined } | undefined;
  private loading: Promise<void> = Promise.resolve();
  /** Set when the hub refused this device (revoked): nothing is answered offline until it is registered again. */
  wiped = false;
  lastSync: { at: string; uploaded: number; conflicts: UploadResult[]; error?: string } | undefined;

  constructor(
    private readonly call: Fetch,
    private readonly onChange: () => void,
  ) {}

  get ready(): boolean {
    return !!this.list;
  }
  get show() {
    return this.list?.show;
  }
  /** The check-in list whose own set this is (undefined: the show's tickets, v 1). */
  get checkInList() {
    return this.list?.list;
  }
  get size(): number {
    return this.list?.count ?? 0;
  }
  get fetchedAt(): string | undefined {
    return this.kept?.fetched_at;
  }
  get pending(): readonly QueuedScan[] {
    return this.queue.items;
  }

  private async open(): Promise<IDBDatabase> {
    if (this.db) return this.db;
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    this.db = await idb(req);
    return this.db;
  }

  private async raw<T>(name: string): Promise<T | undefined> {
    const db = await this.open();
    return idb(db.transaction(STORE).objectStore(STORE).get(name)) as Promise<T | undefined>;
  }

  /** The AES-GCM key of this device: made once, non-extractable, kept in IndexedDB (as a CryptoKey, never its bytes). */
  private async cryptoKey(create: boolean): Promise<CryptoKey | undefined> {
    if (this.key) return this.key;
    this.key = await this.raw<CryptoKey>('key');
    if (!this.key && create) {
      const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
      const db = await this.open();
      await idb(db.transaction(STORE, 'readwrite').objectStore(STORE).put(key, 'key'));
      this.key = key;
    }
    return this.key;
  }

  private async put(name: string, value: unknown): Promise<void> {
    const key = (await this.cryptoKey(true))!;
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const ct = await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: enc.encode(name) }, key, enc.encode(JSON.stringify(value)));
    const db = await this.open();
    await idb(db.transaction(STORE, 'readwrite').objectStore(STORE).put({ iv, ct }, name));
  }

  private async get<T>(name: string): Promise<T | undefined> {
    const key = await this.cryptoKey(false);
    const rec = await this.raw<{ iv: Uint8Array<ArrayBuffer>; ct: ArrayBuffer }>(name);
    if (!key || !rec) return undefined;
    const pt = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: rec.iv, additionalData: enc.encode(name) }, key, rec.ct);
    return JSON.parse(dec.decode(pt)) as T;
  }

  /** Loads what this device kept: the list (checked again: signature and shape) and the queue. */
  load(): Promise<void> {
    this.loading = this.read();
    return this.loading;
  }

  private async read(): Promise<void> {
    try {
      this.queue = (await this.get<KeptQueue>('queue')) ?? { items: [], used: {} };
      const kept = await this.get<KeptList>('list');
      if (kept) await this.use(kept);
    } catch {
      // unreadable (a key from another time, a damaged record): start without a list
      this.list = undefined;
    }
    this.onChange();
  }

  private async use(kept: KeptList): Promise<boolean> {
    const payload = await verified(kept.signed, kept.pinned_key);
    if (!payload) return false;
    this.kept = kept;
    this.list = payload;
    this.byHash = new Map(payload.tickets.map((t) => [t.h, t]));
    return true;
  }

  /**
   * The answer of the list for a code, synchronously (a hash and a look-up: well under 100 ms); a
   * scan it admits is queued, in memory at once and in IndexedDB when `saved` resolves.
   */
  answer(code: string, source: 'camera' | 'manual', id: string): OfflineAnswer | undefined {
    const list = this.list;
    if (!list || this.wiped) return undefined;
    const queued = this.queue.items.find((q) => q.id === id);
    if (queued) return { result: 'ok', seat: queued.seat, at: queued.scanned_at, same: true };
    const h = ticketHash(list.show.id, code);
    const t = this.byHash.get(h);
    if (!t) return { result: 'invalid' };
    if (t.status === 'cancelled') return { result: 'canceled', seat: t.seat };
    const usedAt = this.queue.used[h];
    if (list.list) {
      const verdict = entryRule(list.list, t, !!usedAt, Date.now());
      if (verdict === 'already_redeemed') return { result: verdict, seat: t.seat, at: usedAt ?? t.checked_in_at ?? undefined };
      if (verdict !== 'ok') return { result: verdict, seat: t.seat };
    } else if (t.status === 'checked_in' || usedAt) return { result: 'already_redeemed', seat: t.seat, at: usedAt ?? t.checked_in_at ?? undefined };
    const at = new Date().toISOString();
    this.queue.items.push({ id, code, scanned_at: at, source, seat: t.seat, show_id: list.show.id, ...(list.list ? { list_id: list.list.id } : {}) });
    this.queue.used[h] = at;
    this.onChange();
    // the answer goes on screen at once; the queue is written behind it, one write after another
    return { result: 'ok', seat: t.seat, at, saved: this.saveQueue() };
  }

  private saving: Promise<void> = Promise.resolve();
  /** Writes the queue as it is now, after the writes before it (each holds the whole queue). */
  private saveQueue(): Promise<void> {
    const write = this.saving.catch(() => undefined).then(() => this.put('queue', this.queue));
    this.saving = write;
    return write;
  }

  /** A check-in the hub answered online: the list knows it at once (a drop right after still answers "already in"). */
  checkedInOnline(code: string, at: string): void {
    if (!this.list) return;
    const h = ticketHash(this.list.show.id, code);
    const t = this.byHash.get(h);
    if (!t || t.status === 'cancelled') return;
    if (this.list.list) {
      t.entered = true;
      t.inside = true;
    }
    if (t.status !== 'entry_allowed') return;
    t.status = 'checked_in';
    t.checked_in_at = at;
  }

  /** Uploads the queue, then refreshes the list of `showId` (the set of its check-in list `listId` when given); one at a time. */
  sync(showId: string | undefined, listId?: string): Promise<void> {
    // another list asked for while a sync runs: it follows that one
    if (this.syncing && listId !== undefined && (this.wanted?.show !== showId || this.wanted?.list !== listId)) {
      const after = this.syncing.then(() => this.sync(showId, listId));
      return after;
    }
    this.wanted = { show: showId, list: listId };
    this.syncing ??= this.run(showId, listId).finally(() => {
      this.syncing = undefined;
      this.onChange();
    });
    return this.syncing;
  }

  private async run(showId: string | undefined, listId: string | undefined): Promise<void> {
    await this.loading;
    if (this.wiped) return;
    const conflicts: UploadResult[] = [];
    let uploaded = 0;
    try {
      while (this.queue.items.length > 0) {
        const batch = this.queue.items.slice(0, UPLOAD_BATCH);
        const res = await this.call('/api/checkin/offline', { body: { scans: batch.map(({ id, code, scanned_at, source, list_id }) => ({ id, code, scanned_at, source, ...(list_id ? { list_id } : {}) })) } });
        if (res.status === 401 || res.status === 403) return await this.wipe();
        if (!res.ok) throw new Error(`upload: HTTP ${res.status}`);
        const { results } = (await res.json()) as { results: UploadResult[] };
        const done = new Set(results.map((r) => r.id));
        for (const r of results) if (r.result === 'conflict') conflicts.push(r);
        uploaded += done.size;
        this.queue.items = this.queue.items.filter((q) => !done.has(q.id));
        await this.saveQueue();
        this.onChange();
      }
      const id = showId ?? this.list?.show.id;
      if (id) await this.download(id, showId ? listId : (listId ?? this.list?.list?.id));
      this.lastSync = { at: new Date().toISOString(), uploaded, conflicts };
    } catch (err) {
      this.lastSync = { at: new Date().toISOString(), uploaded, conflicts, error: (err as Error).message };
    }
  }

  private async download(showId: string, listId: string | undefined): Promise<void> {
    const same = this.list?.show.id === showId && this.list?.list?.id === listId;
    const headers: Record<string, string> = same && this.kept ? { 'if-none-match': `"${this.kept.signed.version}"` } : {};
    const res = await this.call(`/api/checkin/list?show_id=${encodeURIComponent(showId)}${listId ? `&list_id=${encodeURIComponent(listId)}` : ''}`, { headers });
    if (res.status === 401 || res.status === 403) return this.wipe();
    if (res.status !== 304 && !res.ok) throw new Error(`list: HTTP ${res.status}`);
    const fetchedAt = new Date().toISOString();
    if (res.status === 304 && this.kept) {
      await this.keep({ ...this.kept, fetched_at: fetchedAt });
      return;
    }
    const signed = (await res.json()) as SignedList;
    // the key is pinned at the first list this device took; a list signed by another is refused
    const pinned = this.kept?.pinned_key ?? signed.public_key;
    if (!(await this.use({ signed, pinned_key: pinned, fetched_at: fetchedAt }))) throw new Error('list signature or shape refused');
    await this.keep(this.kept!);
  }

  /** Keeps the list; the marks of offline admissions go once every queued scan has reached the hub (the list now knows them). */
  private async keep(kept: KeptList): Promise<void> {
    this.kept = kept;
    await this.put('list', kept);
    if (this.queue.items.length === 0 && Object.keys(this.queue.used).length > 0) {
      this.queue.used = {};
      await this.saveQueue();
    }
  }

  /** Forgets the list, the queue and the key (a revoked device, or "forget device"). */
  async wipe(): Promise<void> {
    this.wiped = true;
    this.list = undefined;
    this.kept = undefined;
    this.byHash.clear();
    this.queue = { items: [], used: {} };
    this.key = undefined;
    const db = await this.open();
    await idb(db.transaction(STORE, 'readwrite').objectStore(STORE).clear());
    this.onChange();
  }

  /** A device registered again after a wipe may keep a list again. */
  resume(): void {
    this.wiped = false;
  }

  /** How many records IndexedDB holds (tests and the page's state line). */
  async stored(): Promise<string[]> {
    const db = await this.open();
    return (await idb(db.transaction(STORE).objectStore(STORE).getAllKeys())).map(String);
  }
}
