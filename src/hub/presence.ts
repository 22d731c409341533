import type { Logger } from 'pino';
import { count, type PresenceEntry, type PresenceManager } from '../presence.js';
import type { SseRouteDef } from './pipeline.js';
import type { Topics } from './topics.js';

/**
 * The hub's presence of topics declared with `presence: true` (TopicSpec): a WebSocket subscriber
 * or an SSE stream's client is added to the topic's presence (hub.presence, in the Store, so every
 * process sees one set) when it subscribes, renewed by this process while it stays, and removed
 * when it unsubscribes or its connection closes. A process that dies without removing its clients
 * stops renewing them: they time out, and the sweep (any process) removes them.
 *
 * Every change is published on the topic itself, so its subscribers see who comes and goes and the
 * counts (PresenceEvent).
 */
export interface PresenceEvent {
  type: 'presence';
  event: 'join' | 'leave';
  topic: string;
  /** The client's id on the topic (a socket, a stream). */
  client: string;
  /** The identity behind it, null for an anonymous client. */
  user: string | null;
  /** Leaves only: `left` (unsubscribed, closed) or `timeout` (no heartbeat: its process is gone). */
  reason?: 'left' | 'timeout';
  /** Clients on the topic after the change, and distinct identities among them (each anonymous client one). */
  clients: number;
  users: number;
}

export interface TopicPresenceDeps {
  /** The Store-backed presence; throws until the hub has a store. */
  manager: () => PresenceManager;
  /** Publishes on the topic to every process (the Bus), or to this one's subscribers without one. */
  publish: (topic: string, event: PresenceEvent) => void;
  log: Logger;
  /** Names this process in client ids (`<instance>:ws:<socket>`, `<instance>:sse:<n>`). */
  instance: string;
  topics: Topics;
}

/** Identity ids of anonymous clients are `anon:<client>`: counted apart, published as null. */
const ANON = 'anon:';

export class TopicPresence {
  /** This process's clients on presence topics: topic -> client -> user. */
  private readonly local = new Map<string, Map<string, string>>();
  /** One client's joins and leaves run in order. */
  private readonly pending = new Map<string, Promise<void>>();
  private timers: NodeJS.Timeout[] = [];
  private nextStream = 1;

  constructor(private readonly deps: TopicPresenceDeps) {
    deps.topics.membership = (event, topic, ws) => {
      const { id, identity } = ws.getUserData();
      const client = `${deps.instance}:ws:${id}`;
      if (event === 'join') this.join(topic, client, identity?.id);
      else this.leave(topic, client);
    };
  }

  /** An SSE stream's `open` whose client is on the presence of those of `topics` declared with it. */
  stream<Q>(topics: string[], open: SseRouteDef<Q>['open']): SseRouteDef<Q>['open'] {
    return (ctx, stream) => {
      const on = topics.filter((t) => this.deps.topics.spec(t)?.presence);
      const client = `${this.deps.instance}:sse:${this.nextStream++}`;
      for (const t of on) this.join(t, client, ctx.identity?.id);
      if (on.length) stream.onClose(() => on.forEach((t) => this.leave(t, client)));
      return open(ctx, stream);
    };
  }

  join(topic: string, client: string, identity: string | undefined): void {
    const user = identity ?? `${ANON}${client}`;
    let clients = this.local.get(topic);
    if (!clients) this.local.set(topic, (clients = new Map()));
    clients.set(client, user);
    this.queue(topic, client, async () => {
      const out = await this.deps.manager().add(topic, client, { user });
      if (out.joined) this.announce(topic, 'join', out.entry, out.entries);
    });
  }

  leave(topic: string, client: string): void {
    const clients = this.local.get(topic);
    if (!clients?.delete(client)) return;
    if (clients.size === 0) this.local.delete(topic);
    this.queue(topic, client, async () => {
      const out = await this.deps.manager().remove(topic, client);
      if (out) this.announce(topic, 'leave', out.entry, out.entries, 'left');
    });
  }

  /** Renews every client of this process (the heartbeat). */
  async heartbeat(): Promise<void> {
    for (const [topic, clients] of this.local) {
      for (const [client, user] of clients) {
        this.queue(topic, client, async () => {
          // a client that left meanwhile is not brought back
          if (this.local.get(topic)?.get(client) !== user) return;
          const out = await this.deps.manager().add(topic, client, { user });
          if (out.joined) this.announce(topic, 'join', out.entry, out.entries);
        });
      }
    }
    await Promise.all(this.pending.values());
  }

  /** Removes the clients that timed out (on any process), announcing each. */
  async sweep(): Promise<number> {
    let removed = 0;
    for (const s of await this.deps.manager().sweep()) {
      for (const entry of s.removed) {
        removed++;
        this.announce(s.topic, 'leave', entry, s.left, 'timeout');
      }
    }
    return removed;
  }

  /** Heartbeats every third of the time-out, sweeps every half. */
  start(timeoutMs: number): void {
    this.stop();
    const quiet = (p: Promise<unknown>) => p.catch((err: unknown) => this.deps.log.warn({ err }, 'presence round failed'));
    this.timers = [
      setInterval(() => void quiet(this.heartbeat()), Math.max(1, Math.floor(timeoutMs / 3))).unref(),
      setInterval(() => void quiet(this.sweep()), Math.max(1, Math.floor(timeoutMs / 2))).unref(),
    ];
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /** This process's clients on the topic. */
  localCount(topic: string): number {
    return this.local.get(topic)?.size ?? 0;
  }

  private queue(topic: string, client: string, step: () => Promise<void>): void {
    const key = `${topic}\n${client}`;
    const run = (this.pending.get(key) ?? Promise.resolve())
      .then(step)
      .catch((err: unknown) => this.deps.log.warn({ err, topic, client }, 'presence change failed'));
    this.pending.set(key, run);
    void run.then(() => {
      if (this.pending.get(key) === run) this.pending.delete(key);
    });
  }

  private announce(topic: string, event: 'join' | 'leave', entry: PresenceEntry, entries: PresenceEntry[], reason?: 'left' | 'timeout'): void {
    const msg: PresenceEvent = {
      type: 'presence',
      event,
      topic,
      client: entry.id,
      user: entry.user.startsWith(ANON) ? null : entry.user,
      ...(reason ? { reason } : {}),
      ...count(entries),
    };
    this.deps.publish(topic, msg);
  }
}
