import type { TemplatedApp, WebSocket } from './uws.js';
import type { Metrics } from './metrics.js';
import type { Principal } from './http.js';

/**
 * What happens to a subscriber that cannot keep up:
 * - 'drop': the message is skipped for that subscriber (presence, ticks: the next one supersedes it);
 * - 'close': the subscriber is disconnected with 1013 so it reconnects and resynchronises
 *   (money, receipts: a gap must never pass silently).
 */
export type BackpressurePolicy = 'drop' | 'close';

export interface TopicSpec {
  /** Exact topic name, or a prefix ending in '*' (e.g. "program:*"). */
  name: string;
  policy: BackpressurePolicy;
  /** Bytes of unsent data a subscriber may hold before the policy applies. */
  /** 'close' topics only; 'drop' topics use the socket behaviour's limit (uWS skips slow receivers). */
  maxBackpressure?: number;
  /**
   * Who may subscribe, and whether the named topic exists (a document, a job, a ticket): 'ok',
   * 'unknown' (answered as unknown_topic), 'unauthorized' (no identity yet) or 'forbidden'.
   * `{pending}`: a name that may come to exist in a moment (a job the client is about to post): the
   * subscription is made, and ended with an `unknown_topic` error frame if `pending` resolves false.
   * Absent: anyone may subscribe to any name the spec matches.
   */
  authorize?(topic: string, identity: Principal | undefined): TopicVerdict | Promise<TopicVerdict>;
  /**
   * Publications kept in the Bus history for each topic the spec matches. Messages then carry
   * `offset` and `epoch`, and a client may subscribe with `since: {offset, epoch}` to get what it
   * missed (see hub/live.ts).
   */
  history?: number;
  /**
   * Presence (hub.presence): each WebSocket subscriber, and each client of an SSE stream over the
   * topic, is on the topic's presence while subscribed, and a `presence` join or leave event with
   * the topic's counts is published on the topic (hub/presence.ts).
   */
  presence?: boolean;
  /**
   * Which retained messages a subscriber may be sent again when it recovers with `since` (the
   * history was published to whoever listened then; what it says may since have become private):
   * false leaves the message out of the replay. Absent: all of them.
   */
  replay?(topic: string, message: unknown, identity: Principal | undefined): boolean;
}

export type TopicVerdict = 'ok' | 'unknown' | 'unauthorized' | 'forbidden' | { pending: Promise<boolean> };

/**
 * For a `{pending}` verdict: resolves true once `exists(tick)` does (asked every `everyMs`, with
 * the count of the ask, so a costlier look may be made on every n-th), false after `waitMs`.
 */
export async function appearsWithin(exists: (tick: number) => boolean | Promise<boolean>, waitMs: number, everyMs: number): Promise<boolean> {
  for (let tick = 1, until = Date.now() + waitMs; Date.now() < until; tick++) {
    await new Promise((r) => setTimeout(r, everyMs).unref());
    if (await exists(tick)) return true;
  }
  return false;
}

export interface SocketData {
  id: number;
  remoteAddress: string;
  topics: Set<string>;
  closed: boolean;
  /** Set by an {type: "auth"} frame, or by the upgrade of an endpoint that declares `auth`. */
  identity?: Principal;
  /** The token behind `identity`, checked again while the socket is open (hub/credentials.ts). */
  token?: string;
  /** The socket's frames, handled one after the other (see Hub.onClientFrame). */
  queue?: Promise<void>;
  queued?: number;
  /** Gives back the connection's slot (hub/connection-caps.ts); called once it closes. */
  release?: () => void;
  /** The Bus follows the socket holds, one per topic it is subscribed to (hub/live.ts). */
  follows?: Map<string, () => void>;
  /** The slot of the identity an `auth` frame named, when it is not the upgrade's. */
  releaseIdentity?: () => void;
  /** When it opened (ms since the epoch) and the endpoint's pattern it came in on (the console's list). */
  openedAt?: number;
  endpoint?: string;
  /** The socket's message budget (hub/sockets.ts spendMessage): what is left, and when it was counted. */
  tokens?: number;
  refilledAt?: number;
}

const DEFAULT_MAX_BACKPRESSURE = 1 << 20;

/**
 * WebSocket topics: which topics exist, who listens, and delivery under each topic's policy.
 * 'drop' topics use uWS's native pub/sub (one C++ loop per message, slow receivers skipped);
 * 'close' topics keep their own subscriber sets so a slow receiver can be disconnected.
 */
export class Topics {
  private exact = new Map<string, TopicSpec>();
  private prefixes: TopicSpec[] = [];
  private subscribers = new Map<string, Set<WebSocket<SocketData>>>();

  /** Told when a socket starts or stops being a subscriber of a topic declared with `presence`. */
  membership: ((event: 'join' | 'leave', topic: string, ws: WebSocket<SocketData>) => void) | undefined;

  constructor(
    private readonly app: TemplatedApp,
    private readonly metrics: Metrics,
  ) {}

  define(spec: TopicSpec): void {
    if (spec.name.endsWith('*')) this.prefixes.push(spec);
    else this.exact.set(spec.name, spec);
  }

  /** Every defined topic name or prefix pattern (for the API reference). */
  names(): string[] {
    return [...this.exact.keys(), ...this.prefixes.map((p) => p.name)];
  }

  spec(topic: string): TopicSpec | undefined {
    return this.exact.get(topic) ?? this.prefixes.find((p) => topic.startsWith(p.name.slice(0, -1)));
  }

  /** The spec's verdict on a subscription (see TopicSpec.authorize). */
  async authorize(topic: string, identity: Principal | undefined): Promise<TopicVerdict> {
    const spec = this.spec(topic);
    if (!spec) return 'unknown';
    return spec.authorize ? spec.authorize(topic, identity) : 'ok';
  }

  /**
   * `follow` (Live.follow's release) is the socket's to hold until it leaves the topic; released
   * at once when the socket holds one for the topic already, or the topic is unknown.
   */
  subscribe(ws: WebSocket<SocketData>, topic: string, follow?: () => void): boolean {
    const spec = this.spec(topic);
    if (!spec) {
      follow?.();
      return false;
    }
    const data = ws.getUserData();
    if (follow) {
      const follows = (data.follows ??= new Map());
      if (follows.has(topic)) follow();
      else follows.set(topic, follow);
    }
    if (spec.presence && !data.topics.has(topic)) this.membership?.('join', topic, ws);
    data.topics.add(topic);
    if (spec.policy === 'drop') {
      ws.subscribe(topic);
      return true;
    }
    let set = this.subscribers.get(topic);
    if (!set) this.subscribers.set(topic, (set = new Set()));
    set.add(ws);
    return true;
  }

  unsubscribe(ws: WebSocket<SocketData>, topic: string): void {
    if (ws.getUserData().topics.has(topic) && this.spec(topic)?.presence) this.membership?.('leave', topic, ws);
    if (!ws.getUserData().closed) ws.unsubscribe(topic);
    const set = this.subscribers.get(topic);
    set?.delete(ws);
    if (set && set.size === 0) this.subscribers.delete(topic);
    ws.getUserData().topics.delete(topic);
    const follows = ws.getUserData().follows;
    follows?.get(topic)?.();
    follows?.delete(topic);
  }

  /** On close: uWS already dropped its native subscriptions; forget ours. */
  removeSocket(ws: WebSocket<SocketData>): void {
    const data = ws.getUserData();
    data.closed = true;
    for (const topic of data.topics) {
      if (this.spec(topic)?.presence) this.membership?.('leave', topic, ws);
      const set = this.subscribers.get(topic);
      if (!set) continue;
      set.delete(ws);
      // an emptied set is dropped, so memory returns once the sockets are gone
      if (set.size === 0) this.subscribers.delete(topic);
    }
    data.topics.clear();
    for (const release of data.follows?.values() ?? []) release();
    data.follows?.clear();
  }

  count(topic: string): number {
    return this.app.numSubscribers(topic) + (this.subscribers.get(topic)?.size ?? 0);
  }

  /** The frame of one message; a retained topic's message carries its stream position. */
  static frame(topic: string, data: unknown, pos?: { offset: number; epoch: string }): string {
    return JSON.stringify(pos ? { type: 'message', topic, data, offset: pos.offset, epoch: pos.epoch } : { type: 'message', topic, data });
  }

  /** Sends a JSON frame to every subscriber of the topic on this process. Returns deliveries. */
  deliver(topic: string, data: unknown, pos?: { offset: number; epoch: string }): number {
    const spec = this.spec(topic);
    if (!spec) return 0;
    const frame = Topics.frame(topic, data, pos);
    if (spec.policy === 'drop') {
      const n = this.app.numSubscribers(topic);
      if (n > 0) this.app.publish(topic, frame, false);
      return n;
    }
    const set = this.subscribers.get(topic);
    if (!set) return 0;
    const limit = spec.maxBackpressure ?? DEFAULT_MAX_BACKPRESSURE;
    let delivered = 0;
    for (const ws of set) {
      if (ws.getUserData().closed) continue;
      if (ws.getBufferedAmount() > limit) {
        this.metrics.wsDropped.labels(spec.policy).inc();
        if (spec.policy === 'close') {
          ws.getUserData().closed = true;
          ws.end(1013, 'subscriber too slow');
        }
        continue;
      }
      ws.send(frame, false);
      delivered++;
    }
    return delivered;
  }
}
