import type { HttpResponse } from './uws.js';

export interface SseEvent {
  event?: string;
  data: unknown;
  id?: string | number;
}

export interface SseOptions {
  heartbeatMs: number;
  /** Bytes a slow client may fall behind before the stream is closed (it resumes with Last-Event-ID). */
  maxBacklog: number;
  /** Client reconnection delay announced in the stream. */
  retryMs: number;
}

/**
 * One Server-Sent Events stream over a uWS response: heartbeat comments, backpressure (droppable
 * events are skipped while the client is behind; past maxBacklog the stream closes) and client abort.
 */
export class SseStream {
  private closedFlag = false;
  private congested = false;
  private backlog = 0;
  private closeHandlers: (() => void)[] = [];
  private heartbeat: NodeJS.Timeout;
  dropped = 0;
  /** The bearer token the stream was opened with, when its route needs one (checked again: hub/credentials.ts). */
  token: string | undefined;

  constructor(
    private readonly res: HttpResponse,
    readonly lastEventId: string | undefined,
    private readonly opts: SseOptions,
  ) {
    this.heartbeat = setInterval(() => this.write(': ping\n\n', true), opts.heartbeatMs);
    this.heartbeat.unref();
    this.write(`retry: ${opts.retryMs}\n\n`, false);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Returns false when the event was not written (stream closed, or dropped under backpressure). */
  send(ev: SseEvent, opts: { droppable?: boolean } = {}): boolean {
    let chunk = '';
    if (ev.id !== undefined) chunk += `id: ${String(ev.id).replace(/[\r\n]/g, '')}\n`;
    if (ev.event) chunk += `event: ${ev.event.replace(/[\r\n]/g, '')}\n`;
    const data = typeof ev.data === 'string' ? ev.data : JSON.stringify(ev.data);
    for (const line of data.split(/\r?\n/)) chunk += `data: ${line}\n`;
    return this.write(chunk + '\n', opts.droppable ?? false);
  }

  /**
   * An id-only block: the client's last event id becomes `id` (EventSource sends it back as
   * Last-Event-ID on reconnect), and no event is dispatched.
   */
  position(id: string): void {
    this.write(`id: ${id.replace(/[\r\n]/g, '')}\n\n`, false);
  }

  comment(text: string): void {
    this.write(`: ${text.replace(/[\r\n]/g, ' ')}\n\n`, true);
  }

  onClose(cb: () => void): void {
    if (this.closedFlag) cb();
    else this.closeHandlers.push(cb);
  }

  /** Server-side end of the stream. */
  close(): void {
    if (this.closedFlag) return;
    this.finish();
    this.res.cork(() => this.res.end());
  }

  /** Called by the hub when the client went away. */
  aborted(): void {
    if (!this.closedFlag) this.finish();
  }

  private finish(): void {
    this.closedFlag = true;
    clearInterval(this.heartbeat);
    for (const cb of this.closeHandlers.splice(0)) {
      try {
        cb();
      } catch {
        // a failing close handler must not prevent the others
      }
    }
  }

  private write(chunk: string, droppable: boolean): boolean {
    if (this.closedFlag) return false;
    if (this.congested) {
      if (droppable) {
        this.dropped++;
        return false;
      }
      this.backlog += Buffer.byteLength(chunk);
      if (this.backlog > this.opts.maxBacklog) {
        this.close();
        return false;
      }
    }
    let ok = true;
    this.res.cork(() => {
      ok = this.res.write(chunk);
    });
    if (!ok && !this.congested) {
      this.congested = true;
      this.backlog = Buffer.byteLength(chunk);
      this.res.onWritable(() => {
        this.congested = false;
        this.backlog = 0;
        return true;
      });
    }
    return true;
  }
}
