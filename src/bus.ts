import type { Json, Store, Unsubscribe } from './store/port.js';
import {
  RetentionTable,
  TopicHistory,
  type HistoryResult,
  type Retention,
  type StreamPosition,
} from './bus/history.js';

export type { HistoryResult, Publication, Retention, StreamPosition, LostReason } from './bus/history.js';

/**
 * The one Bus. Services publish (topic, message); the hub delivers to WebSocket and SSE
 * subscribers. Delivery is local at once, and through the Store's pub/sub to every other process
 * sharing it (Redis). A process never delivers its own message twice.
 *
 * Topics that need it remember: `retain(pattern, {size})` keeps a capped history in the Store, each
 * publication numbered by its offset within an epoch (see bus/history.ts), and `history(topic,
 * since)` replays what a client missed. Messages of retained topics carry their offset and epoch.
 */
export interface BusMessage {
  topic: string;
  message: Json;
  /** Retained topics only. */
  offset?: number;
  epoch?: string;
}

export type BusHandler = (msg: BusMessage) => void;

export interface Bus {
  /** Resolves with the message's offset in the topic's stream (0 for a topic without history). */
  publish(topic: string, message: Json): Promise<number>;
  /**
   * Several messages of one topic, in order: a retained topic appends them to its history in one
   * store write (consecutive offsets), then each is delivered as publish() would. Resolves with the
   * offsets.
   */
  publishMany(topic: string, messages: Json[]): Promise<number[]>;
  /**
   * Fire and forget: a failure (of the message's own computation when it is a promise, or of the
   * publication) is logged by the bus, never thrown to the caller.
   */
  emit(topic: string, message: Json | Promise<Json>): void;
  /** Keep a capped history for a topic name, or every topic starting with a prefix ending in '*'. */
  retain(pattern: string, retention: Retention): void;
  /** Whether the topic keeps a history. */
  retained(topic: string): boolean;
  /** Publications after `since` (see TopicHistory.since); the head alone without it. */
  history(topic: string, since?: StreamPosition): Promise<HistoryResult>;
  /** Every message on every topic, from this process and the others. Returns an unsubscribe. */
  onMessage(handler: BusHandler): () => void;
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface BusOptions {
  /** Where emit() reports a failed publication. */
  logger?: { warn(obj: object, msg: string): void };
}

/** Store channel carrying bus messages between processes. */
export const BUS_CHANNEL = 'bus';

export function createBus(store: Store, origin: string, opts: BusOptions = {}): Bus {
  const handlers = new Set<BusHandler>();
  const retention = new RetentionTable();
  const history = new TopicHistory(store);
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

  const publish = async (topic: string, message: Json): Promise<number> => {
    const kept = retention.get(topic);
    if (!kept) {
      deliver({ topic, message });
      await store.publish(BUS_CHANNEL, JSON.stringify({ o: origin, t: topic, m: message }));
      return 0;
    }
    // the history is written first: a subscriber that sees the message can always find it again
    const pos = await history.append(topic, message, kept.size);
    deliver({ topic, message, offset: pos.offset, epoch: pos.epoch });
    await store.publish(BUS_CHANNEL, JSON.stringify({ o: origin, t: topic, m: message, n: pos.offset, e: pos.epoch }));
    return pos.offset;
  };

  const publishMany = async (topic: string, messages: Json[]): Promise<number[]> => {
    const kept = retention.get(topic);
    if (!kept || messages.length === 0) {
      const out: number[] = [];
      for (const m of messages) out.push(await publish(topic, m));
      return out;
    }
    const positions = await history.appendMany(topic, messages, kept.size);
    for (const [i, pos] of positions.entries()) {
      deliver({ topic, message: messages[i]!, offset: pos.offset, epoch: pos.epoch });
      await store.publish(BUS_CHANNEL, JSON.stringify({ o: origin, t: topic, m: messages[i], n: pos.offset, e: pos.epoch }));
    }
    return positions.map((p) => p.offset);
  };

  return {
    publish,
    publishMany,
    emit(topic, message) {
      const failed = (err: unknown) => opts.logger?.warn({ err, topic }, 'bus message not published');
      // a ready message is delivered locally before emit returns, as with publish
      if (message instanceof Promise) message.then((m) => publish(topic, m)).catch(failed);
      else publish(topic, message).catch(failed);
    },
    retain(pattern, r) {
      retention.set(pattern, r);
    },
    retained: (topic) => retention.get(topic) !== undefined,
    history(topic, since) {
      return history.since(topic, since);
    },
    onMessage(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
    async start() {
      unsubscribe = await store.subscribe(BUS_CHANNEL, (raw) => {
        let env: { o?: unknown; t?: unknown; m?: Json; n?: unknown; e?: unknown };
        try {
          env = JSON.parse(raw);
        } catch {
          return;
        }
        if (env.o === origin || typeof env.t !== 'string' || env.m === undefined) return;
        const msg: BusMessage = { topic: env.t, message: env.m };
        if (typeof env.n === 'number' && typeof env.e === 'string') {
          msg.offset = env.n;
          msg.epoch = env.e;
        }
        deliver(msg);
      });
    },
    async close() {
      await unsubscribe?.();
      handlers.clear();
    },
  };
}
