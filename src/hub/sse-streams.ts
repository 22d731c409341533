import { errorBody } from '../errors.js';
import { invalidToken } from './auth.js';
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

  constructor(private readonly deps: { metrics: Metrics; sse: SseOptions }) {}

  /** Writes the stream's status and headers and returns it, listed until it closes. */
  start(res: HttpResponse, requestId: string, lastEventId: string | undefined, token: string | undefined): SseStream {
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
