import { followAlways, type Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import { decodeList } from '../store/codec.js';
import { mergedIndexRange, type Json, type Store, type Write } from '../store/port.js';
import { Locks } from './locks.js';
import {
  ACCESS_TOPIC, DOC_TOPIC, K, LIST_TOPIC, MAX_VERSIONS, OLD, RECENT_EDITS, WEEK_MS, allParts, assertHolder, checkSlug, docEvents, docRecords, dropOldLock, lockRecords, oldLock, readVersions, summary, titleOf, versionRecords,
  type Doc, type DocEvent, type Editor, type SaveInput, type SaveResult, type Version,
} from './model.js';
import { Presence } from './presence.js';
import { Links } from './links.js';
import { Comments } from './comments.js';
import { DEFAULT_ACCESS, MAX_NAMED, accessOf, assertManage, assertRead, assertWrite, rights, type Access, type Viewer, type Visibility } from './access.js';
import { SearchIndex, type SearchHit } from './search.js';

export * from './model.js';

/**
 * The document collaboration service (docs/collab.md): documents, versions, search and
 * statistics here; locks (`locks`, locks.ts) and presence (`presence`, presence.ts) are its parts.
 * Every write is one atomic Store.update; events go out on the Bus (topic `md:<slug>` for one
 * document, `md:all` for the list).
 */


export interface CollabServiceOptions {
  store: Store;
  clock: Clock;
  /**
   * Where events go out; with `onMessage` (and `follow`, a Bus shared between processes), the
   * access changes made on every process sharing it are followed here from `start` (`followAccess`).
   */
  bus: Pick<Bus, 'emit'> & Partial<Pick<Bus, 'onMessage' | 'follow'>>;
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
  readonly locks: Locks;
  readonly presence: Presence;
  readonly links: Links;
  readonly comments: Comments;

  constructor(private readonly opts: CollabServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.maxBytes = opts.maxBytes;
    const parts = {
      store: opts.store,
      clock: opts.clock,
      // the list's channel is open to everyone: what the parts (locks) say of a private document stays on its own topic
      publish: (topic: string, msg: Json) => {
        const slug = (msg as { slug?: unknown } | null)?.slug;
        if (topic === LIST_TOPIC && typeof slug === 'string' && this.privateSlugs.has(slug)) return;
        this.opts.bus.emit(topic, msg);
      },
    };
    this.locks = new Locks(parts);
    this.presence = new Presence(parts);
    this.links = new Links(parts);
    this.comments = new Comments(parts);
  }

  private sweeper?: NodeJS.Timeout;
  private unfollow?: () => void;
  private unfollowBus?: () => void;

  /**
   * An access change heard on the Bus (`{type: 'access', slug, visibility}` on ACCESS_TOPIC, sent
   * there as well as on `md:<slug>`), made on any process sharing it: what this process knows of the document's privacy is read again
   * from the store (the record decides, whatever order the messages came in), then the access
   * hooks run (the /ws subscriptions and the live rooms re-judged here). The process that made the
   * change hears its own message too and judges again: nothing more ends.
   */
  private followAccess(topic: string, message: Json): void {
    if (topic !== ACCESS_TOPIC || typeof message !== 'object' || message === null || Array.isArray(message)) return;
    const { type, slug, visibility } = message as { type?: unknown; slug?: unknown; visibility?: unknown };
    if (type !== 'access' || typeof slug !== 'string') return;
    // at once from the message (the list's replay), then from the record
    if (visibility === 'private') this.privateSlugs.add(slug);
    else this.privateSlugs.delete(slug);
    this.find(slug).then(
      () => {
        for (const h of this.accessHooks) h(slug);
      },
      (err) => this.opts.logger?.warn({ err, slug }, 'document access change not followed'),
    );
  }

  /**
   * The private documents this process has read or written (kept current by every read of a
   * document record here): what the parts (locks) say of them stays off the list's channel, which
   * everyone may hear. The lock routes read the document first, so its entry is current there.
   */
  private readonly privateSlugs = new Set<string>();

  private note<T extends Doc | undefined>(doc: T): T {
    if (doc) {
      if (accessOf(doc).visibility === 'private') this.privateSlugs.add(doc.slug);
      else this.privateSlugs.delete(doc.slug);
    }
    return doc;
  }

  /** Sweeps lock expiry and presence time-outs every `everyMs`, and follows the Bus's access changes. */
  start(everyMs: number): void {
    // the access changes made on every process (followAccess)
    this.unfollow ??= this.opts.bus.onMessage?.(({ topic, message }) => this.followAccess(topic, message));
    const bus = this.opts.bus;
    if (bus.follow && this.unfollow) this.unfollowBus ??= followAlways(bus as Pick<Bus, 'follow'>, ACCESS_TOPIC, (obj, msg) => this.opts.logger?.warn(obj, msg));
    // which documents are private, known from the start (the list channel's replay leaves them out)
    void this.list(undefined).catch((err) => this.opts.logger?.warn({ err }, 'documents not read at start'));
    this.sweeper ??= setInterval(() => {
      this.sweep().catch((err) => this.opts.logger?.warn({ err }, 'document sweep failed'));
    }, everyMs);
    this.sweeper.unref();
  }

  close(): void {
    this.unfollow?.();
    this.unfollow = undefined;
    this.unfollowBus?.();
    this.unfollowBus = undefined;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Called on every save on this process (the Yjs rooms follow HTTP saves through it). */
  onSaved(fn: (doc: Doc, origin: string) => void): () => void {
    this.savedHooks.add(fn);
    return () => this.savedHooks.delete(fn);
  }

  private publish(topic: string, event: DocEvent): void {
    this.opts.bus.emit(topic, docEvents.encode(event));
  }

  private now(): number {
    return this.clock.now();
  }

  checkSlug(slug: string): void {
    checkSlug(slug);
  }

  /**
   * Expires locks past their time and presence past 30 s, telling the room. Every process runs
   * it; the atomic updates make exactly one of them announce each expiry.
   */
  async sweep(): Promise<{ locks: number; peers: number }> {
    return { locks: await this.locks.sweep(), peers: await this.presence.sweep() };
  }

  // ---- documents ----------------------------------------------------------------------------

  async get(slug: string): Promise<Doc> {
    this.checkSlug(slug);
    const doc = this.note(docRecords.decode(await this.store.get(K.doc(slug))));
    if (!doc) throw notFound('unknown_document', `no document ${slug}`, { slug });
    return doc;
  }

  /** The document, when `viewer` may read it (access.ts: 401 without a credential, 403 with one). */
  async read(slug: string, viewer: Viewer | undefined): Promise<Doc> {
    const doc = await this.get(slug);
    assertRead(accessOf(doc), slug, viewer);
    return doc;
  }

  /**
   * What `viewer` may do with a document: read, comment, write, manage. A document that does not
   * exist yet may be made by any editor (its owner), so it answers as a team document.
   */
  async rightsOf(slug: string, viewer: Viewer | undefined): Promise<ReturnType<typeof rights> & { exists: boolean }> {
    this.checkSlug(slug);
    const doc = await this.find(slug);
    return { ...rights(accessOf(doc), slug, viewer), exists: !!doc };
  }

  /** Refuses `viewer` unless it may read `slug` (an unsaved document reads as a team one). */
  async assertCanRead(slug: string, viewer: Viewer | undefined): Promise<void> {
    this.checkSlug(slug);
    assertRead(accessOf(await this.find(slug)), slug, viewer);
  }

  /** Refuses `viewer` unless it may write `slug` (an unsaved document: any editor may make it). */
  async assertCanWrite(slug: string, viewer: Viewer | undefined): Promise<void> {
    this.checkSlug(slug);
    assertWrite(accessOf(await this.find(slug)), slug, viewer);
  }

  /** The access of a document and what the caller may do with it (any reader may see it). */
  async access(slug: string, viewer: Viewer | undefined): Promise<{ slug: string; access: Access; can: ReturnType<typeof rights> }> {
    const doc = await this.read(slug, viewer);
    const access = accessOf(doc);
    return { slug, access: { ...access, owner: access.owner }, can: rights(access, slug, viewer) };
  }

  /**
   * Changes who may read and write a document: its owner or an operator (403 `not_owner` for
   * anyone else). One atomic update of the document's record; the version does not change.
   */
  async setAccess(
    slug: string,
    change: { visibility?: Visibility; editors?: string[]; readers?: string[]; owner?: string },
    viewer: Viewer | undefined,
  ): Promise<{ slug: string; access: Access }> {
    this.checkSlug(slug);
    const access = await this.store.update<Access>([K.doc(slug)], ([cur]) => {
      const doc = docRecords.decode(cur);
      if (!doc) throw notFound('unknown_document', `no document ${slug}`, { slug });
      const before = accessOf(doc);
      assertManage(before, slug, viewer);
      if (change.owner !== undefined && change.owner !== before.owner && !viewer?.roles.includes('operator')) {
        throw new AppError('forbidden', 'not_owner', 'only an operator gives a document another owner', { slug });
      }
      const uniq = (xs: string[]) => [...new Set(xs)];
      const next: Access = {
        visibility: change.visibility ?? before.visibility,
        editors: uniq(change.editors ?? before.editors),
        readers: uniq(change.readers ?? before.readers),
      };
      const owner = change.owner ?? before.owner;
      if (owner !== undefined) next.owner = owner;
      if (next.editors.length > MAX_NAMED || next.readers.length > MAX_NAMED) {
        throw new AppError('invalid', 'too_many_names', `a document names at most ${MAX_NAMED} editors and ${MAX_NAMED} readers`, { limit: MAX_NAMED });
      }
      // a person is an editor or a reader, not both: the stronger wins
      next.readers = next.readers.filter((r) => !next.editors.includes(r));
      return { writes: [{ op: 'set', key: K.doc(slug), value: docRecords.encode({ ...doc, access: next }) }], result: next };
    });
    if (access.visibility === 'private') this.privateSlugs.add(slug);
    else this.privateSlugs.delete(slug);
    this.publish(DOC_TOPIC(slug), { type: 'access', slug, visibility: access.visibility });
    this.opts.bus.emit(ACCESS_TOPIC, { type: 'access', slug, visibility: access.visibility });
    for (const h of this.accessHooks) h(slug);
    return { slug, access };
  }

  /**
   * Whether a document is private as far as this process knows (every read or access change here
   * keeps it current; `start` reads them all): what the list's channel replays leaves it out.
   */
  isPrivate(slug: string): boolean {
    return this.privateSlugs.has(slug);
  }

  private readonly accessHooks = new Set<(slug: string) => void>();

  /**
   * Called on every access change of a document: at once when made on this process, and when its
   * `access` message comes over the Bus from any process (`followAccess`); the live rooms and the
   * /ws topic subscriptions re-judge their peers.
   */
  onAccessChanged(fn: (slug: string) => void): () => void {
    this.accessHooks.add(fn);
    return () => this.accessHooks.delete(fn);
  }

  async find(slug: string): Promise<Doc | undefined> {
    return this.note(docRecords.decode(await this.store.get(K.doc(slug))));
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
    // a lock of the global layout is honoured too (read first: nothing writes it any more)
    const old = origin === 'live' ? undefined : await oldLock(this.store, slug);
    const result = await this.store.update<SaveResult>([K.doc(slug), K.lock(slug)], ([cur, lockRaw]) => {
      const doc = docRecords.decode(cur);
      const lock = lockRecords.decode(lockRaw) ?? old;
      // live co-editing is not refused by a lock (docs/collab.md "Locks"); form saves and restores are
      if (input.viewer) assertWrite(accessOf(doc), slug, input.viewer);
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
      const access: Access = doc ? { ...accessOf(doc) } : { ...DEFAULT_ACCESS, visibility: input.visibility ?? 'team' };
      const owner = doc ? access.owner : (input.editor?.id ?? input.owner);
      if (owner !== undefined) access.owner = owner;
      if (doc?.access || !doc) next.access = access;
      const version: Version = { version: next.version, title, category, content, modified: now, author, size };
      if (input.restoredFrom !== undefined) version.restored_from = input.restoredFrom;
      const writes: Write[] = [
        { op: 'set', key: K.doc(slug), value: docRecords.encode(next) },
        { op: 'push', key: K.versions(slug), value: versionRecords.encode(version), cap: MAX_VERSIONS },
        { op: 'index', key: K.docs(slug), member: slug, score: now },
      ];
      return { writes, result: { doc: next, changed: true } };
    });
    this.note(result.doc);
    if (result.changed) {
      // its entry of the global layout, if any, is moved: the partition's index now lists it
      await this.store.unindex(OLD.docs, slug);
      this.indexDoc(result.doc);
      for (const h of this.savedHooks) h(result.doc, origin);
      const event = { type: 'saved', slug, version: result.doc.version, author, origin, title: result.doc.title, modified: result.doc.modified };
      this.publish(DOC_TOPIC(slug), event);
      // the list's channel is open to everyone: a private document's events stay on its own topic
      if (accessOf(result.doc).visibility !== 'private') this.publish(LIST_TOPIC, event);
    }
    return result;
  }

  async remove(slug: string, editor: Editor, viewer?: Viewer): Promise<{ deleted: true; slug: string }> {
    this.checkSlug(slug);
    const now = this.now();
    const old = await oldLock(this.store, slug);
    const visibility = await this.store.update([K.doc(slug), K.lock(slug)], ([cur, lockRaw]) => {
      const doc = docRecords.decode(cur);
      if (!doc) throw notFound('unknown_document', `no document ${slug}`, { slug });
      if (viewer) assertWrite(accessOf(doc), slug, viewer);
      assertHolder(slug, lockRecords.decode(lockRaw) ?? old, editor, now);
      return {
        writes: [
          { op: 'del', key: K.doc(slug) },
          { op: 'del', key: K.versions(slug) },
          { op: 'del', key: K.lock(slug) },
          { op: 'del', key: K.links(slug) },
          { op: 'del', key: K.comments(slug) },
          { op: 'unindex', key: K.docs(slug), member: slug },
          { op: 'unindex', key: K.locks(slug), member: slug },
        ],
        result: accessOf(doc).visibility,
      };
    });
    // what the global layout kept of it goes too (each its own step: they are other aggregates)
    await dropOldLock(this.store, slug);
    for (const key of [OLD.versions(slug), OLD.links(slug), OLD.comments(slug)]) await this.store.del(key);
    await this.store.unindex(OLD.docs, slug);
    this.index.remove(slug);
    this.privateSlugs.delete(slug);
    const event = { type: 'deleted', slug };
    this.publish(DOC_TOPIC(slug), event);
    if (visibility !== 'private') this.publish(LIST_TOPIC, event);
    return { deleted: true, slug };
  }

  /** The documents `viewer` may read (undefined: everyone's, for the service itself). */
  async list(category?: string, viewer?: Viewer | null): Promise<{ docs: ReturnType<typeof summary>[]; categories: Record<string, number> }> {
    const all = await this.all(viewer);
    const categories: Record<string, number> = {};
    for (const d of all) categories[d.category] = (categories[d.category] ?? 0) + 1;
    return { docs: all.filter((d) => !category || d.category === category).map(summary), categories };
  }

  /**
   * Every document, most recently modified first; given a viewer (null: nobody signed in), only
   * those it may read.
   */
  private async all(viewer?: Viewer | null): Promise<Doc[]> {
    const entries = await mergedIndexRange(this.store, allParts('md:docs'), { reverse: true });
    const docs = decodeList(docRecords, await this.store.getMany(entries.map((e) => K.doc(e.member))));
    for (const d of docs) this.note(d);
    if (viewer === undefined) return docs;
    return docs.filter((d) => rights(accessOf(d), d.slug, viewer ?? undefined).read);
  }

  async history(slug: string, viewer?: Viewer | null): Promise<{ slug: string; current: number; versions: Omit<Version, 'content'>[] }> {
    const doc = viewer === undefined ? await this.get(slug) : await this.read(slug, viewer ?? undefined);
    const versions = await readVersions(this.store, slug);
    return {
      slug,
      current: doc.version,
      versions: versions.reverse().map(({ content: _c, ...v }) => v),
    };
  }

  /** A document's current text and every kept version's (undefined: no such document); the image collection reads them. */
  async texts(slug: string): Promise<string[] | undefined> {
    const doc = docRecords.decode(await this.store.get(K.doc(slug)));
    if (!doc) return undefined;
    const versions = await readVersions(this.store, slug);
    return [doc.content, ...versions.map((v) => v.content)];
  }

  async version(slug: string, n: number, viewer?: Viewer | null): Promise<Version> {
    if (viewer === undefined) await this.get(slug);
    else await this.read(slug, viewer ?? undefined);
    const versions = await readVersions(this.store, slug);
    const v = versions.find((x) => x.version === n);
    if (!v) throw notFound('unknown_version', `${slug} keeps no version ${n}`, { slug, version: n, kept: versions.map((x) => x.version) });
    return v;
  }

  async restore(slug: string, n: number, editor: Editor, viewer?: Viewer): Promise<SaveResult> {
    if (viewer) await this.assertCanWrite(slug, viewer);
    const v = await this.version(slug, n);
    return this.save({ slug, content: v.content, title: v.title, category: v.category, editor, viewer, origin: 'restore', restoredFrom: n });
  }

  // ---- search -------------------------------------------------------------------------------

  /** Brings the local index up to date with the store (saves made on any process), then searches. */
  async search(q: string, category?: string, viewer?: Viewer | null): Promise<SearchHit[]> {
    await this.refreshIndex();
    const hits = this.index.search(q, { category });
    if (viewer === undefined || hits.length === 0) return hits;
    // judged on the stored records (an access change moves no modification time the index follows)
    const docs = docRecords.decodeMany(await this.store.getMany(hits.map((h) => K.doc(h.slug))));
    return hits.filter((h, i) => docs[i] && rights(accessOf(docs[i]), h.slug, viewer ?? undefined).read);
  }

  async refreshIndex(): Promise<void> {
    // newest first, so a document listed in the global index of before and in its partition's counts by its latest time
    const entries = await mergedIndexRange(this.store, allParts('md:docs'), { reverse: true });
    const live = new Set(entries.map((e) => e.member));
    for (const slug of this.index.slugs()) if (!live.has(slug)) this.index.remove(slug);
    const stale = entries.filter((e) => !this.index.has(e.member, e.score, -1));
    if (stale.length === 0) return;
    for (const d of decodeList(docRecords, await this.store.getMany(stale.map((e) => K.doc(e.member))))) this.indexDoc(d);
  }

  private indexDoc(d: Doc): void {
    this.index.upsert({ ...d, version: -1 });
  }


  // ---- statistics ---------------------------------------------------------------------------

  async stats(viewer?: Viewer | null) {
    const now = this.now();
    const all = await this.all(viewer);
    const categories: Record<string, number> = {};
    for (const d of all) categories[d.category] = (categories[d.category] ?? 0) + 1;
    const readable = new Set(all.map((d) => d.slug));
    const lockEntries = (await mergedIndexRange(this.store, allParts('md:locks'), { min: now + 1 })).filter((e) => viewer === undefined || readable.has(e.member));
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
