import type { Unsubscribe } from './port.js';

/**
 * Pub/sub inside one process (the LMDB adapter's): a message reaches every handler subscribed to
 * its channel at the time of publishing, after the publishing call returns (a microtask later).
 */
export class LocalPubSub {
  private readonly channels = new Map<string, Set<{ handler: (message: string) => void }>>();

  publish(channel: string, message: string): void {
    const subs = this.channels.get(channel);
    if (!subs || subs.size === 0) return;
    const snapshot = [...subs];
    queueMicrotask(() => {
      for (const sub of snapshot) {
        if (!subs.has(sub)) continue;
        try {
          sub.handler(message);
        } catch {
          // one faulty handler must not stop delivery to the others
        }
      }
    });
  }

  subscribe(channel: string, handler: (message: string) => void): Unsubscribe {
    const sub = { handler };
    let subs = this.channels.get(channel);
    if (!subs) {
      subs = new Set();
      this.channels.set(channel, subs);
    }
    subs.add(sub);
    return async () => {
      const set = this.channels.get(channel);
      if (!set) return;
      set.delete(sub);
      if (set.size === 0) this.channels.delete(channel);
    };
  }

  clear(): void {
    this.channels.clear();
  }
}
