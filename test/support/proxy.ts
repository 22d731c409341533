import { createServer, connect, type Socket } from 'node:net';

export interface TcpProxy {
  /** http://127.0.0.1:<port> of the proxy. */
  url: string;
  /** Network drop: every open connection is cut and new ones are refused until restore(). */
  cut(): void;
  restore(): void;
  /** New connections go to another hub from now on (a restarted process on another port). */
  retarget(url: string): void;
  close(): Promise<void>;
}

/** A TCP relay in front of a hub, so a test can take a client offline and back (a real network drop). */
export async function tcpProxy(targetUrl: string): Promise<TcpProxy> {
  let target = new URL(targetUrl);
  const open = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    const both = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', both);
    upstream.on('close', both);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    cut() {
      down = true;
      for (const s of open) s.destroy();
    },
    restore() {
      down = false;
    },
    retarget(url) {
      target = new URL(url);
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
}

/**
 * A TCP relay that holds every chunk `delayMs` before passing it on, in both directions and in
 * order: a slow network in front of a server (e.g. Redis, so each store round trip of a hub takes
 * at least twice the delay and a test can act while a request waits on its store).
 */
export async function latencyProxy(
  target: { host: string; port: number },
  delayMs: number,
): Promise<{ port: number; close(): Promise<void>; setDelay(ms: number): void }> {
  const open = new Set<Socket>();
  let delay = delayMs;
  const relay = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, delay);
    });
    from.on('close', () => setTimeout(() => to.destroy(), delay));
  };
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => undefined);
    }
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    /** Every connection ends at once: chunks still held are never delivered. */
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
    /** The delay of chunks that arrive from now on. */
    setDelay: (ms: number) => void (delay = ms),
  };
}
