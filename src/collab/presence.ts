import { randomBytes } from 'node:crypto';
import { PresenceManager } from '../presence.js';
import { DOC_TOPIC, K, PALETTE, PRESENCE_TIMEOUT_MS, checkSlug, docEvents, notYours, presenceRecords, type Editor, Part, type Parts, type Peer } from './model.js';

/**
 * Presence (docs/collab.md "Live channel"): who has a document open, with a colour no one else in
 * the document has while the palette lasts; joined and renewed by a heartbeat, removed on leave or
 * after PRESENCE_TIMEOUT_MS without one. The membership (entries, heartbeats, time-outs, the sweep)
 * is the shared PresenceManager (src/presence.ts) over the document's keys; names, colours, who may
 * remove an entry and the events on `md:<slug>` are the document's own.
 */
export class Presence extends Part {
  private readonly members: PresenceManager<Peer>;

  constructor(parts: Parts) {
    super(parts);
    this.members = new PresenceManager<Peer>({
      store: parts.store,
      clock: parts.clock,
      timeoutMs: PRESENCE_TIMEOUT_MS,
      key: K.presence,
      index: K.rooms,
      codec: presenceRecords,
    });
  }

  /** Join or heartbeat (every 15 s). The colour is the first palette colour no one else in the document has. */
  async join(slug: string, editor: Editor, id?: string): Promise<{ id: string; color: string; peers: Peer[] }> {
    checkSlug(slug);
    const pid = id ?? randomBytes(8).toString('hex');
    // the person's display name: the account's name, else the user id (never an empty label)
    const name = editor.name.trim() || editor.id;
    const out = await this.members.add(slug, pid, {
      user: editor.id,
      info: (existing, others): Record<string, string> => {
        // a heartbeat keeps its colour (the manager refuses another person's entry)
        if (existing) return { name };
        const used = new Set(others.map((p) => p.color));
        const color = PALETTE.find((c) => !used.has(c)) ?? PALETTE[others.length % PALETTE.length]!;
        return { name, color };
      },
    });
    const peer = out.entry;
    const peers = out.entries;
    if (out.joined) this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'presence', event: 'join', slug, peer, peers }));
    return { id: pid, color: peer.color, peers };
  }

  /** Leaves a presence entry: the person's own, or any for an operator. */
  async leave(slug: string, editor: Editor, id: string): Promise<{ left: boolean }> {
    checkSlug(slug);
    const out = await this.members.remove(slug, id, (peer) => {
      if (peer.user !== editor.id && !editor.operator) throw notYours(slug);
    });
    if (out) this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'presence', event: 'leave', slug, reason: 'left', peer: out.entry, peers: out.entries }));
    return { left: !!out };
  }

  async peers(slug: string): Promise<Peer[]> {
    checkSlug(slug);
    return this.members.list(slug);
  }

  /** Removes entries not seen for PRESENCE_TIMEOUT_MS, telling the room (`leave`/`timeout`). */
  async sweep(): Promise<number> {
    let peers = 0;
    for (const { topic: slug, removed, left } of await this.members.sweep()) {
      for (const p of removed) {
        peers++;
        this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'presence', event: 'leave', slug, reason: 'timeout', peer: p, peers: left }));
      }
    }
    return peers;
  }
}
