import type { Bus } from '../bus.js';
import type { Unsubscribe } from '../store/port.js';

/** A message channel between processes: the Bus in production; tests may wrap one (lossy). */
export interface RoomTransport {
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe>;
}

/**
 * Room channels over the Bus (topic `yjs:<slug>`): one Bus handler, routed by topic. A channel
 * subscribed here is followed on the Bus (the partition of `yjs:<slug>`) while a room here holds
 * it: a process hears only the rooms it has.
 */
export function busTransport(bus: Pick<Bus, 'publish' | 'onMessage' | 'follow'>): RoomTransport {
  const channels = new Map<string, Set<(m: string) => void>>();
  bus.onMessage(({ topic, message }) => {
    if (typeof message !== 'string') return;
    for (const h of channels.get(topic) ?? []) h(message);
  });
  return {
    publish: async (channel, message) => void (await bus.publish(channel, message)),
    subscribe: async (channel, handler) => {
      const release = await bus.follow(channel);
      let set = channels.get(channel);
      if (!set) channels.set(channel, (set = new Set()));
      set.add(handler);
      let done = false;
      return async () => {
        if (done) return;
        done = true;
        set!.delete(handler);
        if (set!.size === 0 && channels.get(channel) === set) channels.delete(channel);
        release();
      };
    },
  };
}

export interface RelayHandlers {
  update(u: Uint8Array): void;
  awareness(u: Uint8Array): void;
  /** Another process announced its state vector: answer with what it lacks. */
  stateVector(sv: Uint8Array): void;
}

const CHANNEL = (slug: string) => `yjs:${slug}`;
const b64 = (u: Uint8Array) => Buffer.from(u).toString('base64');
const unb64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));

/**
 * The cross-process relay of live documents: updates, awareness and state-vector announcements on
 * channel `yjs:<slug>`, each tagged with this process's origin (its own messages are ignored).
 * Pub/sub is at-most-once: rooms announce their state vector on join and every resync period, and
 * a peer process answers with the update the announcer lacks (anti-entropy).
 */
export class Relay {
  constructor(
    private readonly transport: RoomTransport,
    private readonly origin: string,
    private readonly warn: (obj: object, msg: string) => void,
  ) {}

  join(slug: string, h: RelayHandlers): Promise<Unsubscribe> {
    return this.transport.subscribe(CHANNEL(slug), (raw) => {
      let m: { o?: string; t?: string; u?: string; sv?: string };
      try {
        m = JSON.parse(raw);
      } catch {
        return;
      }
      if (m.o === this.origin) return;
      try {
        if (m.t === 'u' && m.u) h.update(unb64(m.u));
        else if (m.t === 'a' && m.u) h.awareness(unb64(m.u));
        else if (m.t === 'sv' && m.sv) h.stateVector(unb64(m.sv));
      } catch (err) {
        this.warn({ slug, err: (err as Error).message }, 'bad room message from another process');
      }
    });
  }

  update(slug: string, u: Uint8Array): Promise<void> {
    return this.send(slug, { t: 'u', u: b64(u) });
  }

  awareness(slug: string, u: Uint8Array): Promise<void> {
    return this.send(slug, { t: 'a', u: b64(u) });
  }

  stateVector(slug: string, sv: Uint8Array): Promise<void> {
    return this.send(slug, { t: 'sv', sv: b64(sv) });
  }

  private send(slug: string, m: Record<string, string>): Promise<void> {
    return this.transport.publish(CHANNEL(slug), JSON.stringify({ o: this.origin, ...m })).catch((err) => {
      this.warn({ err, slug }, 'room message not published');
    });
  }
}
