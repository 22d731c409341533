import { errorBody } from '../errors.js';
import { invalidToken } from './auth.js';
import type { ConnectionCaps } from './connection-caps.js';
import type { HeldCredential } from './credentials.js';
import type { HeldConnection } from './connections.js';
import { AppError } from '../errors.js';
import type { Metrics } from './metrics.js';
import { writeSecurity } from './respond.js';
import { SseStream, type SseOptions } from './sse.js';
import type { HttpResponse } from './uws.js';

/**
 * The hub's open SSE streams: each starts here (status, headers, the stream, the open-stream
 * metric), stays listed while open, may hold the token it was opened with (checked again:
 * hub/credentials.ts), and ends with the hub (`closeAll`). The pipeline opens them for SSE routes.
 */
export class SseStreams {
  private readonly open = new Set<SseStream>();
  /** What the console lists of each open stream (hub/connections.ts). */
  private readonly about = new Map<SseStream, { n: number; user: string | null; endpoint: string; address: string; openedAt: number }>();
  private nextStream = 1;

  constructor(private readonly deps: { metrics: Metrics; sse: SseOptions; caps: ConnectionCaps; node: string }) {}

  /**
   * Takes a connection slot for a stream about to open (hub/connection-caps.ts): throws 429
   * `too_many_connections` before anything is written when the client has too many open.
   */
  admit(address: string, identity: string | undefined): () => void {
    return this.deps.caps.acquire(address, identity);
  }

  /** The streams open now (tests: every closed one has left the registry). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Writes the stream's status and headers and returns it, listed until it closes; `release` (its
   * connection slot from `admit`) is given back when it closes.
   */
  start(
    res: HttpResponse,
    requestId: string,
    lastEventId: string | undefined,
    token: string | undefined,
    release?: () => void,
    who: { user?: string | undefined; endpoint: string; address: string } = { endpoint: '', address: '' },
  ): SseStream {
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('content-type', 'text/event-stream; charset=utf-8');
      res.writeHeader('cache-control', 'no-store');
      res.writeHeader('x-accel-buffering', 'no');
      res.writeHeader('x-request-id', requestId);
      writeSecurity(res);
    });
    const stream = new SseStream(res, lastEventId, this.deps.sse);
    stream.token = token;
    this.open.add(stream);
    this.about.set(stream, { n: this.nextStream++, user: who.user ?? null, endpoint: who.endpoint, address: who.address, openedAt: Date.now() });
    this.deps.metrics.sseStreams.inc();
    stream.onClose(() => {
      release?.();
      this.open.delete(stream);
      this.about.delete(stream);
      this.deps.metrics.sseStreams.dec();
    });
    return stream;
  }

  /** The open streams that hold a token, each ended with a `closed` event (error invalid_token). */
  *credentials(): Generator<HeldCredential> {
    for (const stream of this.open) {
      const token = stream.token;
      if (token === undefined || stream.closed) continue;
      yield {
        token,
        end: () => {
          stream.send({ event: 'closed', data: errorBody(invalidToken()) });
          stream.close();
        },
      };
    }
  }

  /**
   * The open streams as the console lists them, each with the operator's disconnect: a `closed`
   * event with the error body (`disconnected`, or `invalid_token` when the tokens were revoked), then the end.
   */
  *held(): Generator<HeldConnection> {
    for (const [stream, a] of this.about) {
      if (stream.closed) continue;
      yield {
        info: () => ({
          id: `${this.deps.node}:sse:${a.n}`,
          kind: 'sse',
          endpoint: a.endpoint,
          user: a.user,
          remote_address: a.address,
          opened_at: new Date(a.openedAt).toISOString(),
          topics: [],
        }),
        end: (reason) => {
          if (stream.closed) return;
          const why = reason === 'revoked' ? invalidToken() : new AppError('forbidden', 'disconnected', 'an operator ended this connection');
          stream.send({ event: 'closed', data: errorBody(why) });
          stream.close();
        },
      };
    }
  }

  /** Ends every open stream (shutdown). */
  closeAll(): void {
    for (const s of this.open) s.close();
  }
}
