import type { Bus, BusMessage, HistoryResult, StreamPosition } from '../bus.js';
import { Topics, type SocketData } from './topics.js';
import type { WebSocket } from './uws.js';

/**
 * What the hub needs of the Bus: its messages, the history of retained topics, and (a Bus shared
 * between processes) following the topics its clients follow.
 */
export type HistoryBus = Pick<Bus, 'onMessage' | 'history' | 'retain' | 'retained'> & Partial<Pick<Bus, 'follow'>>;

export type BusListener = (msg: BusMessage) => void;

/** Live messages a recovering subscriber may hold while its history is read; past it, it reloads. */
const MAX_RECOVERY_BUFFER = 10_000;
/** Retained topics whose last delivered position the hub remembers (least recently used dropped). */
const MAX_TRACKED_TOPICS = 10_000;

/** Where a retained topic's delivery stands here, and what waits while a gap is filled. */
interface TopicPosition {
  epoch: string;
  offset: number;
  filling?: BusMessage[];
}

/**
 * The hub's side of the Bus: every bus message goes to the WebSocket topics and to the SSE streams
 * listening on its topic; a subscriber that comes back with a position gets what it missed from the
 * Bus history first (Centrifuge's recovery). While the history is read, live messages of the topic
 * are held back and sent after it, without the ones the history already gave, so nothing is lost
 * or doubled between the two.
 *
 * Each topic a client here follows is followed on the Bus (`follow`) from before its history is
 * read until the last client here leaves it, so this process hears the other processes' messages
 * on it, and only on the topics (partitions) its clients follow.
 *
 * Each retained topic followed here is delivered in offset order, once: a message of another
 * process that arrives past a gap (the pub/sub connection was down while it was published: a Redis
 * restart or failover) first brings the missing ones from the history, so the sockets and streams
 * of this process miss nothing; one already delivered (through such a fill) is not delivered again.
 * A topic's position is forgotten when nothing here follows it any more (its partition may then
 * be unsubscribed, and a later message is no gap to fill).
 */
export class Live {
  private bus?: HistoryBus;
  private readonly retentions: [string, number][] = [];
  private readonly listeners = new Map<string, Set<BusListener>>();
  private readonly positions = new Map<string, TopicPosition>();
  /** Topics followed here (sockets, streams, subscriptions being made), with their follower counts. */
  private readonly followers = new Map<string, number>();

  constructor(private readonly topics: Topics) {}

  attach(bus: HistoryBus): () => void {
    this.bus = bus;
    for (const [pattern, size] of this.retentions) bus.retain(pattern, { size });
    return bus.onMessage((msg) => this.dispatch(msg));
  }

  /** Keep a history of `size` publications for the topics matching `pattern` ('*' suffix: prefix). */
  retain(pattern: string, size: number): void {
    this.retentions.push([pattern, size]);
    this.bus?.retain(pattern, { size });
  }

  retained(topic: string): boolean {
    return this.bus?.retained(topic) ?? false;
  }

  history(topic: string, since?: StreamPosition): Promise<HistoryResult> {
    if (!this.bus) return Promise.reject(new Error('no bus attached to the hub'));
    return this.bus.history(topic, since);
  }

  /** Every message of one topic (SSE streams, recovery buffers). Returns the unsubscribe. */
  listen(topic: string, fn: BusListener): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(fn);
    return () => {
      set!.delete(fn);
      if (set!.size === 0 && this.listeners.get(topic) === set) this.listeners.delete(topic);
    };
  }

  /**
   * Follows `topic` for a client here: on the Bus (resolves once this process hears the topic's
   * messages from every process), and for the topic's delivery in order. Resolves with the release.
   */
  async follow(topic: string): Promise<() => void> {
    this.followers.set(topic, (this.followers.get(topic) ?? 0) + 1);
    let onBus: (() => void) | undefined;
    try {
      onBus = await this.bus?.follow?.(topic);
    } catch (err) {
      this.unfollow(topic);
      throw err;
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      onBus?.();
      this.unfollow(topic);
    };
  }

  /** Follows every topic of `topics` (follow); all or none. Resolves with the release of all. */
  async followAll(topics: string[]): Promise<() => void> {
    const held = await Promise.allSettled(topics.map((t) => this.follow(t)));
    const releases = held.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const release = () => releases.forEach((r) => r());
    const failed = held.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      release();
      throw failed.reason;
    }
    return release;
  }

  /** The topics followed here, with their follower counts. */
  followed(): Map<string, number> {
    return new Map(this.followers);
  }

  private unfollow(topic: string): void {
    const n = (this.followers.get(topic) ?? 1) - 1;
    if (n > 0) return void this.followers.set(topic, n);
    this.followers.delete(topic);
    this.positions.delete(topic);
  }

  /** A bus message: in offset order and once for a retained topic followed here (see the class), else at once. */
  dispatch(msg: BusMessage): void {
    if (msg.offset === undefined || msg.epoch === undefined || !this.followers.has(msg.topic)) return this.deliver(msg);
    let p = this.positions.get(msg.topic);
    if (p) {
      this.positions.delete(msg.topic); // least recently used last
      this.positions.set(msg.topic, p);
    }
    if (!p || p.epoch !== msg.epoch) {
      this.track(msg.topic, { epoch: msg.epoch, offset: msg.offset });
      return this.deliver(msg);
    }
    if (p.filling) {
      p.filling.push(msg);
      return;
    }
    if (msg.offset <= p.offset) return; // delivered already
    if (msg.offset === p.offset + 1 || !this.bus) {
      p.offset = msg.offset;
      return this.deliver(msg);
    }
    p.filling = [msg];
    void this.fill(msg.topic, p);
  }

  private track(topic: string, p: TopicPosition): void {
    this.positions.set(topic, p);
    if (this.positions.size > MAX_TRACKED_TOPICS) this.positions.delete(this.positions.keys().next().value!);
  }

  /** Delivers what the history holds between the topic's position and the messages waiting. */
  private async fill(topic: string, p: TopicPosition): Promise<void> {
    try {
      const h = await this.bus!.history(topic, { offset: p.offset, epoch: p.epoch });
      if (h.recovered && h.position.epoch === p.epoch) {
        for (const pub of h.publications) {
          if (pub.offset <= p.offset) continue;
          p.offset = pub.offset;
          this.deliver({ topic, message: pub.message, offset: pub.offset, epoch: p.epoch });
        }
      }
    } catch {
      // the store is out again: what waits is delivered as it is, with its gap
    }
    const waiting = (p.filling ?? []).sort((a, b) => a.offset! - b.offset!);
    p.filling = undefined;
    for (const m of waiting) {
      if (m.epoch !== p.epoch) p.epoch = m.epoch!; // the history was reset meanwhile: start over from it
      else if (m.offset! <= p.offset) continue;
      p.offset = m.offset!;
      this.deliver(m);
    }
  }

  private deliver(msg: BusMessage): void {
    const pos = msg.offset !== undefined && msg.epoch !== undefined ? { offset: msg.offset, epoch: msg.epoch } : undefined;
    this.topics.deliver(msg.topic, msg.message, pos);
    const set = this.listeners.get(msg.topic);
    if (!set) return;
    for (const fn of set) {
      try {
        fn(msg);
      } catch {
        // one faulty stream must not stop the others
      }
    }
  }

  /**
   * Subscribes a /ws socket. A retained topic answers with the stream's position, and with `since`
   * also `recovered`: true and the missed messages right after the answer, or false (with a reason)
   * when they are no longer known; the client then reloads what it shows.
   */
  async subscribeSocket(
    ws: WebSocket<SocketData>,
    topic: string,
    since: StreamPosition | undefined,
    reply: (obj: unknown) => void,
  ): Promise<void> {
    const data = ws.getUserData();
    if (!this.bus || !this.bus.retained(topic)) {
      const release = await this.follow(topic);
      if (data.closed) return release();
      this.topics.subscribe(ws, topic, release);
      return reply({ type: 'subscribed', topic });
    }
    const held: BusMessage[] = [];
    let overflow = false;
    const stop = this.listen(topic, (m) => {
      if (held.length < MAX_RECOVERY_BUFFER) held.push(m);
      else overflow = true;
    });
    let release: (() => void) | undefined;
    try {
      // followed before the history is read (Centrifuge: subscribe, then read the history): a
      // message published after the read is heard here, one published before it is in the history
      release = await this.follow(topic);
      const h = await this.bus.history(topic, since);
      if (data.closed) return;
      const recovered = h.recovered && !overflow;
      const answer: Record<string, unknown> = { type: 'subscribed', topic, position: h.position };
      if (since) {
        answer.recovered = recovered;
        if (!recovered) answer.reason = overflow ? 'gap' : h.reason;
      }
      reply(answer);
      let last = h.position;
      if (since && recovered) {
        const replay = this.topics.spec(topic)?.replay;
        for (const p of h.publications) {
          last = { offset: p.offset, epoch: h.position.epoch };
          if (replay && !replay(topic, p.message, data.identity)) continue;
          ws.send(Topics.frame(topic, p.message, { offset: p.offset, epoch: h.position.epoch }), false);
        }
      }
      for (const m of held) {
        if (m.epoch === last.epoch && m.offset !== undefined && m.offset <= last.offset) continue;
        ws.send(Topics.frame(topic, m.message, m.offset !== undefined ? { offset: m.offset, epoch: m.epoch! } : undefined), false);
      }
      // the socket holds the follow from here until it leaves the topic
      this.topics.subscribe(ws, topic, release);
      release = undefined;
    } finally {
      stop();
      release?.();
    }
  }
}

/** A `since` from a client frame, or undefined when absent; throws on a malformed one. */
export function parseSince(v: unknown): StreamPosition | undefined {
  if (v === undefined || v === null) return undefined;
  const o = v as { offset?: unknown; epoch?: unknown };
  if (
    typeof o !== 'object' ||
    !Number.isSafeInteger(o.offset) ||
    (o.offset as number) < 0 ||
    typeof o.epoch !== 'string' ||
    !/^[\w-]{1,64}$/.test(o.epoch)
  ) {
    throw new TypeError('since must be {offset: integer >= 0, epoch: string}');
  }
  return { offset: o.offset as number, epoch: o.epoch };
}
