import WebSocket from 'ws';

export interface TopicClient {
  ws: WebSocket;
  /** The next frame (JSON-parsed), waiting for it when none is queued. */
  next: (timeoutMs?: number) => Promise<any>;
  /** Subscribes and waits for the acknowledgement. */
  subscribe: (topic: string) => Promise<void>;
  /** Presents a bearer token ({type: "auth"}) and waits for the acknowledgement. */
  auth: (token: string) => Promise<void>;
  close: () => void;
}

/** A real WebSocket client of the hub's /ws topics endpoint. */
export function connectTopics(baseUrl: string): Promise<TopicClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(baseUrl.replace(/^http/, 'ws') + '/ws');
    const frames: any[] = [];
    const waiters: ((f: any) => void)[] = [];
    ws.on('message', (d) => {
      const f = JSON.parse(String(d));
      const w = waiters.shift();
      if (w) w(f);
      else frames.push(f);
    });
    const next = (timeoutMs = 5000) =>
      frames.length
        ? Promise.resolve(frames.shift())
        : new Promise((res, rej) => {
            const t = setTimeout(() => rej(new Error(`no frame within ${timeoutMs} ms`)), timeoutMs);
            waiters.push((f) => {
              clearTimeout(t);
              res(f);
            });
          });
    const client: TopicClient = {
      ws,
      next,
      subscribe: async (topic) => {
        ws.send(JSON.stringify({ type: 'subscribe', topic }));
        const ack = await next();
        if (ack.type !== 'subscribed' || ack.topic !== topic) throw new Error(`subscribe failed: ${JSON.stringify(ack)}`);
      },
      auth: async (token) => {
        ws.send(JSON.stringify({ type: 'auth', token }));
        const ack = await next();
        if (ack.type !== 'authenticated') throw new Error(`auth failed: ${JSON.stringify(ack)}`);
      },
      close: () => ws.close(),
    };
    ws.on('open', () => resolve(client));
    ws.on('error', reject);
  });
}
