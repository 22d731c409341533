import { createHash } from 'node:crypto';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import { awarenessMessage, decodeMessage, syncStep1, syncStep2, updateMessage } from './y-protocol.js';

/** One connected editor, as a room sees it: bytes out, and a way to end it. */
export interface Peer {
  send(bytes: Uint8Array): void;
  close(code: number, reason: string): void;
}

/** Fan-out to a group of peers in one step (the hub's native pub/sub); optional. */
export interface Fanout {
  join(peer: Peer, group: string): void;
  publish(group: string, bytes: Uint8Array, except?: Peer): void;
}

/** What a room asks of its surroundings (persistence, the relay to other processes, logs). */
export interface RoomHooks {
  /**
   * Makes peers' updates durable (in order, one write). The room has applied and fanned them out
   * already; updates that arrive while a write is under way go together in the next. A failed
   * write is retried (the same updates, in order) until it succeeds or the room closes.
   */
  persistUpdates(updates: Uint8Array[]): Promise<void>;
  /** A change made here (a peer, an HTTP save), for the other processes. */
  relayUpdate(update: Uint8Array): void;
  relayAwareness(update: Uint8Array): void;
  /** The document changed (anything but its initial load): a save is due. */
  changed(): void;
  warn(obj: object, msg: string): void;
  /** When given, updates and awareness reach the peers through it instead of one send each. */
  fanout?: Fanout;
  /**
   * The largest document (UTF-8 bytes of its text) peers may edit it to; an update that would pass
   * it is refused: its peer is closed with WS_CLOSE_DOC_TOO_LARGE and nothing of it is stored.
   */
  maxTextBytes?: number;
}

/**
 * Close code of a peer whose update would make the document larger than the limit: 4413, the
 * application range's mirror of HTTP 413. y-websocket's client takes 4400-4499 as final, so it does
 * not reconnect and send the same update again.
 */
export const WS_CLOSE_DOC_TOO_LARGE = 4413;

/**
 * Close code of a peer that may read the document but sent a change (a reader, a share link), or
 * that lost the right to read it: 4403, the mirror of HTTP 403, final for y-websocket's client.
 * Nothing of the refused update is applied, stored or sent on; the room carries on.
 */
export const WS_CLOSE_READ_ONLY = 4403;

/** Whether an update carries nothing (no items, no deletions): a reader's sync step 2 of an empty document. */
export function emptyUpdate(update: Uint8Array): boolean {
  const { structs, ds } = Y.decodeUpdate(update);
  return structs.length === 0 && ds.clients.size === 0;
}

/**
 * Bytes of applied edits a room lets wait for the store (it is out or slow) before it refuses more
 * (close 1013, the client reconnects later and resends): the bound on what memory holds unstored.
 */
export const MAX_UNSTORED_BYTES = 8 * 1024 * 1024;

/** Origins of changes that are not a peer's. */
export type Origin = 'load' | 'remote' | 'http';

/**
 * A live document: one Y.Doc whose Y.Text 'content' is the markdown, its awareness (cursors,
 * names), and the peers connected to it on this process. Knows no sockets: peers are the Peer
 * interface; everything is bytes of the y-websocket protocol (y-protocol.ts).
 */
export class Room {
  readonly doc = new Y.Doc({ gc: true });
  readonly awareness = new awarenessProtocol.Awareness(this.doc);
  /** Users who edited since the last save (the version's author): the peers' signed-in identities. */
  readonly authors = new Set<string>();
  /** Each peer's awareness client ids (removed when it leaves). */
  private readonly peers = new Map<Peer, Set<number>>();
  /** Each peer's signed-in identity (given at join). */
  private readonly who = new Map<Peer, string>();
  /** Peers that read only (readers, share links): their changes are refused, their awareness not shown. */
  private readonly readers = new Set<Peer>();
  private updates: Promise<void> = Promise.resolve();
  /** Peer updates applied and fanned out, waiting for the next durable write (group commit). */
  private queue: Uint8Array[] = [];
  /** Bytes of updates not yet durable (queued or being written). */
  private queuedBytes = 0;
  private draining = false;
  private closed = false;
  /** UTF-8 bytes of the text, measured once per change (the size check), or undefined when stale. */
  private textBytes: number | undefined;

  constructor(
    readonly slug: string,
    private readonly hooks: RoomHooks,
  ) {
    this.awareness.setLocalState(null);
    this.doc.on('update', (update: Uint8Array, origin: unknown) => this.onUpdate(update, origin));
    this.awareness.on('update', (c: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) =>
      this.onAwareness(c, origin),
    );
  }

  get size(): number {
    return this.peers.size;
  }

  get text(): string {
    return this.doc.getText('content').toString();
  }

  /** Awareness client ids of this process's peers. */
  get localClients(): number[] {
    return [...this.peers.values()].flatMap((s) => [...s]);
  }

  /** A new peer: it gets the room's state vector and who is here. */
  join(peer: Peer, who?: string, readOnly = false): void {
    this.peers.set(peer, new Set());
    if (who !== undefined) this.who.set(peer, who);
    if (readOnly) this.readers.add(peer);
    this.hooks.fanout?.join(peer, this.group);
    peer.send(syncStep1(this.doc));
    const states = this.awareness.getStates();
    if (states.size > 0) peer.send(awarenessMessage(this.awareness, [...states.keys()]));
  }

  leave(peer: Peer): void {
    this.drop(peer);
  }

  /** The peers of this process, each with whether it reads only. */
  get members(): [Peer, boolean][] {
    return [...this.peers.keys()].map((p) => [p, this.readers.has(p)]);
  }

  /** Makes a peer a reader (its awareness states go: a reader is not shown as an editor) or a writer again. */
  setReadOnly(peer: Peer, readOnly: boolean): void {
    if (!this.peers.has(peer)) return;
    if (!readOnly) {
      this.readers.delete(peer);
      return;
    }
    this.readers.add(peer);
    const clients = this.peers.get(peer)!;
    if (clients.size > 0) awarenessProtocol.removeAwarenessStates(this.awareness, [...clients], 'close');
  }

  /** Ends a peer that may no longer read the document (4403). */
  expel(peer: Peer, reason: string): void {
    if (!this.drop(peer)) return;
    peer.close(WS_CLOSE_READ_ONLY, reason);
  }

  /**
   * Forgets a peer: its awareness states (cursors, names) go too, so nothing of a closed peer
   * stays in the room, whether it left or was closed by the room.
   */
  private drop(peer: Peer): boolean {
    const clients = this.peers.get(peer);
    const had = this.peers.delete(peer);
    this.who.delete(peer);
    this.readers.delete(peer);
    if (clients && clients.size > 0) awarenessProtocol.removeAwarenessStates(this.awareness, [...clients], 'close');
    return had;
  }

  /** One frame from a peer. A malformed one closes that peer with 4400; the room carries on. */
  receive(peer: Peer, data: Uint8Array): void {
    if (!this.peers.has(peer)) return;
    let msg;
    try {
      msg = decodeMessage(data);
      if (msg.kind === 'sync-step-1') peer.send(syncStep2(this.doc, msg.stateVector));
      // a reader sees who is here but does not appear as an editor: its awareness is not taken
      else if (msg.kind === 'awareness') {
        if (!this.readers.has(peer)) awarenessProtocol.applyAwarenessUpdate(this.awareness, msg.update, peer);
      }
      else if (msg.kind === 'query-awareness') peer.send(awarenessMessage(this.awareness, [...this.awareness.getStates().keys()]));
    } catch (err) {
      this.hooks.warn({ slug: this.slug, err: (err as Error).message }, 'invalid y-websocket frame');
      this.drop(peer);
      peer.close(4400, 'invalid y-websocket frame');
      return;
    }
    if (msg.kind !== 'update') return;
    if (this.readers.has(peer)) {
      // the stock client answers the room's sync step 1 with what the room lacks: nothing, from a reader
      if (emptyUpdate(msg.update)) return;
      this.hooks.warn({ slug: this.slug }, 'update refused: the peer may only read');
      this.drop(peer);
      peer.close(WS_CLOSE_READ_ONLY, 'read_only: you may read this document but not change it');
      return;
    }
    const limit = this.hooks.maxTextBytes;
    if (limit !== undefined && !this.fits(msg.update, limit)) {
      this.hooks.warn({ slug: this.slug, limit }, 'update refused: the document would pass its size limit');
      this.drop(peer);
      peer.close(WS_CLOSE_DOC_TOO_LARGE, `document_too_large: a document holds at most ${limit} bytes`);
      return;
    }
    if (this.queuedBytes + msg.update.length > MAX_UNSTORED_BYTES) {
      // the store has been out long enough for this much to wait: take no more until it is back
      this.hooks.warn({ slug: this.slug, queued: this.queuedBytes }, 'update refused: too many edits wait for the store');
      this.drop(peer);
      peer.close(1013, 'edits wait for storage: try again later');
      return;
    }
    // applied and fanned out at once; the durable append follows for every update, in order
    Y.applyUpdate(this.doc, msg.update, peer);
    this.queue.push(msg.update);
    this.queuedBytes += msg.update.length;
    if (!this.draining) this.updates = this.drain();
  }

  /**
   * Writes every waiting update in one durable append; repeats while more arrived meanwhile. Under
   * load one commit carries many updates. A failed write is retried with the same updates first
   * (backing off up to 2 s) until it succeeds or the room closes; the room's debounced save
   * (the compacted state) also holds them.
   */
  private async drain(): Promise<void> {
    this.draining = true;
    try {
      let wait = 50;
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        try {
          await this.hooks.persistUpdates(batch);
          wait = 50;
          for (const u of batch) this.queuedBytes -= u.length;
        } catch (err) {
          if (this.closed) return;
          this.hooks.warn({ slug: this.slug, err, updates: batch.length }, 'updates not stored yet: retrying');
          this.queue = [...batch, ...this.queue];
          await new Promise((r) => setTimeout(r, wait).unref());
          wait = Math.min(wait * 2, 2000);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * Whether the text stays within `limit` bytes once `update` (and the accepted updates before it)
   * are applied. An update cannot add more text than its own length, so while the current text,
   * the waiting updates and this one add up to at most the limit, the answer is yes at once; near
   * the limit the updates are applied to a copy of the document and its text measured.
   */
  private fits(update: Uint8Array, limit: number): boolean {
    const text = this.doc.getText('content');
    // updates waiting for a missing earlier one (Yjs keeps them aside) may join the text with this one
    const waiting = (this.doc.store.pendingStructs?.update.length ?? 0) + update.length;
    // a UTF-16 code unit is at most 3 bytes of UTF-8
    if (text.length * 3 + waiting <= limit) return true;
    this.textBytes ??= Buffer.byteLength(text.toString());
    if (this.textBytes + waiting <= limit) return true;
    const copy = new Y.Doc({ gc: true });
    try {
      Y.applyUpdate(copy, Y.encodeStateAsUpdate(this.doc));
      Y.applyUpdate(copy, update);
      return Buffer.byteLength(copy.getText('content').toString()) <= limit;
    } finally {
      copy.destroy();
    }
  }

  /** Resolves when every peer update received so far is durable (written to the update log). */
  settled(): Promise<void> {
    return this.updates;
  }

  apply(update: Uint8Array, origin: Origin): void {
    Y.applyUpdate(this.doc, update, origin);
  }

  applyAwareness(update: Uint8Array): void {
    awarenessProtocol.applyAwarenessUpdate(this.awareness, update, 'remote');
  }

  destroy(): void {
    this.closed = true;
    this.awareness.destroy();
    this.doc.destroy();
  }

  private get group(): string {
    return `y:${this.slug}`;
  }

  private broadcast(msg: Uint8Array, except?: Peer): void {
    const fan = this.hooks.fanout;
    if (fan) return fan.publish(this.group, msg, except && this.peers.has(except) ? except : undefined);
    for (const p of this.peers.keys()) if (p !== except) p.send(msg);
  }

  private onUpdate(update: Uint8Array, origin: unknown): void {
    this.textBytes = undefined;
    this.broadcast(updateMessage(update), origin as Peer);
    if (origin !== 'remote') this.hooks.relayUpdate(update);
    const mine = this.peers.get(origin as Peer);
    const who = this.who.get(origin as Peer);
    if (who !== undefined) this.authors.add(who);
    else if (mine) {
      // a peer without an identity (tests of the room alone): the names it shows in awareness
      for (const id of mine) {
        const name = (this.awareness.getStates().get(id) as { user?: { name?: unknown } } | undefined)?.user?.name;
        if (typeof name === 'string') this.authors.add(name.slice(0, 40));
      }
    }
    if (origin !== 'load') this.hooks.changed();
  }

  private onAwareness({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown): void {
    const changed = [...added, ...updated, ...removed];
    const mine = this.peers.get(origin as Peer);
    if (mine) {
      for (const id of added) mine.add(id);
      for (const id of removed) mine.delete(id);
    }
    this.broadcast(awarenessMessage(this.awareness, changed));
    if (origin !== 'remote') this.hooks.relayAwareness(awarenessProtocol.encodeAwarenessUpdate(this.awareness, changed));
  }
}

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
