import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import { decodeList } from '../store/codec.js';
import type { Json, Store, Write } from '../store/port.js';
import { Locks } from './locks.js';
import {
  DOC_TOPIC, K, LIST_TOPIC, MAX_VERSIONS, RECENT_EDITS, WEEK_MS, assertHolder, checkSlug, docEvents, docRecords, lockRecords, summary, titleOf, versionRecords,
  type Doc, type DocEvent, type Editor, type SaveInput, type SaveResult, type Version,
} from './model.js';
import { Presence } from './presence.js';
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
  readonly locks: Locks;
  readonly presence: Presence;

  constructor(private readonly opts: CollabServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.maxBytes = opts.maxBytes;
    const parts = { store: opts.store, clock: opts.clock, publish: (topic: string, msg: Json) => this.opts.bus.emit(topic, msg) };
    this.locks = new Locks(parts);
    this.presence = new Presence(parts);
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
    const doc = docRecords.decode(await this.store.get(K.doc(slug)));
    if (!doc) throw notFound('unknown_document', `no document ${slug}`, { slug });
    return doc;
  }

  async find(slug: string): Promise<Doc | undefined> {
    return docRecords.decode(await this.store.get(K.doc(slug)));
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
      const doc = docRecords.decode(cur);
      const lock = lockRecords.decode(lockRaw);
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
        { op: 'set', key: K.doc(slug), value: docRecords.encode(next) },
        { op: 'push', key: K.versions(slug), value: versionRecords.encode(version), cap: MAX_VERSIONS },
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
      assertHolder(slug, lockRecords.decode(lockRaw), editor, now);
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
    return decodeList(docRecords, await this.store.getMany(entries.map((e) => K.doc(e.member))));
  }

  async history(slug: string): Promise<{ slug: string; current: number; versions: Omit<Version, 'content'>[] }> {
    const doc = await this.get(slug);
    const versions = decodeList(versionRecords, await this.store.range(K.versions(slug)));
    return {
      slug,
      current: doc.version,
      versions: versions.reverse().map(({ content: _c, ...v }) => v),
    };
  }

  async version(slug: string, n: number): Promise<Version> {
    await this.get(slug);
    const versions = decodeList(versionRecords, await this.store.range(K.versions(slug)));
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
    for (const d of decodeList(docRecords, await this.store.getMany(stale.map((e) => K.doc(e.member))))) this.indexDoc(d);
  }

  private indexDoc(d: Doc): void {
    this.index.upsert({ ...d, version: -1 });
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
