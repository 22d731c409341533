import type { Logger } from 'pino';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import { systemClock, type Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { Store, Unsubscribe } from '../store/port.js';
import { Debounce, DocStore, UNSAVED_FLUSH } from './persistence.js';
import { Relay, type RoomTransport } from './relay.js';
import { Room, reconcile, type Fanout, type Peer } from './room.js';
import { SLUG_RE, type CollabService, type Doc } from './service.js';
import { accessOf, rights, type Viewer } from './access.js';
import type { Anchor } from './comments.js';

export { applyDiff, reconcile, type Peer } from './room.js';
export { busTransport, type RoomTransport } from './relay.js';

/**
 * Live co-editing (docs/collab.md "Yjs"): the rooms of this process. Each loaded document is a Room
 * (room.ts: Y.Doc + awareness + peers) whose Y.Text 'content' IS the markdown document.
 *
 * - Peers are whatever implements Peer (the hub adapts WebSockets to it): no sockets here.
 * - A peer's update is applied and fanned out at once, then appended to the document's update log
 *   in the Store (persistence.ts, group commit): readers never wait on the disk; what kill -9 can
 *   lose, and who sends it again, is in docs/collab.md ("What a crash can lose").
 * - Saves are debounced (after the last edit, at most a maximum wait after the first, on the
 *   injected Clock): the state is compacted into the Store and saved as a markdown version when the
 *   text changed.
 * - Across processes: the relay (relay.ts) over the Bus, with state-vector anti-entropy.
 * - A room unloads (after a save) when its last local peer leaves; close() saves all.
 */

export interface RoomsOptions {
  store: Store;
  service: CollabService;
  origin: string;
  logger: Logger;
  debounceMs: number;
  maxDelayMs: number;
  resyncMs: number;
  transport: RoomTransport;
  clock?: Clock;
}

export type { Fanout } from './room.js';

interface Entry {
  room: Room;
  ready: Promise<void>;
  loaded: boolean;
  closed: boolean;
  save: Debounce;
  unsaved: number;
  /** Peers opened on this room (joined, or waiting for it to load). */
  peers: number;
  persisting: Promise<void>;
  unsubscribe?: Unsubscribe;
  resync?: NodeJS.Timeout;
}

export class Rooms {
  private readonly rooms = new Map<string, Entry>();
  private readonly peers = new Map<Peer, Entry>();
  /** What the access rules know of each peer that came with an identity (module.ts). */
  private readonly viewers = new Map<Peer, Viewer>();
  private readonly docs: DocStore;
  private readonly relay: Relay;
  private readonly clock: Clock;
  private stopping = false;
  private fanout?: Fanout;

  constructor(private readonly opts: RoomsOptions) {
    this.docs = new DocStore(opts.store);
    this.clock = opts.clock ?? systemClock;
    this.relay = new Relay(opts.transport, opts.origin, (o, m) => opts.logger.warn(o, m));
    opts.service.onAccessChanged((slug) => {
      const e = this.rooms.get(slug);
      if (e?.loaded && !e.closed) void this.rejudge(e);
    });
    opts.service.onSaved((doc, origin) => {
      if (origin !== 'live') this.applyExternal(doc).catch((err) => opts.logger.warn({ err, slug: doc.slug }, 'external save not applied to the live document'));
    });
  }

  /** Native fan-out to the peers of a room (the hub's groups); without it, one send per peer. */
  useFanout(fanout: Fanout): void {
    this.fanout = fanout;
  }

  get loaded(): string[] {
    return [...this.rooms.keys()];
  }

  text(slug: string): string | undefined {
    return this.rooms.get(slug)?.room.text;
  }

  /** Checks a room name before a connection is accepted. */
  check(slug: string | undefined): string {
    if (!slug || !SLUG_RE.test(slug)) throw new AppError('invalid', 'invalid_slug', 'a slug is 1-80 of a-z 0-9 한글 _ - (no path characters)');
    if (this.stopping) throw new AppError('unavailable', 'shutting_down', 'the server is shutting down');
    return slug;
  }

  /**
   * A peer joins a room; `who` is its signed-in identity (the author of its edits), `viewer` what
   * the access rules know of it (re-judged while it stays: rejudge), `readOnly` whether it may only read.
   */
  open(peer: Peer, slug: string, who?: string, access?: { viewer: Viewer; readOnly: boolean }): void {
    const e = this.entry(slug);
    this.peers.set(peer, e);
    if (access) this.viewers.set(peer, access.viewer);
    e.peers++;
    e.ready.then(
      () => {
        if (this.peers.get(peer) === e) e.room.join(peer, who, access?.readOnly ?? false);
      },
      () => peer.close(1011, 'room failed to load'),
    );
  }

  message(peer: Peer, data: Uint8Array): void {
    const e = this.peers.get(peer);
    if (!e) return;
    if (e.loaded) e.room.receive(peer, data);
    else e.ready.then(() => e.room.receive(peer, data), () => undefined);
  }

  leave(peer: Peer): void {
    const e = this.peers.get(peer);
    if (!e) return;
    this.peers.delete(peer);
    this.viewers.delete(peer);
    e.peers--;
    e.room.leave(peer);
    if (e.peers === 0) void this.unload(e);
  }

  /**
   * Judges the room's peers against the document's access as it is now: one that may no longer
   * read is closed (4403), one that may no longer write reads only, one given the right writes.
   * On every access change made here at once, and on every resync tick (changes made on another process).
   */
  private async rejudge(e: Entry): Promise<void> {
    const members = e.room.members.filter(([p]) => this.viewers.has(p));
    if (members.length === 0) return;
    let access;
    try {
      access = accessOf(await this.opts.service.find(e.room.slug));
    } catch (err) {
      this.opts.logger.warn({ err, slug: e.room.slug }, 'access not re-judged');
      return;
    }
    for (const [peer, readOnly] of members) {
      const can = rights(access, e.room.slug, this.viewers.get(peer));
      if (!can.read) e.room.expel(peer, 'forbidden: you may no longer read this document');
      else if (readOnly === can.write) e.room.setReadOnly(peer, !can.write);
    }
  }

  // ---- comment anchors (comments.ts) ----------------------------------------------------------

  /**
   * Runs `fn` on the document's live Yjs state: the loaded room's, or the stored state (made
   * from the markdown and stored first when there is none yet, so later saves are diffs against
   * the very items an anchor names).
   */
  private async withDoc<T>(slug: string, fn: (doc: Y.Doc) => T): Promise<T> {
    const e = this.rooms.get(slug);
    if (e && !e.closed) {
      await e.ready;
      return fn(e.room.doc);
    }
    const md = await this.opts.service.find(slug);
    if (md) await this.docs.amend(slug, (state) => reconcile(slug, state, md.content));
    const tmp = new Y.Doc();
    try {
      const state = await this.docs.load(slug);
      if (state) Y.applyUpdate(tmp, state);
      return fn(tmp);
    } finally {
      tmp.destroy();
    }
  }

  /** An anchor for characters [from, to) of the document's text now (400 `invalid_range` outside it). */
  makeAnchor(slug: string, from: number, to: number): Promise<Anchor> {
    return this.withDoc(slug, (doc) => {
      const text = doc.getText('content');
      if (!(from < to && to <= text.length)) {
        throw new AppError('invalid', 'invalid_range', `a comment's range is a non-empty part of the text (0 to ${text.length})`, { from, to, length: text.length });
      }
      const rel = (i: number, assoc: number) => Buffer.from(Y.encodeRelativePosition(Y.createRelativePositionFromTypeIndex(text, i, assoc))).toString('base64');
      return { start: rel(from, 0), end: rel(to, -1), quote: text.toString().slice(from, to) };
    });
  }

  /**
   * Where each anchor is in the text now: `{from, to, text}`, or `orphaned` when its text is
   * gone (deleted, or replaced by a restore) or it names nothing of this document.
   */
  resolveAnchors(slug: string, anchors: Anchor[]): Promise<({ from: number; to: number; text: string; orphaned: false } | { orphaned: true })[]> {
    return this.withDoc(slug, (doc) => {
      const text = doc.getText('content');
      const s = text.toString();
      const at = (b64: string) => {
        try {
          const abs = Y.createAbsolutePositionFromRelativePosition(Y.decodeRelativePosition(Buffer.from(b64, 'base64')), doc);
          return abs && abs.type === text ? abs.index : undefined;
        } catch {
          return undefined;
        }
      };
      return anchors.map((a) => {
        const from = at(a.start);
        const to = at(a.end);
        if (from === undefined || to === undefined || to <= from) return { orphaned: true as const };
        return { from, to, text: s.slice(from, to), orphaned: false as const };
      });
    });
  }

  // ---- rooms --------------------------------------------------------------------------------

  private entry(slug: string): Entry {
    const found = this.rooms.get(slug);
    if (found) return found;
    const e = { loaded: false, closed: false, unsaved: 0, peers: 0, persisting: Promise.resolve() } as Entry;
    e.room = new Room(slug, {
      persistUpdates: (us) => this.docs.appendAll(slug, us),
      relayUpdate: (u) => {
        if (e.loaded && !e.closed) void this.relay.update(slug, u);
      },
      relayAwareness: (u) => {
        if (e.loaded && !e.closed) void this.relay.awareness(slug, u);
      },
      changed: () => {
        e.save.touch();
        if (++e.unsaved >= UNSAVED_FLUSH) void this.flush(e);
      },
      warn: (o, m) => this.opts.logger.warn(o, m),
      fanout: this.fanout,
      // live edits stay within the size a saved document may have, so every accepted edit is saved
      maxTextBytes: this.opts.service.maxBytes,
    });
    e.save = new Debounce(this.clock, this.opts.debounceMs, this.opts.maxDelayMs, () => void this.flush(e));
    this.rooms.set(slug, e);
    e.ready = this.load(e);
    return e;
  }

  private async load(e: Entry): Promise<void> {
    const slug = e.room.slug;
    const [state, md] = await Promise.all([this.docs.load(slug), this.opts.service.find(slug)]);
    if (state) e.room.apply(state, 'load');
    if (md) {
      const fix = reconcile(slug, state, md.content);
      if (fix) e.room.apply(fix, 'load');
    }
    e.unsubscribe = await this.relay.join(slug, {
      update: (u) => !e.closed && e.room.apply(u, 'remote'),
      awareness: (u) => !e.closed && e.room.applyAwareness(u),
      stateVector: (sv) => {
        if (e.closed) return;
        const diff = Y.encodeStateAsUpdate(e.room.doc, sv);
        // an empty update is 2 bytes (no structs, no deletes)
        if (diff.length > 2) void this.relay.update(slug, diff);
        const local = e.room.localClients;
        if (local.length) void this.relay.awareness(slug, awarenessProtocol.encodeAwarenessUpdate(e.room.awareness, local));
      },
    });
    e.loaded = true;
    // full sync on (re)subscribe: whatever pub/sub dropped or we never saw comes back
    const announce = () => {
      void this.relay.stateVector(slug, Y.encodeStateVector(e.room.doc));
      void this.rejudge(e);
    };
    announce();
    e.resync = setInterval(announce, this.opts.resyncMs);
    e.resync.unref();
  }

  // ---- persistence --------------------------------------------------------------------------

  /** Saves the room now if it has unsaved edits; serialised per room. */
  private flush(e: Entry): Promise<void> {
    if (!e.save.take()) return e.persisting;
    e.unsaved = 0;
    e.persisting = e.persisting
      .then(() => this.persist(e))
      .catch((err) => this.opts.logger.error({ err, slug: e.room.slug }, 'document not persisted'));
    return e.persisting;
  }

  private async persist(e: Entry): Promise<void> {
    const { room } = e;
    await this.docs.compact(room.slug, Y.encodeStateAsUpdate(room.doc));
    const content = room.text;
    const existing = await this.opts.service.find(room.slug);
    if (existing?.content === content) return;
    if (!existing && content === '') return;
    if (Buffer.byteLength(content) > this.opts.service.maxBytes) {
      this.opts.logger.warn({ slug: room.slug }, 'live document over the size limit: markdown version not saved');
      return;
    }
    const authors = [...room.authors];
    const author = authors.join(', ') || 'live';
    room.authors.clear();
    // a document made live belongs to the first identity that wrote it
    await this.opts.service.save({ slug: room.slug, content, author: author.slice(0, 40), origin: 'live', owner: authors[0] });
  }

  private async unload(e: Entry): Promise<void> {
    // edits that land while a save runs (a last HTTP save, a late frame) are saved too
    do {
      await e.room.settled();
      await this.flush(e);
    } while (e.save.pending && e.peers === 0);
    if (e.peers > 0 || e.closed) return;
    e.closed = true;
    clearInterval(e.resync);
    this.rooms.delete(e.room.slug);
    await e.unsubscribe?.();
    e.room.destroy();
  }

  /** A save that did not come from a room (HTTP form, restore, another process's HTTP save). */
  private async applyExternal(doc: Doc): Promise<void> {
    const e = this.rooms.get(doc.slug);
    if (e && !e.closed) {
      await e.ready;
      const fix = reconcile(doc.slug, Y.encodeStateAsUpdate(e.room.doc), doc.content);
      if (fix) e.room.apply(fix, 'http');
      return;
    }
    // not loaded here: reconcile the stored state and tell any process that has the room loaded
    const fix = await this.docs.amend(doc.slug, (state) => reconcile(doc.slug, state, doc.content));
    if (fix) await this.relay.update(doc.slug, fix);
  }

  /** Saves every room (shutdown). */
  async close(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.rooms.values()].map(async (e) => {
        await e.room.settled();
        await this.flush(e);
        e.closed = true;
        clearInterval(e.resync);
        await e.unsubscribe?.();
      }),
    );
    this.rooms.clear();
  }
}
