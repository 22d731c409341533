import { errorBody } from '../errors.js';
import { invalidToken } from './auth.js';
import type { ConnectionCaps } from './connection-caps.js';
import type { HeldCredential } from './credentials.js';
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

  constructor(private readonly deps: { metrics: Metrics; sse: SseOptions; caps: ConnectionCaps }) {}

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
  start(res: HttpResponse, requestId: string, lastEventId: string | undefined, token: string | undefined, release?: () => void): SseStream {
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
    this.deps.metrics.sseStreams.inc();
    stream.onClose(() => {
      release?.();
      this.open.delete(stream);
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

  /** Ends every open stream (shutdown). */
  closeAll(): void {
    for (const s of this.open) s.close();
  }
}
