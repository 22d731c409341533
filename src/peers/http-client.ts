import { request as httpsRequest } from 'node:https';
import { connect, isIP, type Socket } from 'node:net';

/**
 * The one HTTP client the hub calls its external peers with (the payment relay's chain, bank,
 * broker and price providers; the reward plan's task ledger): the error a failed peer call raises,
 * one HTTP/1.1 exchange over a plain node:net socket (`tcpHttpRequest`: for peers reached over TCP,
 * such as the task ledger, the hub needs nothing but the host and port), the same exchange by URL
 * (`peerRequest`: http:// over that socket, https:// through node:https with the same deadline, size
 * limit and errors), and a JSON call on top (`peerJson`).
 */

/** A peer call that failed: `status` for an HTTP answer outside 2xx, `code` for the kind of failure. */
export class PeerError extends Error {
  constructor(
    readonly peer: string,
    readonly code: 'timeout' | 'status' | 'network' | 'protocol' | 'not_configured' | 'aborted',
    message: string,
    readonly status?: number,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'PeerError';
  }
}

export interface CallOptions {
  /** Sent as the Idempotency-Key header. */
  idempotencyKey?: string;
  /** Aborts the call early (e.g. the outbox stopping). The peer time-out applies regardless. */
  signal?: AbortSignal;
}

export function parseJsonText(text: string): unknown {
  if (text.length === 0) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function statusError(peer: string, status: number, body: unknown): PeerError {
  let detail = '';
  if (body && typeof body === 'object' && 'error' in body) {
    const e = (body as { error?: { code?: unknown; message?: unknown } }).error;
    if (e && typeof e.code === 'string') detail = `: ${e.code}${typeof e.message === 'string' ? ` (${e.message})` : ''}`;
  }
  return new PeerError(peer, 'status', `${peer} answered ${status}${detail}`, status, body);
}

// ------------------------------------------------------------------------------------------------
// HTTP/1.1 over a plain TCP socket

export interface RawHttpResponse {
  status: number;
  statusText: string;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

export interface TcpHttpRequest {
  host: string;
  port: number;
  method: string;
  /** Path and query, e.g. /verify?id=1. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** One deadline for connect + request + the whole response. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Largest accepted response (head + body), default 8 MiB. */
  maxBytes?: number;
  /** Name in error messages. */
  peer?: string;
}

const CRLF2 = Buffer.from('\r\n\r\n');

interface Head {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  /** Offset of the first body byte. */
  bodyStart: number;
}

function parseHead(buf: Buffer, from: number, peer: string): Head | undefined {
  const end = buf.indexOf(CRLF2, from);
  if (end < 0) return undefined;
  const lines = buf.subarray(from, end).toString('latin1').split('\r\n');
  const statusLine = lines[0] ?? '';
  const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
  if (!m) throw new PeerError(peer, 'protocol', `${peer} sent a malformed status line`);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new PeerError(peer, 'protocol', `${peer} sent a malformed header line`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return { status: Number(m[1]), statusText: m[2] ?? '', headers, bodyStart: end + 4 };
}

/** Decodes a chunked body starting at `from`; undefined while incomplete. */
function parseChunked(buf: Buffer, from: number, peer: string): Buffer | undefined {
  const parts: Buffer[] = [];
  let pos = from;
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', pos, 'latin1');
    if (lineEnd < 0) return undefined;
    const sizeText = buf.subarray(pos, lineEnd).toString('latin1').split(';')[0]!.trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw new PeerError(peer, 'protocol', `${peer} sent a malformed chunk size`);
    const size = parseInt(sizeText, 16);
    pos = lineEnd + 2;
    if (size === 0) {
      // Trailers (ignored) end with an empty line.
      for (;;) {
        const trailerEnd = buf.indexOf('\r\n', pos, 'latin1');
        if (trailerEnd < 0) return undefined;
        if (trailerEnd === pos) return Buffer.concat(parts);
        pos = trailerEnd + 2;
      }
    }
    if (buf.length < pos + size + 2) return undefined;
    if (buf[pos + size] !== 0x0d || buf[pos + size + 1] !== 0x0a) {
      throw new PeerError(peer, 'protocol', `${peer} sent a chunk without its CRLF`);
    }
    parts.push(buf.subarray(pos, pos + size));
    pos += size + 2;
  }
}

/**
 * One HTTP/1.1 exchange over a fresh TCP connection (Connection: close). Understands Content-Length,
 * chunked and close-delimited bodies and skips 1xx interim answers. Rejects with PeerError on
 * time-out (connect and response share one deadline), network failure or a malformed answer.
 */
export function tcpHttpRequest(req: TcpHttpRequest): Promise<RawHttpResponse> {
  const peer = req.peer ?? `${req.host}:${req.port}`;
  const maxBytes = req.maxBytes ?? 8 * 1024 * 1024;
  const hostHeader = isIP(req.host) === 6 ? `[${req.host}]:${req.port}` : `${req.host}:${req.port}`;
  const out = outgoing(req.method, req.body, req.headers, { host: hostHeader });
  if (out instanceof TypeError) return Promise.reject(out);
  const { body, headers } = out;
  if (!/^\/[^\s]*$/.test(req.path)) return Promise.reject(new TypeError('request path must start with / and hold no spaces'));
  const head = `${req.method} ${req.path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n`;

  return new Promise<RawHttpResponse>((resolve, reject) => {
    let settled = false;
    let buf: Buffer = Buffer.alloc(0);
    let parsedHead: Head | undefined;
    let headFrom = 0;
    let socket: Socket | undefined;

    const finish = (err: Error | undefined, res?: RawHttpResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      socket?.destroy();
      if (err) reject(err);
      else resolve(res!);
    };
    const onAbort = () => finish(new PeerError(peer, 'aborted', `${peer} call aborted`));
    const timer = setTimeout(
      () => finish(new PeerError(peer, 'timeout', `${peer} did not answer within ${req.timeoutMs} ms`)),
      req.timeoutMs,
    );
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener('abort', onAbort, { once: true });

    /** Tries to complete the response from what arrived; `ended` when the peer closed. */
    const tryComplete = (ended: boolean) => {
      try {
        while (!parsedHead) {
          const h = parseHead(buf, headFrom, peer);
          if (!h) {
            if (ended) throw new PeerError(peer, 'protocol', `${peer} closed the connection before a complete answer`);
            return;
          }
          if (h.status >= 100 && h.status < 200 && h.status !== 101) {
            headFrom = h.bodyStart; // interim answer (100 Continue): skip it
            continue;
          }
          parsedHead = h;
        }
        const { status, statusText, headers: resHeaders, bodyStart } = parsedHead;
        const done = (b: Buffer) => finish(undefined, { status, statusText, headers: resHeaders, body: b });
        if (req.method === 'HEAD' || status === 204 || status === 304) return done(Buffer.alloc(0));
        const te = resHeaders['transfer-encoding'];
        if (te !== undefined && te.toLowerCase().split(',').map((s) => s.trim()).includes('chunked')) {
          const decoded = parseChunked(buf, bodyStart, peer);
          if (decoded) return done(decoded);
          if (ended) throw new PeerError(peer, 'protocol', `${peer} closed the connection inside a chunked body`);
          return;
        }
        const cl = resHeaders['content-length'];
        if (cl !== undefined) {
          if (!/^\d+$/.test(cl)) throw new PeerError(peer, 'protocol', `${peer} sent a malformed Content-Length`);
          const n = Number(cl);
          if (buf.length - bodyStart >= n) return done(buf.subarray(bodyStart, bodyStart + n));
          if (ended) throw new PeerError(peer, 'protocol', `${peer} closed the connection before the whole body`);
          return;
        }
        if (ended) return done(buf.subarray(bodyStart)); // delimited by close
      } catch (err) {
        finish(err as Error);
      }
    };

    socket = connect({ host: req.host, port: req.port });
    socket.setNoDelay(true);
    socket.on('connect', () => {
      socket!.write(body ? Buffer.concat([Buffer.from(head, 'latin1'), body]) : Buffer.from(head, 'latin1'));
    });
    socket.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      if (buf.length > maxBytes) return finish(new PeerError(peer, 'protocol', `${peer} answer exceeds ${maxBytes} bytes`));
      tryComplete(false);
    });
    socket.on('end', () => tryComplete(true));
    socket.on('close', () => tryComplete(true));
    socket.on('error', (err: NodeJS.ErrnoException) =>
      finish(new PeerError(peer, 'network', `${peer} unreachable: ${err.code ?? err.message}`)),
    );
  });
}

/**
 * A request's body as bytes and its headers (lower-case names, `connection: close`, the body's
 * length), both exchanges alike; a header holding a line break is refused (a TypeError returned).
 */
function outgoing(method: string, raw: string | Buffer | undefined, given: Record<string, string> | undefined, first: Record<string, string> = {}): { body: Buffer | undefined; headers: Record<string, string> } | TypeError {
  const body = raw === undefined ? undefined : Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'utf8');
  const headers: Record<string, string> = { ...first, connection: 'close', ...lowerKeys(given ?? {}) };
  if (body !== undefined) headers['content-length'] = String(body.length);
  else if (method !== 'GET' && method !== 'HEAD') headers['content-length'] = '0';
  for (const [k, v] of Object.entries(headers)) {
    if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) return new TypeError('header names and values may not hold line breaks');
  }
  return { body, headers };
}

function lowerKeys(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
}


// ------------------------------------------------------------------------------------------------
// By URL: http:// over the socket above, https:// through node:https

export interface PeerRequest {
  /** Absolute http:// or https:// address, path and query included. */
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** One deadline for connect (and TLS) + request + the whole response. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Largest accepted response body, default 8 MiB (over http:// the head counts too). */
  maxBytes?: number;
  /** Name in error messages. */
  peer: string;
  /** https:// only: certificates to trust besides the system's (a peer behind a private authority). */
  ca?: string | Buffer;
}

/**
 * One exchange with a peer by URL. Rejects with PeerError (`timeout`, `network`, `protocol`,
 * `aborted`) like tcpHttpRequest, whichever the scheme; a non-2xx answer resolves (see peerJson).
 */
export function peerRequest(req: PeerRequest): Promise<RawHttpResponse> {
  let u: URL;
  try {
    u = new URL(req.url);
  } catch {
    return Promise.reject(new TypeError(`not a peer address: ${req.url}`));
  }
  const method = req.method ?? 'GET';
  const path = `${u.pathname}${u.search}`;
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  if (u.protocol === 'http:') {
    return tcpHttpRequest({ host, port: u.port === '' ? 80 : Number(u.port), method, path, headers: req.headers, body: req.body, timeoutMs: req.timeoutMs, signal: req.signal, maxBytes: req.maxBytes, peer: req.peer });
  }
  if (u.protocol !== 'https:') return Promise.reject(new TypeError(`peer address must be http:// or https://, got ${u.protocol}`));
  return httpsExchange(req, u, host, method, path);
}

function httpsExchange(req: PeerRequest, u: URL, host: string, method: string, path: string): Promise<RawHttpResponse> {
  const { peer } = req;
  const maxBytes = req.maxBytes ?? 8 * 1024 * 1024;
  const out = outgoing(method, req.body, req.headers);
  if (out instanceof TypeError) return Promise.reject(out);
  const { body, headers } = out;
  return new Promise<RawHttpResponse>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | undefined, res?: RawHttpResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      outgoing.destroy();
      if (err) reject(err);
      else resolve(res!);
    };
    const onAbort = () => finish(new PeerError(peer, 'aborted', `${peer} call aborted`));
    const timer = setTimeout(() => finish(new PeerError(peer, 'timeout', `${peer} did not answer within ${req.timeoutMs} ms`)), req.timeoutMs);
    const outgoing = httpsRequest(
      { host, port: u.port === '' ? 443 : Number(u.port), method, path, headers, agent: false, ...(req.ca !== undefined ? { ca: req.ca } : {}) },
      (res) => {
        const parts: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) return finish(new PeerError(peer, 'protocol', `${peer} answer exceeds ${maxBytes} bytes`));
          parts.push(chunk);
        });
        res.on('end', () => {
          const out: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
          finish(undefined, { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers: out, body: Buffer.concat(parts) });
        });
        res.on('aborted', () => finish(new PeerError(peer, 'protocol', `${peer} closed the connection before the whole body`)));
        res.on('error', (err: NodeJS.ErrnoException) => finish(new PeerError(peer, 'protocol', `${peer} broke off its answer: ${err.code ?? err.message}`)));
      },
    );
    outgoing.on('error', (err: NodeJS.ErrnoException) => {
      const parse = typeof err.code === 'string' && err.code.startsWith('HPE_');
      finish(new PeerError(peer, parse ? 'protocol' : 'network', parse ? `${peer} sent a malformed answer (${err.code})` : `${peer} unreachable: ${err.code ?? err.message}`));
    });
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener('abort', onAbort, { once: true });
    outgoing.end(body);
  });
}

/**
 * A JSON call: the parsed answer of a 2xx. A non-2xx raises statusError (PeerError `status`, with
 * the status and the parsed body); a 2xx whose body is not JSON raises PeerError `protocol`.
 */
export async function peerJson(req: PeerRequest & { json?: unknown }): Promise<unknown> {
  const { json, ...rest } = req;
  const headers: Record<string, string> = { accept: 'application/json', ...(req.headers ?? {}) };
  if (json !== undefined) headers['content-type'] = 'application/json';
  const res = await peerRequest({ ...rest, headers, body: json !== undefined ? JSON.stringify(json) : req.body });
  const text = res.body.toString('utf8');
  if (res.status < 200 || res.status > 299) throw statusError(req.peer, res.status, parseJsonText(text));
  try {
    return JSON.parse(text);
  } catch {
    throw new PeerError(req.peer, 'protocol', `${req.peer} answered something other than JSON`);
  }
}
