/**
 * Browser side of the hub's WebSocket topics: subscribe, reconnect with backoff, resubscribe, and
 * resume. For topics the hub keeps a history of, every message carries its position (offset,
 * epoch); after a reconnect the client subscribes with `since` its last position and the hub sends
 * what was missed first. When the hub cannot (the history was lost or the client was away too
 * long) it answers `recovered: false`, and the topic's reset handlers run: the page reloads what it
 * shows from the API.
 */
import { WS_CLOSE_INVALID_TOKEN } from '../../src/hub/credentials.js';

export type Listener = (data: unknown) => void;

interface Position {
  offset: number;
  epoch: string;
}

export class LiveTopics {
  private ws?: WebSocket;
  private listeners = new Map<string, Set<Listener>>();
  private resets = new Map<string, Set<() => void>>();
  private readies = new Map<string, Set<() => void>>();
  private positions = new Map<string, Position>();
  private retry = 500;
  private stateListeners = new Set<(connected: boolean) => void>();

  /**
   * `token`: the bearer token to present before subscribing (topics that need a signed-in identity);
   * `onTokenRejected`: the hub ended the socket because that token is no longer valid (the page
   * checks its session, e.g. Session.restore, which shows the sign-in form); the socket reconnects
   * with whatever token is current then.
   */
  constructor(
    private readonly url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`,
    private readonly token: () => string | undefined = () => undefined,
    private readonly onTokenRejected?: () => void,
  ) {
    this.connect();
  }

  /** After signing in (or out): present the new token and subscribe again (frames are handled in order). */
  reauthenticate(): void {
    const t = this.token();
    if (t) this.send({ type: 'auth', token: t });
    for (const topic of this.listeners.keys()) this.send(this.subscribeFrame(topic));
  }

  /**
   * Listens to a topic; `onReset` runs when missed messages could not be recovered; `onReady` each
   * time the hub acknowledges the subscription (what was published between the page's own load and
   * that moment reached nobody: the page loads it again).
   */
  on(topic: string, fn: Listener, onReset?: () => void, onReady?: () => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) {
      this.listeners.set(topic, (set = new Set()));
      this.send(this.subscribeFrame(topic));
    }
    set.add(fn);
    if (onReset) this.onReset(topic, onReset);
    if (onReady) {
      let ready = this.readies.get(topic);
      if (!ready) this.readies.set(topic, (ready = new Set()));
      ready.add(onReady);
    }
    return () => {
      set!.delete(fn);
      if (onReset) this.resets.get(topic)?.delete(onReset);
      if (onReady) this.readies.get(topic)?.delete(onReady);
    };
  }

  /** Runs `fn` whenever the hub answers a resumed subscription of `topic` with recovered: false. */
  onReset(topic: string, fn: () => void): void {
    let set = this.resets.get(topic);
    if (!set) this.resets.set(topic, (set = new Set()));
    set.add(fn);
  }

  onConnection(fn: (connected: boolean) => void): void {
    this.stateListeners.add(fn);
  }

  private subscribeFrame(topic: string): unknown {
    const since = this.positions.get(topic);
    return since ? { type: 'subscribe', topic, since } : { type: 'subscribe', topic };
  }

  private send(frame: unknown): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  private onFrame(frame: any): void {
    const topic = frame.topic as string;
    if (frame.type === 'subscribed') for (const fn of this.readies.get(topic) ?? []) fn();
    if (frame.type === 'subscribed' && frame.position) {
      if (frame.recovered === false) {
        this.positions.set(topic, frame.position);
        for (const fn of this.resets.get(topic) ?? []) fn();
      } else if (!this.positions.has(topic)) {
        this.positions.set(topic, frame.position);
      }
      return;
    }
    if (frame.type !== 'message') return;
    if (typeof frame.offset === 'number') {
      const p = this.positions.get(topic);
      // a message already seen (sent both live and from the history) is skipped
      if (p && p.epoch === frame.epoch && frame.offset <= p.offset) return;
      this.positions.set(topic, { offset: frame.offset, epoch: frame.epoch });
    }
    for (const fn of this.listeners.get(topic) ?? []) fn(frame.data);
  }

  private connect(): void {
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 500;
      const t = this.token();
      if (t) this.send({ type: 'auth', token: t });
      for (const topic of this.listeners.keys()) this.send(this.subscribeFrame(topic));
      for (const fn of this.stateListeners) fn(true);
    };
    ws.onmessage = (ev) => this.onFrame(JSON.parse(String(ev.data)));
    ws.onclose = (ev) => {
      for (const fn of this.stateListeners) fn(false);
      if (ev.code === WS_CLOSE_INVALID_TOKEN) this.onTokenRejected?.();
      setTimeout(() => this.connect(), this.retry);
      this.retry = Math.min(this.retry * 2, 10_000);
    };
  }
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}
