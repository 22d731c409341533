import { isStoreUnavailable } from './errors.js';
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
 *
 * `emit` on a retained topic rides through a Store outage: while the Store answers store_unavailable
 * (Redis out of reach or failing over), the message is retried until EMIT_RETRY_MS, and the messages
 * emitted after it on the same topic wait behind it, so a stream keeps its order and a subscriber
 * misses nothing once the Store is back. At most EMIT_BACKLOG messages wait in all; past it, or
 * EMIT_RETRY_MS after its emit, a message is dropped with a warning. A retry after a store_unavailable that did write
 * (a WAIT shortfall) appends the message a second time.
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
  /** Longest an emitted message of a retained topic is retried while the Store is unavailable, ms. */
  emitRetryMs?: number;
}

/** Most emitted messages of retained topics waiting, in all topics, for the Store to come back. */
export const EMIT_BACKLOG = 10_000;
/** Longest an emitted message of a retained topic is retried while the Store is unavailable: 5 minutes. */
export const EMIT_RETRY_MS = 5 * 60_000;
/** Most emitted messages of one topic written in one store write. */
const EMIT_BATCH = 100;

/** An emitted message of a retained topic waiting to be sent. */
interface Queued {
  message: Json | Promise<Json>;
  /** When it is dropped if the store is still unavailable (ms since the epoch). */
  until: number;
  failed: (err: unknown) => void;
}

/** First pause before a retry, doubled up to EMIT_RETRY_MAX_PAUSE_MS. */
const EMIT_RETRY_FIRST_PAUSE_MS = 50;
const EMIT_RETRY_MAX_PAUSE_MS = 1000;

/** Store channel carrying bus messages between processes. */
export const BUS_CHANNEL = 'bus';

/**
 * Runs `op`, and again after a pause (50 ms doubling to 1 s) while it fails with store_unavailable,
 * until `until` (ms since the epoch) or `stopped()`; then its error is thrown. For a write whose
 * effect must not be dropped by an outage, such as publishing what the store already committed.
 */
export async function retryWhileUnavailable<T>(
  op: () => Promise<T>,
  until: number,
  opts: { pause?: (ms: number) => Promise<void>; stopped?: () => boolean } = {},
): Promise<T> {
  const pause = opts.pause ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  for (let wait = EMIT_RETRY_FIRST_PAUSE_MS; ; wait = Math.min(wait * 2, EMIT_RETRY_MAX_PAUSE_MS)) {
    try {
      return await op();
    } catch (err) {
      if (!isStoreUnavailable(err) || opts.stopped?.() || Date.now() + wait > until) throw err;
      await pause(wait);
    }
  }
}

export function createBus(store: Store, origin: string, opts: BusOptions = {}): Bus {
  const handlers = new Set<BusHandler>();
  const retention = new RetentionTable();
  const history = new TopicHistory(store);
  let unsubscribe: Unsubscribe | undefined;
  const retryMs = opts.emitRetryMs ?? EMIT_RETRY_MS;
  /** The emits of each retained topic not yet sent, oldest first (present while its drain runs). */
  const queues = new Map<string, Queued[]>();
  let waiting = 0;
  let closed = false;
  const pauses = new Set<{ timer: NodeJS.Timeout; wake: () => void }>();
  const pause = (ms: number) =>
    new Promise<void>((wake) => {
      const p = { timer: setTimeout(() => (pauses.delete(p), wake()), ms), wake };
      pauses.add(p);
    });

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
    await notify(topic, message, pos);
    return pos.offset;
  };

  /**
   * Tells the other processes of a retained topic's message, once its history holds it. A failure
   * here is not the publication's: the message is published (in the history, delivered here), and a
   * process that missed the notice fills the gap from the history at the topic's next message
   * (hub/live.ts). Rethrown, it would make an emit's retry write the message a second time.
   */
  const notify = async (topic: string, message: Json, pos: { offset: number; epoch: string }) => {
    try {
      await store.publish(BUS_CHANNEL, JSON.stringify({ o: origin, t: topic, m: message, n: pos.offset, e: pos.epoch }));
    } catch (err) {
      opts.logger?.warn({ err, topic }, 'bus message kept in the history, but not announced to the other processes (they fill the gap at the next one)');
    }
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
      await notify(topic, messages[i]!, pos);
    }
    return positions.map((p) => p.offset);
  };

  /**
   * Sends a retained topic's queued emits, oldest first, in batches of up to EMIT_BATCH (one store
   * write each, publishMany), each retried while the Store is unavailable until its first message's
   * time runs out. One drain per topic at a time: emits made while a batch is written (or waits out
   * an outage) form the next one, so the topic keeps its order and a hot topic costs one write per
   * batch, not one per message.
   */
  const drain = async (topic: string, q: Queued[]) => {
    while (q.length > 0) {
      const batch = q.splice(0, EMIT_BATCH);
      try {
        const ready: { message: Json; failed: (err: unknown) => void }[] = [];
        for (const item of batch) {
          if (Date.now() > item.until) {
            item.failed(new Error(`the store was unavailable for more than ${retryMs} ms`));
            continue;
          }
          try {
            ready.push({ message: await item.message, failed: item.failed });
          } catch (err) {
            item.failed(err); // the message's own computation failed
          }
        }
        if (ready.length === 0) continue;
        try {
          await retryWhileUnavailable(() => publishMany(topic, ready.map((r) => r.message)), batch[0]!.until, { pause, stopped: () => closed });
        } catch (err) {
          for (const r of ready) r.failed(err);
        }
      } finally {
        waiting -= batch.length;
      }
    }
    queues.delete(topic);
  };

  /** A retained topic's emit: queued behind the topic's earlier ones, retried through an outage. */
  const emitRetained = (topic: string, message: Json | Promise<Json>, failed: (err: unknown) => void) => {
    if (waiting >= EMIT_BACKLOG) {
      if (message instanceof Promise) message.catch(() => undefined);
      return failed(new Error(`more than ${EMIT_BACKLOG} bus messages wait for the store`));
    }
    waiting++;
    // the time counts from the emit: after a long outage the messages queued behind run out at once
    const item: Queued = { message, until: Date.now() + retryMs, failed };
    const q = queues.get(topic);
    if (q) return void q.push(item);
    const fresh = [item];
    queues.set(topic, fresh);
    void drain(topic, fresh);
  };

  return {
    publish,
    publishMany,
    emit(topic, message) {
      const failed = (err: unknown) => opts.logger?.warn({ err, topic }, 'bus message not published');
      if (retention.get(topic)) return emitRetained(topic, message, failed);
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
      closed = true;
      for (const p of pauses) {
        clearTimeout(p.timer);
        p.wake();
      }
      pauses.clear();
      await unsubscribe?.();
      handlers.clear();
    },
  };
}
