import { randomBytes } from 'node:crypto';
import type { Write } from '../store/port.js';
import { DOC_TOPIC, K, PALETTE, PRESENCE_TIMEOUT_MS, checkSlug, docEvents, notYours, presenceRecords, type Editor, Part, type Peer } from './model.js';

/**
 * Presence (docs/collab.md "Live channel"): who has a document open, with a colour no one else in
 * the document has while the palette lasts; joined and renewed by a heartbeat, removed on leave or
 * after PRESENCE_TIMEOUT_MS without one.
 */
export class Presence extends Part {
  /** Join or heartbeat (every 15 s). The colour is the first palette colour no one else in the document has. */
  async join(slug: string, editor: Editor, id?: string): Promise<{ id: string; color: string; peers: Peer[] }> {
    checkSlug(slug);
    const now = this.now();
    const pid = id ?? randomBytes(8).toString('hex');
    // the person's display name: the account's name, else the user id (never an empty label)
    const name = editor.name.trim() || editor.id;
    const out = await this.store.update([K.presence(slug)], ([cur]) => {
      const map = { ...presenceRecords.decode(cur) };
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
          { op: 'set', key: K.presence(slug), value: presenceRecords.encode(map), ttlMs: PRESENCE_TIMEOUT_MS * 4 },
          { op: 'index', key: K.rooms, member: slug, score: oldest },
        ],
        result: { peer: map[pid]!, peers: Object.values(map), joined },
      };
    });
    if (out.joined) this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'presence', event: 'join', slug, peer: out.peer, peers: out.peers }));
    return { id: pid, color: out.peer.color, peers: out.peers };
  }

  /** Leaves a presence entry: the person's own, or any for an operator. */
  async leave(slug: string, editor: Editor, id: string): Promise<{ left: boolean }> {
    checkSlug(slug);
    const out = await this.store.update([K.presence(slug)], ([cur]) => {
      const map = { ...presenceRecords.decode(cur) };
      const peer = map[id];
      if (!peer) return { writes: [], result: undefined };
      if (peer.user !== editor.id && !editor.operator) throw notYours(slug);
      delete map[id];
      const writes: Write[] = Object.keys(map).length
        ? [{ op: 'set', key: K.presence(slug), value: presenceRecords.encode(map), ttlMs: PRESENCE_TIMEOUT_MS * 4 }]
        : [{ op: 'del', key: K.presence(slug) }, { op: 'unindex', key: K.rooms, member: slug }];
      return { writes, result: { peer, peers: Object.values(map) } };
    });
    if (out) this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'presence', event: 'leave', slug, reason: 'left', peer: out.peer, peers: out.peers }));
    return { left: !!out };
  }

  async peers(slug: string): Promise<Peer[]> {
    checkSlug(slug);
    const now = this.now();
    const map = presenceRecords.decode(await this.store.get(K.presence(slug))) ?? {};
    return Object.values(map).filter((p) => p.seen > now - PRESENCE_TIMEOUT_MS);
  }

  /** Removes entries not seen for PRESENCE_TIMEOUT_MS, telling the room (`leave`/`timeout`). */
  async sweep(): Promise<number> {
    const now = this.now();
    let peers = 0;
    for (const e of await this.store.indexRange(K.rooms, { max: now - PRESENCE_TIMEOUT_MS })) {
      const slug = e.member;
      const { removed, left } = await this.store.update([K.presence(slug)], ([cur]) => {
        const map = { ...presenceRecords.decode(cur) };
        const removed: Peer[] = [];
        for (const [id, p] of Object.entries(map)) if (p.seen <= now - PRESENCE_TIMEOUT_MS) (removed.push(p), delete map[id]);
        const oldest = Math.min(...Object.values(map).map((p) => p.seen));
        const writes: Write[] = Object.keys(map).length
          ? [{ op: 'set', key: K.presence(slug), value: presenceRecords.encode(map) }, { op: 'index', key: K.rooms, member: slug, score: oldest }]
          : [{ op: 'del', key: K.presence(slug) }, { op: 'unindex', key: K.rooms, member: slug }];
        return { writes, result: { removed, left: Object.values(map) } };
      });
      for (const p of removed) {
        peers++;
        this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'presence', event: 'leave', slug, reason: 'timeout', peer: p, peers: left }));
      }
    }
    return peers;
  }
}
