import type { Json, Store, Unsubscribe } from './store/port.js';

/**
 * The one Bus. Services publish (topic, message); the hub delivers to WebSocket and SSE
 * subscribers. Delivery is local at once, and through the Store's pub/sub to every other process
 * sharing it (Redis). A process never delivers its own message twice.
 */
export interface BusMessage {
  topic: string;
  message: Json;
}

export type BusHandler = (msg: BusMessage) => void;

export interface Bus {
  publish(topic: string, message: Json): Promise<void>;
  /** Every message on every topic, from this process and the others. Returns an unsubscribe. */
  onMessage(handler: BusHandler): () => void;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** Store channel carrying bus messages between processes. */
export const BUS_CHANNEL = 'bus';

export function createBus(store: Store, origin: string): Bus {
  const handlers = new Set<BusHandler>();
  let unsubscribe: Unsubscribe | undefined;

  const deliver = (msg: BusMessage) => {
    for (const h of handlers) {
      try {
        h(msg);
      } catch {
        // a faulty subscriber must not stop delivery to the others
      }
    }
  };

  return {
    async publish(topic, message) {
      deliver({ topic, message });
      await store.publish(BUS_CHANNEL, JSON.stringify({ o: origin, t: topic, m: message }));
    },
    onMessage(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
    async start() {
      unsubscribe = await store.subscribe(BUS_CHANNEL, (raw) => {
        let env: { o?: unknown; t?: unknown; m?: Json };
        try {
          env = JSON.parse(raw);
        } catch {
          return;
        }
        if (env.o === origin || typeof env.t !== 'string' || env.m === undefined) return;
        deliver({ topic: env.t, message: env.m });
      });
    },
    async close() {
      await unsubscribe?.();
      handlers.clear();
    },
  };
}
