import { isStoreUnavailable } from './errors.js';
import type { Json, Store, Unsubscribe } from './store/port.js';
import { partitionKey, partitionKeys } from './store/partition.js';
import {
  RetentionTable,
  TopicHistory,
  topicChannel,
  topicPartition,
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
 * Channels: one per partition of the keyspace (`bus:{#p}`, the partition of the topic's history key:
 * bus/history.ts), so on a Redis Cluster a message stays on its shard (SPUBLISH/SSUBSCRIBE) and a
 * retained topic's history append and its publication are one script there. A process subscribes
 * only to the channels of the partitions whose topics something here follows (`follow`: the hub
 * for each topic its WebSocket and SSE clients follow, services for the topics they listen to
 * across processes); a partition followed no more is unsubscribed `lingerMs` (BUS_LINGER_MS) after
 * its last follower leaves, so a client that comes and goes does not churn subscriptions.
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
  /**
   * Every message this process hears: each one published here, and those of the other processes
   * on the topics followed here (`follow`). Returns an unsubscribe.
   */
  onMessage(handler: BusHandler): () => void;
  /**
   * Makes this process hear the messages other processes publish on `topic`: subscribes to the
   * channel of the topic's partition, unless something here follows that partition already, and
   * resolves once the subscription is in place (a history read after it misses nothing). Resolves
   * with the release; the partition's channel is unsubscribed `lingerMs` after its last release.
   * Rejects when the Store cannot subscribe (then nothing is held).
   */
  follow(topic: string): Promise<() => void>;
  /** The partitions whose channels this process is subscribed to now (lingering ones included), ascending. */
  subscribed(): number[];
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface BusOptions {
  /** Where emit() reports a failed publication. */
  logger?: { warn(obj: object, msg: string): void };
  /** Longest an emitted message of a retained topic is retried while the Store is unavailable, ms. */
  emitRetryMs?: number;
  /** How long a partition followed no more stays subscribed, ms (BUS_LINGER_MS). */
  lingerMs?: number;
}

/** How long a partition followed no more stays subscribed by default: 5 seconds. */
export const BUS_LINGER_MS = 5000;

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

/** The Store channels carrying bus messages between processes, one per partition; a topic's is `topicChannel(topic)`. */
export const BUS_CHANNELS = partitionKeys('bus');
export { topicChannel, topicPartition };

/** One partition's channel subscription: its followers, and the release pending when it has none. */
interface Following {
  count: number;
  /** The Store subscription; rejected when it could not be made. */
  ready: Promise<Unsubscribe>;
  linger?: NodeJS.Timeout;
}

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

/** Pause before a refused follow of followAlways is tried again. */
const FOLLOW_RETRY_MS = 1000;

/**
 * Follows `topic` on `bus` until the returned stop is called, for a service that hears a topic's
 * messages from every process for as long as it runs (trading's program events, collab's access
 * changes): a follow the Store refuses (Redis out of reach) is tried again every second, with a
 * warning.
 */
export function followAlways(bus: Pick<Bus, 'follow'>, topic: string, warn?: (obj: object, msg: string) => void): () => void {
  let stopped = false;
  let release: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const attempt = () => {
    timer = undefined;
    bus.follow(topic).then(
      (r) => (stopped ? r() : (release = r)),
      (err) => {
        if (stopped) return;
        warn?.({ err, topic }, 'bus topic not followed; trying again');
        timer = setTimeout(attempt, FOLLOW_RETRY_MS);
        timer.unref();
      },
    );
  };
  attempt();
  return () => {
    stopped = true;
    clearTimeout(timer);
    release?.();
    release = undefined;
  };
}

export function createBus(store: Store, origin: string, opts: BusOptions = {}): Bus {
  const handlers = new Set<BusHandler>();
  const retention = new RetentionTable();
  const history = new TopicHistory(store);
  /** The subscribed partitions (and those being subscribed), by partition number. */
  const following = new Map<number, Following>();
  const lingerMs = opts.lingerMs ?? BUS_LINGER_MS;
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
      await store.publish(topicChannel(topic), JSON.stringify({ o: origin, t: topic, m: message }));
      return 0;
    }
    // the history append publishes the message to the other processes in the same update: a
    // subscriber that sees the message can always find it again, and a message in the history is
    // always announced (a process that missed it fills the gap at the topic's next one: hub/live.ts)
    const pos = await history.append(topic, message, kept.size, announce(topic));
    deliver({ topic, message, offset: pos.offset, epoch: pos.epoch });
    return pos.offset;
  };

  /** The envelope of a retained topic's message as the other processes read it. */
  const announce = (topic: string) => (message: Json, pos: { offset: number; epoch: string }) =>
    JSON.stringify({ o: origin, t: topic, m: message, n: pos.offset, e: pos.epoch });

  const publishMany = async (topic: string, messages: Json[]): Promise<number[]> => {
    const kept = retention.get(topic);
    if (!kept || messages.length === 0) {
      const out: number[] = [];
      for (const m of messages) out.push(await publish(topic, m));
      return out;
    }
    const positions = await history.appendMany(topic, messages, kept.size, announce(topic));
    for (const [i, pos] of positions.entries()) deliver({ topic, message: messages[i]!, offset: pos.offset, epoch: pos.epoch });
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

  /** A message of another process, as its channel carries it. */
  const receive = (raw: string) => {
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
  };

  /** Unsubscribes a partition nothing follows any more (its linger ran out). */
  const drop = (p: number, f: Following) => {
    f.linger = undefined;
    if (f.count > 0 || following.get(p) !== f) return;
    following.delete(p);
    void f.ready.then((off) => off()).catch(() => undefined);
  };

  const follow = async (topic: string): Promise<() => void> => {
    if (closed) throw new Error('the bus is closed');
    const p = topicPartition(topic);
    let f = following.get(p);
    if (!f) {
      const fresh: Following = { count: 0, ready: Promise.resolve(() => Promise.resolve()) };
      // only the partition's current subscription delivers: while an old one is being unsubscribed
      // and a new one made, the channel has two handlers, and a message must not arrive twice
      fresh.ready = store.subscribe(partitionKey('bus', p), (raw) => {
        if (following.get(p) === fresh) receive(raw);
      });
      fresh.ready.catch(() => {
        if (following.get(p) === fresh) following.delete(p);
      });
      following.set(p, (f = fresh));
    }
    const held = f;
    held.count++;
    clearTimeout(held.linger);
    held.linger = undefined;
    try {
      await held.ready;
    } catch (err) {
      held.count--;
      throw err;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--held.count > 0 || following.get(p) !== held) return;
      held.linger = setTimeout(() => drop(p, held), lingerMs);
      held.linger.unref();
    };
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
    follow,
    subscribed: () => [...following.keys()].sort((a, b) => a - b),
    async start() {
      // nothing to subscribe before something follows a topic (follow)
    },
    async close() {
      closed = true;
      for (const p of pauses) {
        clearTimeout(p.timer);
        p.wake();
      }
      pauses.clear();
      const subs = [...following.values()];
      following.clear();
      for (const f of subs) clearTimeout(f.linger);
      await Promise.all(subs.map((f) => f.ready.then((off) => off()).catch(() => undefined)));
      handlers.clear();
    },
  };
}
