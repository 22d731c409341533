import type { HttpRequest, HttpResponse } from './uws.js';

/**
 * In-process requests: a request handed to the hub's pipeline through stand-ins for uWS's request
 * and response, so routing, credentials, validation, guards, the handler, error mapping and the
 * answer's headers are exactly those of a request from a socket, without a port.
 */

export interface InjectOptions {
  headers?: Record<string, string>;
  /** A string or bytes are sent as they are; anything else as JSON (with the JSON content type unless one is given). */
  body?: unknown;
  /** The caller's address as the hub sees it (default 127.0.0.1). */
  remoteAddress?: string;
}

export interface InjectAnswer {
  status: number;
  /** Answer headers, lower-case names. */
  headers: Record<string, string>;
  /** The raw body text. */
  text: string;
  /** The body parsed as JSON when the answer is JSON, else the text. */
  body: any;
}

const CHUNK = 64 * 1024;

class InjectedRequest {
  constructor(
    private readonly method: string,
    private readonly url: string,
    private readonly query: string | undefined,
    private readonly headers: Record<string, string>,
  ) {}
  getMethod(): string {
    return this.method.toLowerCase();
  }
  getUrl(): string {
    return this.url;
  }
  getQuery(): string | undefined {
    return this.query;
  }
  getHeader(name: string): string {
    return this.headers[name] ?? '';
  }
  forEach(cb: (k: string, v: string) => void): void {
    for (const k in this.headers) cb(k, this.headers[k]!);
  }
}

class InjectedResponse {
  status = 0;
  readonly headers: Record<string, string> = {};
  private readonly chunks: Buffer[] = [];
  private onDataCb: ((chunk: ArrayBuffer, isLast: boolean) => void) | undefined;
  private onAbortCb: (() => void) | undefined;
  private paused = false;
  private resumed: (() => void) | undefined;
  private done = false;
  readonly finished: Promise<void>;
  private finish!: () => void;

  constructor(private readonly remote: string) {
    this.finished = new Promise((r) => (this.finish = r));
  }

  onAborted(cb: () => void): this {
    this.onAbortCb = cb;
    return this;
  }
  onData(cb: (chunk: ArrayBuffer, isLast: boolean) => void): void {
    this.onDataCb = cb;
  }
  onWritable(): this {
    return this;
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
    this.resumed?.();
  }
  cork(f: () => void): this {
    f();
    return this;
  }
  writeStatus(s: string): this {
    this.status = parseInt(s, 10);
    return this;
  }
  writeHeader(k: string, v: string): this {
    // uWS writes `k: v\r\n` as given; the hub may pass several constant lines in one value
    const [first, ...more] = v.split('\r\n');
    this.add(k, first!);
    for (const line of more) {
      const colon = line.indexOf(':');
      this.add(line.slice(0, colon), line.slice(colon + 1).trim());
    }
    return this;
  }
  private add(k: string, v: string): void {
    const key = k.toLowerCase();
    this.headers[key] = this.headers[key] === undefined ? v : `${this.headers[key]}, ${v}`;
  }
  write(chunk: string | ArrayBuffer | Uint8Array): boolean {
    this.chunks.push(toBuffer(chunk));
    // a stream (SSE) never ends by itself: answer with what it wrote first, then close it
    if (!this.done) setImmediate(() => this.end(undefined, true));
    return true;
  }
  end(body?: string | ArrayBuffer | Uint8Array, hangUp = false): this {
    if (this.done) return this;
    if (body !== undefined) this.chunks.push(toBuffer(body));
    this.done = true;
    if (hangUp) this.onAbortCb?.();
    this.finish();
    return this;
  }
  endWithoutBody(): this {
    return this.end();
  }
  getRemoteAddressAsText(): ArrayBuffer {
    const b = Buffer.from(this.remote);
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  }

  /** Hands the body to the reader uWS would feed, in chunks, honouring pause(). */
  async feed(body: Buffer): Promise<void> {
    const cb = this.onDataCb;
    if (!cb) return;
    let offset = 0;
    do {
      while (this.paused && !this.done) await new Promise<void>((r) => (this.resumed = r));
      if (this.done) return;
      const end = Math.min(body.length, offset + CHUNK);
      const piece = body.subarray(offset, end);
      offset = end;
      cb(piece.buffer.slice(piece.byteOffset, piece.byteOffset + piece.byteLength) as ArrayBuffer, offset >= body.length);
      await new Promise((r) => setImmediate(r));
    } while (offset < body.length);
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

const toBuffer = (c: string | ArrayBuffer | Uint8Array) =>
  typeof c === 'string' ? Buffer.from(c) : c instanceof ArrayBuffer ? Buffer.from(c.slice(0)) : Buffer.from(c);

/** Runs one request through `handle` (the pipeline's entry) and resolves with its answer. */
export async function inject(
  handle: (res: HttpResponse, req: HttpRequest) => void,
  method: string,
  target: string,
  opts: InjectOptions = {},
): Promise<InjectAnswer> {
  const q = target.indexOf('?');
  const url = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? undefined : target.slice(q + 1);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.headers ?? {})) headers[k.toLowerCase()] = v;
  let body: Buffer | undefined;
  if (opts.body !== undefined) {
    if (typeof opts.body === 'string') body = Buffer.from(opts.body);
    else if (Buffer.isBuffer(opts.body) || opts.body instanceof Uint8Array) body = Buffer.from(opts.body);
    else {
      body = Buffer.from(JSON.stringify(opts.body));
      headers['content-type'] ??= 'application/json';
    }
  }
  // a chunked request (Transfer-Encoding) declares no length, as one from a socket
  if (body && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) headers['content-length'] = String(body.length);
  const req = new InjectedRequest(method.toUpperCase(), url, query, headers);
  const res = new InjectedResponse(opts.remoteAddress ?? '127.0.0.1');
  handle(res as unknown as HttpResponse, req as unknown as HttpRequest);
  await res.feed(body ?? Buffer.alloc(0));
  await res.finished;
  const text = res.text();
  let parsed: unknown = text;
  if ((res.headers['content-type'] ?? '').startsWith('application/json')) {
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON after all: keep the text
    }
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}
