import { createHash } from 'node:crypto';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import type { Logger } from 'pino';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';
import { AppError } from '../errors.js';
import type { SocketHandle } from '../hub/index.js';
import type { SocketData } from '../hub/topics.js';
import type { WebSocket } from '../hub/uws.js';
import type { Json, Store, Unsubscribe } from '../store/port.js';
import { SLUG_RE, type CollabService, type Doc } from './service.js';

/**
 * Live co-editing (docs/collab.md "Yjs"): the y-websocket protocol (y-protocols sync + awareness)
 * on a uWS endpoint, one Y.Doc per loaded room whose Y.Text 'content' IS the markdown document.
 *
 * - Local fan-out: uWS native pub/sub on topic `y:<slug>`.
 * - Across processes: the Store's pub/sub channel `yjs:<slug>` carries updates and awareness;
 *   pub/sub is at-most-once, so every room announces its state vector when it subscribes and
 *   every `resyncMs` after; a peer answers with the update the announcer lacks (anti-entropy).
 * - Persistence: debounced (2 s after the last edit, at most 10 s after the first), merged
 *   atomically into `md:ydoc:<slug>` and saved as a markdown version when the text changed.
 * - A room unloads (after a flush) when its last local client leaves; close() flushes all.
 */

const MSG_SYNC = 0;
const MSG_AWARENESS = 1;
const MSG_QUERY_AWARENESS = 3;
const YKEY = (slug: string) => `md:ydoc:${slug}`;
const CHANNEL = (slug: string) => `yjs:${slug}`;
const TOPIC = (slug: string) => `y:${slug}`;

export interface YSocketData {
  slug: string;
  /** Awareness client ids this connection controls (removed when it closes). */
  clients: Set<number>;
}
type Conn = WebSocket<SocketData & YSocketData>;

/** A transport between processes: the Store's pub/sub in production; tests may wrap it (lossy). */
export interface RoomTransport {
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe>;
}

export interface RoomsOptions {
  store: Store;
  service: CollabService;
  origin: string;
  logger: Logger;
  debounceMs: number;
  maxDelayMs: number;
  resyncMs: number;
  transport?: RoomTransport;
}

interface Room {
  slug: string;
  doc: Y.Doc;
  awareness: awarenessProtocol.Awareness;
  conns: Set<Conn>;
  ready: Promise<void>;
  loaded: boolean;
  unsubscribe?: Unsubscribe;
  dirtySince?: number;
  timer?: NodeJS.Timeout;
  persisting: Promise<void>;
  resync?: NodeJS.Timeout;
  closed: boolean;
  /** Users who edited since the last persist (for the version's author). */
  authors: Set<string>;
}

const b64 = (u: Uint8Array) => Buffer.from(u).toString('base64');
const unb64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));

/** Replaces `text`'s content with `next` by one delete and one insert around the common prefix and suffix. */
export function applyDiff(text: Y.Text, next: string): void {
  const cur = text.toString();
  if (cur === next) return;
  let start = 0;
  const max = Math.min(cur.length, next.length);
  while (start < max && cur.charCodeAt(start) === next.charCodeAt(start)) start++;
  let end = 0;
  while (end < max - start && cur.charCodeAt(cur.length - 1 - end) === next.charCodeAt(next.length - 1 - end)) end++;
  if (cur.length - start - end > 0) text.delete(start, cur.length - start - end);
  if (next.length - start - end > 0) text.insert(start, next.slice(start, next.length - end));
}

/**
 * The update that turns `state` into a document whose text is `content`, made with a client id
 * derived from (slug, state, content): two processes doing the same reconciliation produce the
 * very same items, which Yjs merges as one (no duplicated text).
 */
export function reconcile(slug: string, state: Uint8Array | undefined, content: string): Uint8Array | undefined {
  const tmp = new Y.Doc();
  if (state) Y.applyUpdate(tmp, state);
  if (tmp.getText('content').toString() === content) return undefined;
  const before = Y.encodeStateVector(tmp);
  const h = createHash('sha256').update(slug).update('\0').update(before).update('\0').update(content).digest();
  tmp.clientID = h.readUInt32BE(0) & 0x3fffffff;
  applyDiff(tmp.getText('content'), content);
  const update = Y.encodeStateAsUpdate(tmp, before);
  tmp.destroy();
  return update;
}

export class Rooms {
  private readonly rooms = new Map<string, Room>();
  private readonly transport: RoomTransport;
  private handle?: SocketHandle;
  private stopping = false;

  constructor(private readonly opts: RoomsOptions) {
    this.transport = opts.transport ?? opts.store;
    opts.service.onSaved((doc, origin) => {
      if (origin !== 'live') this.applyExternal(doc).catch((err) => opts.logger.warn({ err, slug: doc.slug }, 'external save not applied to the live document'));
    });
  }

  /** The uWS behaviour of /yjs/:slug. */
  attach(handle: SocketHandle): void {
    this.handle = handle;
  }

  get loaded(): string[] {
    return [...this.rooms.keys()];
  }

  text(slug: string): string | undefined {
    return this.rooms.get(slug)?.doc.getText('content').toString();
  }

  upgrade([slug]: string[]): YSocketData {
    if (!slug || !SLUG_RE.test(slug)) throw new AppError(400, 'invalid_slug', 'a slug is 1-80 of a-z 0-9 한글 _ - (no path characters)');
    if (this.stopping) throw new AppError(503, 'shutting_down', 'the server is shutting down');
    return { slug, clients: new Set() };
  }

  open(ws: Conn): void {
    const room = this.room(ws.getUserData().slug);
    room.conns.add(ws);
    ws.subscribe(TOPIC(room.slug));
    room.ready.then(() => {
      if (ws.getUserData().closed) return;
      const enc = encoding.createEncoder();
      encoding.writeVarUint(enc, MSG_SYNC);
      syncProtocol.writeSyncStep1(enc, room.doc);
      ws.send(encoding.toUint8Array(enc), true);
      const states = room.awareness.getStates();
      if (states.size > 0) ws.send(this.awarenessMessage(room, [...states.keys()]), true);
    }, () => ws.end(1011, 'room failed to load'));
  }

  message(ws: Conn, data: ArrayBuffer): void {
    const room = this.rooms.get(ws.getUserData().slug);
    if (!room) return;
    const copy = new Uint8Array(data.slice(0));
    if (!room.loaded) {
      room.ready.then(() => this.handle_(room, ws, copy), () => undefined);
      return;
    }
    this.handle_(room, ws, copy);
  }

  private handle_(room: Room, ws: Conn, data: Uint8Array): void {
    if (ws.getUserData().closed) return;
    try {
      const dec = decoding.createDecoder(data);
      const type = decoding.readVarUint(dec);
      if (type === MSG_SYNC) {
        const sub = decoding.readVarUint(dec);
        if (sub === syncProtocol.messageYjsSyncStep1) {
          const sv = decoding.readVarUint8Array(dec);
          const enc = encoding.createEncoder();
          encoding.writeVarUint(enc, MSG_SYNC);
          encoding.writeVarUint(enc, syncProtocol.messageYjsSyncStep2);
          encoding.writeVarUint8Array(enc, Y.encodeStateAsUpdate(room.doc, sv));
          ws.send(encoding.toUint8Array(enc), true);
        } else if (sub === syncProtocol.messageYjsSyncStep2 || sub === syncProtocol.messageYjsUpdate) {
          const update = decoding.readVarUint8Array(dec);
          Y.decodeUpdate(update); // validates before anything touches the document
          Y.applyUpdate(room.doc, update, ws);
        } else throw new Error(`unknown sync message ${sub}`);
      } else if (type === MSG_AWARENESS) {
        const update = decoding.readVarUint8Array(dec);
        const d2 = decoding.createDecoder(update);
        const n = decoding.readVarUint(d2);
        for (let i = 0; i < n; i++) {
          decoding.readVarUint(d2);
          decoding.readVarUint(d2);
          JSON.parse(decoding.readVarString(d2));
        }
        awarenessProtocol.applyAwarenessUpdate(room.awareness, update, ws);
      } else if (type === MSG_QUERY_AWARENESS) {
        ws.send(this.awarenessMessage(room, [...room.awareness.getStates().keys()]), true);
      } else throw new Error(`unknown message type ${type}`);
    } catch (err) {
      // a clear error for the sender only: the room and everyone else carry on
      this.opts.logger.warn({ slug: room.slug, err: (err as Error).message }, 'invalid y-websocket frame');
      ws.getUserData().closed = true;
      ws.end(4400, 'invalid y-websocket frame');
    }
  }

  close_(ws: Conn): void {
    const { slug, clients } = ws.getUserData();
    const room = this.rooms.get(slug);
    if (!room) return;
    room.conns.delete(ws);
    if (clients.size > 0) awarenessProtocol.removeAwarenessStates(room.awareness, [...clients], 'close');
    if (room.conns.size === 0) void this.unload(room);
  }

  // ---- rooms --------------------------------------------------------------------------------

  private room(slug: string): Room {
    let room = this.rooms.get(slug);
    if (room) return room;
    const doc = new Y.Doc({ gc: true });
    const awareness = new awarenessProtocol.Awareness(doc);
    awareness.setLocalState(null);
    room = { slug, doc, awareness, conns: new Set(), loaded: false, ready: Promise.resolve(), persisting: Promise.resolve(), closed: false, authors: new Set() };
    const r = room;
    this.rooms.set(slug, room);

    doc.on('update', (update: Uint8Array, origin: unknown) => {
      const msg = this.syncUpdate(update);
      if (isConn(origin) && !origin.getUserData().closed) origin.publish(TOPIC(slug), msg, true);
      else this.handle?.publish(TOPIC(slug), msg, true);
      if (origin !== 'remote') this.send(r, { t: 'u', u: b64(update) });
      if (isConn(origin)) {
        for (const id of origin.getUserData().clients) {
          const name = (awareness.getStates().get(id) as { user?: { name?: unknown } } | undefined)?.user?.name;
          if (typeof name === 'string') r.authors.add(name.slice(0, 40));
        }
      }
      if (origin !== 'load') this.schedule(r);
    });
    awareness.on('update', ({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => {
      const changed = [...added, ...updated, ...removed];
      if (isConn(origin)) {
        const mine = origin.getUserData().clients;
        for (const id of added) mine.add(id);
        for (const id of removed) mine.delete(id);
      }
      const msg = this.awarenessMessage(r, changed);
      this.handle?.publish(TOPIC(slug), msg, true);
      if (origin !== 'remote') this.send(r, { t: 'a', u: b64(awarenessProtocol.encodeAwarenessUpdate(awareness, changed)) });
    });
    room.ready = this.load(room);
    return room;
  }

  private async load(room: Room): Promise<void> {
    const [stored, md] = await Promise.all([this.opts.store.get<string>(YKEY(room.slug)), this.opts.service.find(room.slug)]);
    const state = typeof stored === 'string' ? unb64(stored) : undefined;
    if (state) Y.applyUpdate(room.doc, state, 'load');
    if (md) {
      const fix = reconcile(room.slug, state, md.content);
      if (fix) Y.applyUpdate(room.doc, fix, 'load');
    }
    room.unsubscribe = await this.transport.subscribe(CHANNEL(room.slug), (raw) => this.onRemote(room, raw));
    room.loaded = true;
    // full sync on (re)subscribe: whatever pub/sub dropped or we never saw comes back
    this.send(room, { t: 'sv', sv: b64(Y.encodeStateVector(room.doc)) });
    room.resync = setInterval(() => this.send(room, { t: 'sv', sv: b64(Y.encodeStateVector(room.doc)) }), this.opts.resyncMs);
    room.resync.unref();
  }

  private onRemote(room: Room, raw: string): void {
    if (room.closed) return;
    let m: { o?: string; t?: string; u?: string; sv?: string };
    try {
      m = JSON.parse(raw);
    } catch {
      return;
    }
    if (m.o === this.opts.origin) return;
    try {
      if (m.t === 'u' && m.u) Y.applyUpdate(room.doc, unb64(m.u), 'remote');
      else if (m.t === 'a' && m.u) awarenessProtocol.applyAwarenessUpdate(room.awareness, unb64(m.u), 'remote');
      else if (m.t === 'sv' && m.sv) {
        const diff = Y.encodeStateAsUpdate(room.doc, unb64(m.sv));
        // an empty update is 2 bytes (no structs, no deletes)
        if (diff.length > 2) this.send(room, { t: 'u', u: b64(diff) });
        const local = [...room.conns].flatMap((c) => [...c.getUserData().clients]);
        if (local.length) this.send(room, { t: 'a', u: b64(awarenessProtocol.encodeAwarenessUpdate(room.awareness, local)) });
      }
    } catch (err) {
      this.opts.logger.warn({ slug: room.slug, err: (err as Error).message }, 'bad room message from another process');
    }
  }

  private send(room: Room, m: Record<string, Json>): void {
    if (!room.loaded || room.closed) return;
    this.transport.publish(CHANNEL(room.slug), JSON.stringify({ o: this.opts.origin, ...m })).catch((err) => this.opts.logger.warn({ err }, 'room message not published'));
  }

  private syncUpdate(update: Uint8Array): Uint8Array {
    const enc = encoding.createEncoder();
    encoding.writeVarUint(enc, MSG_SYNC);
    syncProtocol.writeUpdate(enc, update);
    return encoding.toUint8Array(enc);
  }

  private awarenessMessage(room: Room, clients: number[]): Uint8Array {
    const enc = encoding.createEncoder();
    encoding.writeVarUint(enc, MSG_AWARENESS);
    encoding.writeVarUint8Array(enc, awarenessProtocol.encodeAwarenessUpdate(room.awareness, clients));
    return encoding.toUint8Array(enc);
  }

  // ---- persistence --------------------------------------------------------------------------

  private schedule(room: Room): void {
    const now = Date.now();
    room.dirtySince ??= now;
    clearTimeout(room.timer);
    const wait = Math.max(0, Math.min(this.opts.debounceMs, room.dirtySince + this.opts.maxDelayMs - now));
    room.timer = setTimeout(() => void this.flush(room), wait);
    room.timer.unref?.();
  }

  /** Writes the room now if it has unsaved edits; serialised per room. */
  flush(room: Room): Promise<void> {
    clearTimeout(room.timer);
    room.timer = undefined;
    if (room.dirtySince === undefined) return room.persisting;
    room.dirtySince = undefined;
    room.persisting = room.persisting.then(() => this.persist(room)).catch((err) => {
      this.opts.logger.error({ err, slug: room.slug }, 'document not persisted');
    });
    return room.persisting;
  }

  private async persist(room: Room): Promise<void> {
    const state = Y.encodeStateAsUpdate(room.doc);
    await this.opts.store.update([YKEY(room.slug)], ([cur]) => ({
      writes: [{ op: 'set', key: YKEY(room.slug), value: b64(typeof cur === 'string' ? Y.mergeUpdates([unb64(cur), state]) : state) }],
      result: null,
    }));
    const content = room.doc.getText('content').toString();
    const existing = await this.opts.service.find(room.slug);
    if (existing?.content === content) return;
    if (!existing && content === '') return;
    if (Buffer.byteLength(content) > this.opts.service.maxBytes) {
      this.opts.logger.warn({ slug: room.slug }, 'live document over the size limit: markdown version not saved');
      return;
    }
    const author = [...room.authors].join(', ') || 'live';
    room.authors.clear();
    await this.opts.service.save({ slug: room.slug, content, author: author.slice(0, 40), origin: 'live' });
  }

  private async unload(room: Room): Promise<void> {
    // edits that land while a flush runs (a last HTTP save, a late frame) are flushed too
    do await this.flush(room);
    while (room.dirtySince !== undefined && room.conns.size === 0);
    if (room.conns.size > 0 || room.closed) return;
    room.closed = true;
    clearInterval(room.resync);
    this.rooms.delete(room.slug);
    await room.unsubscribe?.();
    room.awareness.destroy();
    room.doc.destroy();
  }

  /** A save that did not come from this room (HTTP form, restore, another process's HTTP save). */
  private async applyExternal(doc: Doc): Promise<void> {
    const room = this.rooms.get(doc.slug);
    if (room && !room.closed) {
      await room.ready;
      const before = Y.encodeStateVector(room.doc);
      const fix = reconcile(doc.slug, Y.encodeStateAsUpdate(room.doc), doc.content);
      void before;
      if (fix) Y.applyUpdate(room.doc, fix, 'http');
      return;
    }
    // not loaded here: reconcile the stored state and tell any process that has the room loaded
    let fix: Uint8Array | undefined;
    await this.opts.store.update([YKEY(doc.slug)], ([cur]) => {
      const state = typeof cur === 'string' ? unb64(cur) : undefined;
      fix = reconcile(doc.slug, state, doc.content);
      if (!fix) return { writes: [], result: null };
      return { writes: [{ op: 'set', key: YKEY(doc.slug), value: b64(state ? Y.mergeUpdates([state, fix]) : fix) }], result: null };
    });
    if (fix) await this.transport.publish(CHANNEL(doc.slug), JSON.stringify({ o: this.opts.origin, t: 'u', u: b64(fix) }));
  }

  /** Flushes every room (shutdown). */
  async close(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.rooms.values()].map(async (room) => {
      await this.flush(room);
      room.closed = true;
      clearInterval(room.resync);
      await room.unsubscribe?.();
    }));
    this.rooms.clear();
  }
}

function isConn(x: unknown): x is Conn {
  return typeof x === 'object' && x !== null && typeof (x as Conn).getUserData === 'function';
}
