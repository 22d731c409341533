import { randomBytes } from 'node:crypto';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { SearchIndex, type SearchHit } from './search.js';

/**
 * The document collaboration service (docs/collab.md): documents, versions, locks, presence,
 * statistics and search. Every write is one atomic Store.update; events go out on the Bus
 * (topic `md:<slug>` for one document, `md:all` for the list).
 */

export const LOCK_TTL_MS = 10 * 60_000;
/** A lock is held at most this long from its acquisition: renewals stop there (then anyone may take it). */
export const LOCK_MAX_MS = 60 * 60_000;
export const MAX_VERSIONS = 50;
export const RECENT_EDITS = 8;
export const PRESENCE_TIMEOUT_MS = 30_000;
export const SLUG_RE = /^[a-z0-9가-힣][a-z0-9가-힣_-]{0,79}$/;
export const CATEGORY_RE = /^[\p{L}\p{N} _-]{1,40}$/u;
export const DOC_TOPIC = (slug: string) => `md:${slug}`;
export const LIST_TOPIC = 'md:all';
const WEEK_MS = 7 * 86_400_000;

/** Presence colours: a document never gives one colour to two people while the palette lasts. */
export const PALETTE = [
  '#e6194b', '#3cb44b', '#4363d8', '#f58231', '#911eb4', '#42d4f4', '#f032e6', '#9a6324',
  '#469990', '#800000', '#808000', '#000075', '#bfef45', '#fabed4', '#dcbeff', '#aaffc3',
];

export interface Doc {
  slug: string;
  category: string;
  title: string;
  content: string;
  version: number;
  created: number;
  modified: number;
  author: string;
  size: number;
}

export interface Version {
  version: number;
  title: string;
  category: string;
  content: string;
  modified: number;
  author: string;
  size: number;
  restored_from?: number;
}

/** The signed-in identity asking (the hub's principal as this service needs it). */
export interface Editor {
  id: string;
  name: string;
  /** The operator may break another holder's lock. */
  operator?: boolean;
}

export interface Lock {
  slug: string;
  /** The holder's identity id (the account); only that identity renews, releases and saves. */
  holder: string;
  holder_name: string;
  acquired: number;
  expires: number;
}

export interface Peer {
  id: string;
  /** The identity id of the person behind the presence entry. */
  user: string;
  name: string;
  color: string;
  joined: number;
  seen: number;
}

export interface SaveInput {
  slug: string;
  content: string;
  category?: string;
  title?: string;
  baseVersion?: number;
  /** Who saves (a form save or restore); the lock is judged against this identity. */
  editor?: Editor;
  /** Author of a live save (the identities who edited); ignored when `editor` is given. */
  author?: string;
  /** 'http' (a form save), 'live' (Yjs co-editing), 'restore'. */
  origin?: 'http' | 'live' | 'restore';
  restoredFrom?: number;
}

export interface SaveResult {
  doc: Doc;
  changed: boolean;
}

const K = {
  doc: (s: string) => `md:doc:${s}`,
  versions: (s: string) => `md:versions:${s}`,
  lock: (s: string) => `md:lock:${s}`,
  presence: (s: string) => `md:presence:${s}`,
  docs: 'md:docs',
  locks: 'md:locks',
  rooms: 'md:presence-rooms',
};

function lockedError(slug: string, lock: Lock): AppError {
  const holder = lock.holder_name ?? lock.holder;
  return new AppError('locked', 'document_locked', `${slug} is locked by ${holder} until ${new Date(lock.expires).toISOString()}`, {
    holder: lock.holder,
    holder_name: holder,
    expires_at: new Date(lock.expires).toISOString(),
    expires: lock.expires,
  });
}

const notYours = (slug: string) => new AppError('forbidden', 'not_your_presence', `that presence entry of ${slug} belongs to someone else`);

/** A live lock held by someone other than `editor` refuses the write (operators too: they break it first). */
function assertHolder(slug: string, lock: Lock | undefined, editor: Editor | undefined, now: number): void {
  if (lock && lock.expires > now && lock.holder !== editor?.id) throw lockedError(slug, lock);
}

export function titleOf(content: string, slug: string): string {
  const m = /^#{1,2}\s+(.+)$/m.exec(content);
  return (m?.[1] ?? slug).trim().slice(0, 200);
}

const summary = (d: Doc) => ({
  slug: d.slug,
  title: d.title,
  category: d.category,
  version: d.version,
  modified: d.modified,
  author: d.author,
  size: d.size,
});

export interface CollabServiceOptions {
  store: Store;
  clock: Clock;
  bus: Pick<Bus, 'emit'>;
  /** Largest markdown document in bytes (UTF-8); larger is a 413. */
  maxBytes: number;
  /** Where a failed sweep is reported. */
  logger?: { warn(obj: object, msg: string): void };
}

export class CollabService {
  readonly maxBytes: number;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly index = new SearchIndex();
  private readonly savedHooks = new Set<(doc: Doc, origin: string) => void>();

  constructor(private readonly opts: CollabServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.maxBytes = opts.maxBytes;
  }

  private sweeper?: NodeJS.Timeout;

  /** Sweeps lock expiry and presence time-outs every `everyMs`. */
  start(everyMs: number): void {
    this.sweeper ??= setInterval(() => {
      this.sweep().catch((err) => this.opts.logger?.warn({ err }, 'document sweep failed'));
    }, everyMs);
    this.sweeper.unref();
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Called on every save on this process (the Yjs rooms follow HTTP saves through it). */
  onSaved(fn: (doc: Doc, origin: string) => void): () => void {
    this.savedHooks.add(fn);
    return () => this.savedHooks.delete(fn);
  }

  private publish(topic: string, msg: Json): void {
    this.opts.bus.emit(topic, msg);
  }

  private now(): number {
    return this.clock.now();
  }

  checkSlug(slug: string): void {
    if (!SLUG_RE.test(slug)) throw new AppError('invalid', 'invalid_slug', 'a slug is 1-80 of a-z 0-9 한글 _ - (no path characters)');
  }

  // ---- documents ----------------------------------------------------------------------------

  async get(slug: string): Promise<Doc> {
    this.checkSlug(slug);
    const doc = await this.store.get<Doc & Json>(K.doc(slug));
    if (!doc) throw notFound('unknown_document', `no document ${slug}`, { slug });
    return doc;
  }

  async find(slug: string): Promise<Doc | undefined> {
    return (await this.store.get<Doc & Json>(K.doc(slug))) ?? undefined;
  }

  async save(input: SaveInput): Promise<SaveResult> {
    const { slug, content } = input;
    this.checkSlug(slug);
    const size = Buffer.byteLength(content, 'utf8');
    if (size > this.maxBytes) {
      throw new AppError('too_large', 'document_too_large', `a document holds at most ${this.maxBytes} bytes`, { limit: this.maxBytes, size });
    }
    const now = this.now();
    const author = input.editor?.id ?? input.author ?? 'live';
    const origin = input.origin ?? 'http';
    const result = await this.store.update<SaveResult>([K.doc(slug), K.lock(slug)], ([cur, lockRaw]) => {
      const doc = cur as Doc | undefined;
      const lock = lockRaw as Lock | undefined;
      // live co-editing is not refused by a lock (docs/collab.md "Locks"); form saves and restores are
      if (origin !== 'live') assertHolder(slug, lock, input.editor, now);
      if (doc && input.baseVersion !== undefined && input.baseVersion !== doc.version) {
        throw new AppError('conflict', 'version_conflict', `the document is at version ${doc.version}, not ${input.baseVersion}`, {
          current_version: doc.version,
          base_version: input.baseVersion,
          content: doc.content,
          title: doc.title,
          modified: doc.modified,
          author: doc.author,
        });
      }
      if (!doc && input.baseVersion !== undefined && input.baseVersion !== 0) {
        throw new AppError('conflict', 'version_conflict', `the document does not exist (base version must be 0)`, {
          current_version: 0,
          base_version: input.baseVersion,
          content: '',
          title: '',
        });
      }
      const category = input.category ?? doc?.category ?? 'general';
      const title = input.title ?? titleOf(content, slug);
      if (doc && doc.content === content && doc.title === title && doc.category === category) {
        return { writes: [], result: { doc, changed: false } };
      }
      const next: Doc = {
        slug,
        category,
        title,
        content,
        version: (doc?.version ?? 0) + 1,
        created: doc?.created ?? now,
        modified: now,
        author,
        size,
      };
      const version: Version = { version: next.version, title, category, content, modified: now, author, size };
      if (input.restoredFrom !== undefined) version.restored_from = input.restoredFrom;
      const writes: Write[] = [
        { op: 'set', key: K.doc(slug), value: next as unknown as Json },
        { op: 'push', key: K.versions(slug), value: version as unknown as Json, cap: MAX_VERSIONS },
        { op: 'index', key: K.docs, member: slug, score: now },
      ];
      return { writes, result: { doc: next, changed: true } };
    });
    if (result.changed) {
      this.indexDoc(result.doc);
      for (const h of this.savedHooks) h(result.doc, origin);
      const event = { type: 'saved', slug, version: result.doc.version, author, origin, title: result.doc.title, modified: result.doc.modified };
      this.publish(DOC_TOPIC(slug), event);
      this.publish(LIST_TOPIC, event);
    }
    return result;
  }

  async remove(slug: string, editor: Editor): Promise<{ deleted: true; slug: string }> {
    this.checkSlug(slug);
    const now = this.now();
    await this.store.update([K.doc(slug), K.lock(slug)], ([cur, lockRaw]) => {
      if (!cur) throw notFound('unknown_document', `no document ${slug}`, { slug });
      assertHolder(slug, lockRaw as Lock | undefined, editor, now);
      return {
        writes: [
          { op: 'del', key: K.doc(slug) },
          { op: 'del', key: K.versions(slug) },
          { op: 'del', key: K.lock(slug) },
          { op: 'unindex', key: K.docs, member: slug },
          { op: 'unindex', key: K.locks, member: slug },
        ],
        result: null,
      };
    });
    this.index.remove(slug);
    const event = { type: 'deleted', slug };
    this.publish(DOC_TOPIC(slug), event);
    this.publish(LIST_TOPIC, event);
    return { deleted: true, slug };
  }

  async list(category?: string): Promise<{ docs: ReturnType<typeof summary>[]; categories: Record<string, number> }> {
    const all = await this.all();
    const categories: Record<string, number> = {};
    for (const d of all) categories[d.category] = (categories[d.category] ?? 0) + 1;
    return { docs: all.filter((d) => !category || d.category === category).map(summary), categories };
  }

  /** Every document, most recently modified first. */
  private async all(): Promise<Doc[]> {
    const entries = await this.store.indexRange(K.docs, { reverse: true });
    const docs = await this.store.getMany<Doc & Json>(entries.map((e) => K.doc(e.member)));
    return docs.filter((d): d is Doc & Json => !!d);
  }

  async history(slug: string): Promise<{ slug: string; current: number; versions: Omit<Version, 'content'>[] }> {
    const doc = await this.get(slug);
    const versions = await this.store.range<Version & Json>(K.versions(slug));
    return {
      slug,
      current: doc.version,
      versions: versions.reverse().map((x) => {
        const { content: _c, ...v } = x as Version;
        return v;
      }),
    };
  }

  async version(slug: string, n: number): Promise<Version> {
    await this.get(slug);
    const versions = await this.store.range<Version & Json>(K.versions(slug));
    const v = versions.find((x) => x.version === n);
    if (!v) throw notFound('unknown_version', `${slug} keeps no version ${n}`, { slug, version: n, kept: versions.map((x) => x.version) });
    return v;
  }

  async restore(slug: string, n: number, editor: Editor): Promise<SaveResult> {
    const v = await this.version(slug, n);
    return this.save({ slug, content: v.content, title: v.title, category: v.category, editor, origin: 'restore', restoredFrom: n });
  }

  // ---- search -------------------------------------------------------------------------------

  /** Brings the local index up to date with the store (saves made on any process), then searches. */
  async search(q: string, category?: string): Promise<SearchHit[]> {
    await this.refreshIndex();
    return this.index.search(q, { category });
  }

  async refreshIndex(): Promise<void> {
    const entries = await this.store.indexRange(K.docs);
    const live = new Set(entries.map((e) => e.member));
    for (const slug of this.index.slugs()) if (!live.has(slug)) this.index.remove(slug);
    const stale = entries.filter((e) => !this.index.has(e.member, e.score, -1));
    if (stale.length === 0) return;
    const docs = await this.store.getMany<Doc & Json>(stale.map((e) => K.doc(e.member)));
    for (const d of docs) if (d) this.indexDoc(d);
  }

  private indexDoc(d: Doc): void {
    this.index.upsert({ ...d, version: -1 });
  }

  // ---- locks --------------------------------------------------------------------------------

  private lockView(lock: Lock | undefined, now: number) {
    if (!lock || lock.expires <= now) return { locked: false as const };
    return {
      locked: true as const,
      holder: lock.holder,
      holder_name: lock.holder_name ?? lock.holder,
      acquired_at: new Date(lock.acquired).toISOString(),
      expires_at: new Date(lock.expires).toISOString(),
      expires: lock.expires,
      remaining_ms: lock.expires - now,
      max_until: new Date(lock.acquired + LOCK_MAX_MS).toISOString(),
    };
  }

  /**
   * Acquire (unlocked or expired) or renew (the caller holds it): another 10 minutes from now, but
   * never past LOCK_MAX_MS after the acquisition; a renewal when the lock already runs to that
   * maximum is a 409 `lock_max_reached`. A lock request on a document someone else holds is a 423
   * `document_locked` naming the holder and the expiry; it does not queue.
   */
  async lock(slug: string, editor: Editor) {
    await this.get(slug);
    const now = this.now();
    const out = await this.store.update([K.lock(slug)], ([cur]) => {
      const lock = cur as Lock | undefined;
      const live = lock && lock.expires > now ? lock : undefined;
      if (live && live.holder !== editor.id) throw lockedError(slug, live);
      const renewed = !!live;
      const acquired = live ? live.acquired : now;
      const maxUntil = acquired + LOCK_MAX_MS;
      if (live && live.expires >= maxUntil) {
        throw new AppError('conflict', 'lock_max_reached', `a lock is held at most ${LOCK_MAX_MS / 60_000} minutes; this one ends at ${new Date(maxUntil).toISOString()}`, {
          acquired_at: new Date(acquired).toISOString(),
          max_until: new Date(maxUntil).toISOString(),
          max_ms: LOCK_MAX_MS,
        });
      }
      const next: Lock = { slug, holder: editor.id, holder_name: editor.name, acquired, expires: Math.min(now + LOCK_TTL_MS, maxUntil) };
      return {
        writes: [
          // the stored TTL only cleans up; validity is judged against the (injectable) clock
          { op: 'set', key: K.lock(slug), value: next as unknown as Json, ttlMs: LOCK_TTL_MS + 60_000 },
          { op: 'index', key: K.locks, member: slug, score: next.expires },
        ],
        result: { lock: next, renewed },
      };
    });
    const view = this.lockView(out.lock, now);
    this.publish(DOC_TOPIC(slug), { type: 'lock', slug, state: out.renewed ? 'renewed' : 'locked', ...view } as unknown as Json);
    this.publish(LIST_TOPIC, { type: 'lock', slug, state: out.renewed ? 'renewed' : 'locked' });
    return { ok: true, slug, renewed: out.renewed, ...view };
  }

  /**
   * Release by the holder; an operator may break anyone's lock (state `broken`). Another editor is
   * a 403 `not_lock_holder`; an unlocked (or expired) document is `released: false`.
   */
  async unlock(slug: string, editor: Editor) {
    this.checkSlug(slug);
    const now = this.now();
    const gone = await this.store.update([K.lock(slug)], ([cur]) => {
      const lock = cur as Lock | undefined;
      if (!lock || lock.expires <= now) return { writes: [], result: undefined };
      if (lock.holder !== editor.id && !editor.operator) {
        throw new AppError('forbidden', 'not_lock_holder', `the lock on ${slug} is held by ${lock.holder_name ?? lock.holder}; only the holder (or an operator) releases it`, {
          holder: lock.holder,
          expires_at: new Date(lock.expires).toISOString(),
        });
      }
      return { writes: [{ op: 'del', key: K.lock(slug) }, { op: 'unindex', key: K.locks, member: slug }], result: lock };
    });
    const broken = !!gone && gone.holder !== editor.id;
    if (gone) {
      const state = broken ? 'broken' : 'released';
      this.publish(DOC_TOPIC(slug), { type: 'lock', slug, state, locked: false, holder: gone.holder, ...(broken ? { broken_by: editor.id } : {}) });
      this.publish(LIST_TOPIC, { type: 'lock', slug, state });
    }
    return { ok: true, slug, released: !!gone, ...(broken ? { broken: true, holder: gone.holder } : {}), locked: false };
  }

  async lockState(slug: string) {
    this.checkSlug(slug);
    const lock = await this.store.get<Lock & Json>(K.lock(slug));
    return { slug, ...this.lockView(lock, this.now()) };
  }

  /**
   * Expires locks past their time and presence past 30 s, telling the room. Every process runs
   * it; the atomic update makes exactly one of them announce each expiry.
   */
  async sweep(): Promise<{ locks: number; peers: number }> {
    const now = this.now();
    let locks = 0;
    for (const e of await this.store.indexRange(K.locks, { max: now })) {
      const slug = e.member;
      const gone = await this.store.update([K.lock(slug)], ([cur]) => {
        const lock = cur as Lock | undefined;
        if (lock && lock.expires > now) return { writes: [{ op: 'index', key: K.locks, member: slug, score: lock.expires }], result: undefined };
        return { writes: [{ op: 'del', key: K.lock(slug) }, { op: 'unindex', key: K.locks, member: slug }], result: lock };
      });
      if (gone) {
        locks++;
        this.publish(DOC_TOPIC(slug), { type: 'lock', slug, state: 'expired', locked: false, holder: gone.holder });
        this.publish(LIST_TOPIC, { type: 'lock', slug, state: 'expired' });
      }
    }
    let peers = 0;
    for (const e of await this.store.indexRange(K.rooms, { max: now - PRESENCE_TIMEOUT_MS })) {
      const slug = e.member;
      const { removed, left } = await this.store.update([K.presence(slug)], ([cur]) => {
        const map = { ...((cur as Record<string, Peer> | undefined) ?? {}) };
        const removed: Peer[] = [];
        for (const [id, p] of Object.entries(map)) if (p.seen <= now - PRESENCE_TIMEOUT_MS) (removed.push(p), delete map[id]);
        const oldest = Math.min(...Object.values(map).map((p) => p.seen));
        const writes: Write[] = Object.keys(map).length
          ? [{ op: 'set', key: K.presence(slug), value: map as unknown as Json }, { op: 'index', key: K.rooms, member: slug, score: oldest }]
          : [{ op: 'del', key: K.presence(slug) }, { op: 'unindex', key: K.rooms, member: slug }];
        return { writes, result: { removed, left: Object.values(map) } };
      });
      for (const p of removed) {
        peers++;
        this.publish(DOC_TOPIC(slug), { type: 'presence', event: 'leave', slug, reason: 'timeout', peer: p, peers: left } as unknown as Json);
      }
    }
    return { locks, peers };
  }

  // ---- presence -----------------------------------------------------------------------------

  /** Join or heartbeat (every 15 s). The colour is the first palette colour no one else in the document has. */
  async presence(slug: string, editor: Editor, id?: string): Promise<{ id: string; color: string; peers: Peer[] }> {
    this.checkSlug(slug);
    const now = this.now();
    const pid = id ?? randomBytes(8).toString('hex');
    const name = editor.name;
    const out = await this.store.update([K.presence(slug)], ([cur]) => {
      const map = { ...((cur as Record<string, Peer> | undefined) ?? {}) };
      for (const [k, p] of Object.entries(map)) if (p.seen <= now - PRESENCE_TIMEOUT_MS) delete map[k];
      const existing = map[pid];
      if (existing && existing.user !== editor.id) throw notYours(slug);
      let joined = false;
      if (existing) {
        map[pid] = { ...existing, name, seen: now };
      } else {
        const used = new Set(Object.values(map).map((p) => p.color));
        const color = PALETTE.find((c) => !used.has(c)) ?? PALETTE[Object.keys(map).length % PALETTE.length]!;
        map[pid] = { id: pid, user: editor.id, name, color, joined: now, seen: now };
        joined = true;
      }
      const oldest = Math.min(...Object.values(map).map((p) => p.seen));
      return {
        writes: [
          { op: 'set', key: K.presence(slug), value: map as unknown as Json, ttlMs: PRESENCE_TIMEOUT_MS * 4 },
          { op: 'index', key: K.rooms, member: slug, score: oldest },
        ],
        result: { peer: map[pid]!, peers: Object.values(map), joined },
      };
    });
    if (out.joined) this.publish(DOC_TOPIC(slug), { type: 'presence', event: 'join', slug, peer: out.peer, peers: out.peers } as unknown as Json);
    return { id: pid, color: out.peer.color, peers: out.peers };
  }

  /** Leaves a presence entry: the person's own, or any for an operator. */
  async leave(slug: string, editor: Editor, id: string): Promise<{ left: boolean }> {
    this.checkSlug(slug);
    const out = await this.store.update([K.presence(slug)], ([cur]) => {
      const map = { ...((cur as Record<string, Peer> | undefined) ?? {}) };
      const peer = map[id];
      if (!peer) return { writes: [], result: undefined };
      if (peer.user !== editor.id && !editor.operator) throw notYours(slug);
      delete map[id];
      const writes: Write[] = Object.keys(map).length
        ? [{ op: 'set', key: K.presence(slug), value: map as unknown as Json, ttlMs: PRESENCE_TIMEOUT_MS * 4 }]
        : [{ op: 'del', key: K.presence(slug) }, { op: 'unindex', key: K.rooms, member: slug }];
      return { writes, result: { peer, peers: Object.values(map) } };
    });
    if (out) this.publish(DOC_TOPIC(slug), { type: 'presence', event: 'leave', slug, reason: 'left', peer: out.peer, peers: out.peers } as unknown as Json);
    return { left: !!out };
  }

  async peers(slug: string): Promise<Peer[]> {
    this.checkSlug(slug);
    const now = this.now();
    const map = ((await this.store.get(K.presence(slug))) ?? {}) as unknown as Record<string, Peer>;
    return Object.values(map).filter((p) => p.seen > now - PRESENCE_TIMEOUT_MS);
  }

  // ---- statistics ---------------------------------------------------------------------------

  async stats() {
    const now = this.now();
    const all = await this.all();
    const categories: Record<string, number> = {};
    for (const d of all) categories[d.category] = (categories[d.category] ?? 0) + 1;
    const lockEntries = await this.store.indexRange(K.locks, { min: now + 1 });
    const totalSize = all.reduce((a, d) => a + d.size, 0);
    return {
      categories,
      recent: all.slice(0, RECENT_EDITS).map((d) => ({ ...summary(d), modified_at: new Date(d.modified).toISOString() })),
      locks: lockEntries.length,
      totals: {
        documents: all.length,
        documents_this_week: all.filter((d) => d.modified > now - WEEK_MS).length,
        categories: Object.keys(categories).length,
        average_size: all.length ? Math.round(totalSize / all.length) : 0,
      },
    };
  }
}
