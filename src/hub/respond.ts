import type { Logger } from 'pino';
import { AppError, errorBody } from '../errors.js';
import { WWW_AUTHENTICATE } from './auth.js';
import { Reply } from './http.js';
import { SECURITY_HEADERS } from './security.js';
import { notModified, pickEncoding, type StaticFile } from './static.js';
import type { HttpResponse } from './uws.js';

/** Writing answers: status lines, the shared error shape, headers, static files. */

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 202: '202 Accepted', 204: '204 No Content',
  301: '301 Moved Permanently', 302: '302 Found', 304: '304 Not Modified',
  400: '400 Bad Request', 401: '401 Unauthorized', 403: '403 Forbidden', 404: '404 Not Found',
  405: '405 Method Not Allowed', 406: '406 Not Acceptable', 409: '409 Conflict', 410: '410 Gone',
  413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 422: '422 Unprocessable Entity',
  423: '423 Locked', 429: '429 Too Many Requests', 500: '500 Internal Server Error',
  502: '502 Bad Gateway', 503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};
export const statusLine = (s: number) => STATUS_TEXT[s] ?? String(s);

/** The security headers as pairs (for answers written by hand). */
const SECURITY_PAIRS: readonly (readonly [string, string])[] = Object.entries(SECURITY_HEADERS);
/**
 * The same headers in one uWS call: uWS writes `name: value\r\n` as given, so the value carries the
 * other constant lines (one crossing into native code per answer instead of six).
 */
const [SECURITY_FIRST, ...SECURITY_REST] = SECURITY_PAIRS;
const SECURITY_NAME = SECURITY_FIRST![0];
const SECURITY_VALUE = [SECURITY_FIRST![1], ...SECURITY_REST.map(([k, v]) => `${k}: ${v}`)].join('\r\n');

const NO_STORE: Readonly<Record<string, string>> = Object.freeze({ 'cache-control': 'no-store' });

/** An error as the answer every route shares: `{error: {code, message, details?}}` with its status. */
export function errorReply(log: Logger, err: unknown, requestId: string, method: string, path: string): Reply {
  if (err instanceof AppError) {
    if (err.status >= 500) log.error({ requestId, method, path, err }, 'request failed');
    const headers: Record<string, string> = { 'cache-control': 'no-store' };
    // 429/503 whose details name retry_after_s (e.g. the rate-limit guard) also say it in Retry-After
    const retry = (err.details as { retry_after_s?: unknown } | undefined)?.retry_after_s;
    if ((err.status === 429 || err.status === 503) && typeof retry === 'number' && retry >= 0) {
      headers['retry-after'] = String(Math.ceil(retry));
    }
    if (err.status === 401) headers['www-authenticate'] = WWW_AUTHENTICATE(err.code);
    return Reply.json(errorBody(err), err.status, headers);
  }
  log.error({ requestId, method, path, err }, 'unhandled error');
  const body = errorBody(new AppError('internal', 'internal', 'internal error', { requestId }));
  return Reply.json(body, 500, NO_STORE);
}

/**
 * Writes a reply (the caller corks when it is outside uWS's own handler). `cacheControl` is the
 * route's Cache-Control for a successful answer that names none itself.
 */
export function writeReply(res: HttpResponse, method: string, reply: Reply, requestId: string, cacheControl?: string): void {
  res.writeStatus(statusLine(reply.status));
  if (reply.contentType) res.writeHeader('content-type', reply.contentType);
  res.writeHeader('x-request-id', requestId);
  res.writeHeader(SECURITY_NAME, SECURITY_VALUE);
  const extra = reply.headers;
  for (const k in extra) res.writeHeader(k, extra[k]!);
  if (cacheControl !== undefined && reply.status < 400 && extra['cache-control'] === undefined) res.writeHeader('cache-control', cacheControl);
  if (method === 'HEAD') {
    // the length a GET would send, written by hand: endWithoutBody(n) would make uWS wait for
    // n more bytes on the connection and drop the next request of a keep-alive client
    res.writeHeader('content-length', String(Buffer.byteLength(reply.body)));
    res.endWithoutBody();
  } else if (reply.status === 204 || reply.status === 304) res.endWithoutBody(0);
  else res.end(reply.body);
}

/** Security headers on an answer written outside writeReply (streams, refused upgrades). */
export function writeSecurity(res: { writeHeader(k: string, v: string): unknown }): void {
  for (let i = 0; i < SECURITY_PAIRS.length; i++) res.writeHeader(SECURITY_PAIRS[i]![0], SECURITY_PAIRS[i]![1]);
}

/** A built file, precompressed (br, gzip) when the client accepts it; one ETag per encoding. */
export function fileReply(file: StaticFile, req: Record<string, string>): Reply {
  const { body, encoding } = pickEncoding(file, req['accept-encoding']);
  const etag = encoding ? `${file.etag.slice(0, -1)}-${encoding}"` : file.etag;
  const headers: Record<string, string> = { etag, 'cache-control': 'no-cache' };
  if (file.br || file.gz) headers.vary = 'accept-encoding';
  if (notModified(req['if-none-match'], etag)) return Reply.empty(304, headers);
  if (encoding) headers['content-encoding'] = encoding;
  return new Reply(200, body, file.contentType, headers);
}
