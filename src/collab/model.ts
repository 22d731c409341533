import { AppError } from '../errors.js';
import type { Clock } from '../clock.js';
import { codec, decodeList, F } from '../store/codec.js';
import type { PresenceEntry } from '../presence.js';
import { partitionKeyFor, partitionKeys, type Json, type Store } from '../store/port.js';
import type { Access, Viewer, Visibility } from './access.js';

/**
 * The document service's records, numbers and rules shared by its parts (docs/collab.md):
 * documents and versions (service.ts), locks (locks.ts), presence (presence.ts).
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
/**
 * The Bus topic of access changes between processes (`{type: 'access', slug, visibility}`, as on
 * `md:<slug>`): one topic every process follows, so each hears every change while it subscribes
 * only to the partitions its clients follow. No client topic: the hub does not serve it.
 */
export const ACCESS_TOPIC = 'collab:access';
export const WEEK_MS = 7 * 86_400_000;

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
  /** Who may read and change it (access.ts); absent on documents stored before access existed: a team document. */
  access?: Access;
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

/** A presence entry of a document (src/presence.ts; `user` is the identity behind it) with its name and colour. */
export type Peer = PresenceEntry & { name: string; color: string };

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
  /** The caller of a form save or restore: refused unless it may write the document (access.ts). */
  viewer?: Viewer;
  /** The visibility of a document this save creates (default team); ignored for an existing one. */
  visibility?: Visibility;
  /** The owner of a document this save creates, when no `editor` saves it (a live save: its first author). */
  owner?: string;
}

export interface SaveResult {
  doc: Doc;
  changed: boolean;
}

/** What the service announces on the Bus (`md:<slug>`, `md:all`): saves, deletions, locks, presence. */
export type DocEvent = { type: string; slug: string } & Record<string, unknown>;

/** The stored records of documents (src/store/codec.ts), and the events the Bus carries and keeps. */
export const docRecords = codec<Doc>('document', (r) => typeof r.slug === 'string' && typeof r.content === 'string' && typeof r.version === 'number');
export const versionRecords = codec<Version>('document version', (r) => typeof r.version === 'number' && typeof r.content === 'string');
export const lockRecords = codec<Lock>('document lock', (r) => typeof r.holder === 'string' && typeof r.expires === 'number');
export const presenceRecords = codec<Record<string, Peer>>('document presence', (r) =>
  Object.values(r).every((p) => F.obj(p) && typeof p.user === 'string' && typeof p.seen === 'number' && typeof p.name === 'string' && typeof p.color === 'string'),
);
export const docEvents = codec<DocEvent>('document event', (r) => typeof r.type === 'string');

/**
 * Store keys (docs/partitions.md): a document is one aggregate, `md:doc:<slug>`; its versions, lock,
 * comments and share links are keys under it, so a save, a lock change, a comment and a link change
 * are each one update of one partition. The list of documents and the lock index are per partition
 * (`md:docs:{#p}`, `md:locks:{#p}`, in the document's partition), merged on read.
 */
export const K = {
  doc: (s: string) => `md:doc:${s}`,
  versions: (s: string) => `md:doc:${s}:versions`,
  lock: (s: string) => `md:doc:${s}:lock`,
  presence: (s: string) => `md:presence:${s}`,
  links: (s: string) => `md:doc:${s}:links`,
  comments: (s: string) => `md:doc:${s}:comments`,
  /** The documents of the partition of `md:doc:<s>`, by modification time. */
  docs: (s: string) => partitionKeyFor('md:docs', `md:doc:${s}`),
  /** Live locks of the partition of `md:doc:<s>`, by expiry. */
  locks: (s: string) => partitionKeyFor('md:locks', `md:doc:${s}`),
  rooms: 'md:presence-rooms',
};

/**
 * The keys of the global layout written before the partitions: still read (merged, or as the
 * fallback of an absent new key) and cleaned as the document is written; never written again.
 */
export const OLD = {
  versions: (s: string) => `md:versions:${s}`,
  lock: (s: string) => `md:lock:${s}`,
  links: (s: string) => `md:links:${s}`,
  comments: (s: string) => `md:comments:${s}`,
  docs: 'md:docs',
  locks: 'md:locks',
};

/**
 * A document's kept versions, oldest first: those of the global layout (older), then its own; the
 * last MAX_VERSIONS.
 */
export async function readVersions(store: Store, slug: string): Promise<Version[]> {
  const [old, own] = await Promise.all([store.range(OLD.versions(slug)), store.range(K.versions(slug))]);
  return decodeList(versionRecords, [...old, ...own]).slice(-MAX_VERSIONS);
}

/**
 * The lock a document had in the global layout, read before an update of the document (nothing
 * writes it any more: it can only go, so what was read stays true or becomes stale in its favour).
 */
export async function oldLock(store: Store, slug: string): Promise<Lock | undefined> {
  return lockRecords.decode(await store.get(OLD.lock(slug)));
}

/** Drops a document's lock of the global layout (after the update that took its place). */
export async function dropOldLock(store: Store, slug: string): Promise<void> {
  await store.del(OLD.lock(slug));
  await store.unindex(OLD.locks, slug);
}

/** Every part of a per-partition index of documents, with the global one of before last. */
export const allParts = (name: 'md:docs' | 'md:locks'): string[] => [...partitionKeys(name), name];

export function lockedError(slug: string, lock: Lock): AppError {
  const holder = lock.holder_name ?? lock.holder;
  return new AppError('locked', 'document_locked', `${slug} is locked by ${holder} until ${new Date(lock.expires).toISOString()}`, {
    holder: lock.holder,
    holder_name: holder,
    expires_at: new Date(lock.expires).toISOString(),
    expires: lock.expires,
  });
}

export const notYours = (slug: string) => new AppError('forbidden', 'not_your_presence', `that presence entry of ${slug} belongs to someone else`);

/** A live lock held by someone other than `editor` refuses the write (operators too: they break it first). */
export function assertHolder(slug: string, lock: Lock | undefined, editor: Editor | undefined, now: number): void {
  if (lock && lock.expires > now && lock.holder !== editor?.id) throw lockedError(slug, lock);
}

export function titleOf(content: string, slug: string): string {
  const m = /^#{1,2}\s+(.+)$/m.exec(content);
  return (m?.[1] ?? slug).trim().slice(0, 200);
}

export const summary = (d: Doc) => ({
  slug: d.slug,
  title: d.title,
  category: d.category,
  version: d.version,
  modified: d.modified,
  author: d.author,
  size: d.size,
});

export function checkSlug(slug: string): void {
  if (!SLUG_RE.test(slug)) throw new AppError('invalid', 'invalid_slug', 'a slug is 1-80 of a-z 0-9 한글 _ - (no path characters)');
}

/** What the parts of the service share: the store, the clock and the Bus's emit. */
export interface Parts {
  store: Store;
  clock: Clock;
  publish(topic: string, msg: Json): void;
}

/** A part of the service (locks, presence) over the shared store, clock and Bus. */
export abstract class Part {
  constructor(protected readonly parts: Parts) {}

  protected get store(): Store {
    return this.parts.store;
  }

  protected now(): number {
    return this.parts.clock.now();
  }

  protected publish(topic: string, msg: Json): void {
    this.parts.publish(topic, msg);
  }
}
