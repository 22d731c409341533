/** Browser side of the hub's WebSocket topics: subscribe, reconnect with backoff, resubscribe. */
export type Listener = (data: unknown) => void;

export class LiveTopics {
  private ws?: WebSocket;
  private listeners = new Map<string, Set<Listener>>();
  private retry = 500;
  private stateListeners = new Set<(connected: boolean) => void>();

  /** `token`: the bearer token to present before subscribing (topics that need a signed-in identity). */
  constructor(
    private readonly url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`,
    private readonly token: () => string | undefined = () => undefined,
  ) {
    this.connect();
  }

  /** After signing in (or out): present the new token and subscribe again (frames are handled in order). */
  reauthenticate(): void {
    const t = this.token();
    if (t) this.send({ type: 'auth', token: t });
    for (const topic of this.listeners.keys()) this.send({ type: 'subscribe', topic });
  }

  on(topic: string, fn: Listener): () => void {
    let set = this.listeners.get(topic);
    if (!set) {
      this.listeners.set(topic, (set = new Set()));
      this.send({ type: 'subscribe', topic });
    }
    set.add(fn);
    return () => set!.delete(fn);
  }

  onConnection(fn: (connected: boolean) => void): void {
    this.stateListeners.add(fn);
  }

  private send(frame: unknown): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  private connect(): void {
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 500;
      const t = this.token();
      if (t) this.send({ type: 'auth', token: t });
      for (const topic of this.listeners.keys()) this.send({ type: 'subscribe', topic });
      for (const fn of this.stateListeners) fn(true);
    };
    ws.onmessage = (ev) => {
      const frame = JSON.parse(String(ev.data));
      if (frame.type === 'message') for (const fn of this.listeners.get(frame.topic) ?? []) fn(frame.data);
    };
    ws.onclose = () => {
      for (const fn of this.stateListeners) fn(false);
      setTimeout(() => this.connect(), this.retry);
      this.retry = Math.min(this.retry * 2, 10_000);
    };
  }
}

export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { headers: { accept: 'application/json' } });
  const body = await res.json();
  if (!res.ok) throw new Error(body?.error?.message ?? `${res.status}`);
  return body as T;
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
