import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AppError, errorBody } from '../errors.js';
import { AuthGate, WWW_AUTHENTICATE } from './auth.js';
import {
  Reply,
  jsonBody,
  mediaType,
  parseQuery,
  validate,
  type AuthSpec,
  type Authenticator,
  type Guard,
  type Principal,
  type RequestContext,
  type RouteDef,
} from './http.js';
import { createMetrics, type Metrics } from './metrics.js';
import { MultipartReader, prepareUploadDir, sweepTempUploads, type UploadedFile, type UploadSettings } from './multipart.js';
import { Router } from './router.js';
import { Live, parseSince, type HistoryBus } from './live.js';
import { peerBehaviour, peerGroups, type PeerEndpoint, type PeerGroups } from './peer-socket.js';
import { ApiTable } from './api-doc.js';
import type { RouteEntry } from './openapi.js';
import { SseStream, type SseOptions } from './sse.js';
import { writeSecurityHeaders } from './security.js';
import { busStream, type BusSseDef } from './sse-route.js';
import { loadStatic, notModified, pickEncoding, type StaticFile } from './static.js';
import { Topics, type SocketData, type TopicSpec } from './topics.js';
import { loadNativeUws, type HttpRequest, type HttpResponse, type TemplatedApp, type WebSocket } from './uws.js';

export { Reply, route } from './http.js';
export type { AuthSpec, Authenticator, Guard, Principal, RequestContext, RouteDef, BodyReader } from './http.js';
export type { SseStream } from './sse.js';
export type { MultipartOptions, UploadedFile } from './multipart.js';
export type { BusSseDef } from './sse-route.js';
export type { PeerEndpoint, PeerGroups, SocketPeer } from './peer-socket.js';
export type { TopicSpec } from './topics.js';

export interface HubOptions {
  logger: Logger;
  bodyLimit: number;
  webDir: string;
  shutdownGraceMs: number;
  sse?: Partial<SseOptions>;
  /** Seconds of WebSocket silence before uWS closes it (it pings automatically before that). */
  wsIdleTimeoutS?: number;
  wsMaxPayload?: number;
  /** uWS per-socket limit for 'drop' topics. */
  wsMaxBackpressure?: number;
  /** Multipart uploads: temporary directory (default <tmp>/maru-uploads) and per-file limit (default 20 MiB). */
  uploads?: Partial<UploadSettings>;
}

export interface SseRouteDef<Q = unknown> {
  path: string;
  query?: import('zod').ZodType<Q>;
  guards?: Guard[];
  /** The credential the stream needs; EventSource clients pass the token as `access_token`. */
  auth?: AuthSpec;
  /** Called once the stream is open; register stream.onClose for clean-up. */
  open(ctx: RequestContext<Q, undefined, Record<string, string>>, stream: SseStream): void | Promise<void>;
}

/**
 * An extra WebSocket endpoint (e.g. a binary protocol such as y-websocket at /yjs/:room). The hub
 * keeps its bookkeeping (open-socket metric, 1001 close on shutdown, 503 while stopping); `upgrade`
 * validates the path parameters and returns the socket's data, or throws an AppError (answered
 * as that HTTP status).
 */
export interface SocketBehaviour<D> {
  /** For the API reference (/openapi.json describes WebSocket endpoints in words). */
  description?: string;
  maxPayloadLength?: number;
  idleTimeoutS?: number;
  maxBackpressure?: number;
  /** The credential an upgrade needs (token in the `access_token` query parameter or the Authorization header). */
  auth?: AuthSpec;
  /** May be async (e.g. a store look-up); `identity` is the caller when `auth` is declared. */
  upgrade(params: string[], query: string, identity: Principal | undefined): D | Promise<D>;
  open?(ws: WebSocket<SocketData & D>): void;
  message(ws: WebSocket<SocketData & D>, message: ArrayBuffer, isBinary: boolean): void;
  close?(ws: WebSocket<SocketData & D>, code: number): void;
}

export interface SocketHandle {
  /** uWS native fan-out to every socket (of any endpoint) subscribed to `topic`. */
  publish(topic: string, message: Uint8Array | string, isBinary: boolean): void;
}

export interface PageInfo {
  path: string;
  title: string;
  description: string;
}

/** A route's declaration without method, path and handler (the method shortcuts' second argument). */
export type RouteOpts<Q, B, P> = Omit<RouteDef<Q, B, P>, 'method' | 'path' | 'handler'>;

type Entry =
  | { kind: 'route'; def: RouteDef<any, any, any> }
  | { kind: 'sse'; def: SseRouteDef<any> };

interface Pending {
  aborted: boolean;
  onAbort?: () => void;
  /** Made when a handler asks for ctx.signal; aborted with the connection. */
  controller?: AbortController;
}

/** Messages a WebSocket client may send on /ws. */
type ClientFrame =
  | { type: 'subscribe' | 'unsubscribe'; topic: string; since?: unknown }
  | { type: 'auth'; token: string }
  | { type: 'ping' };

/** Bounds of one /ws socket: subscriptions held at once, and the length of a topic name. */
export const WS_MAX_SUBSCRIPTIONS = 100;
export const WS_MAX_TOPIC_LENGTH = 200;
export const WS_MAX_QUEUED = 32;

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 202: '202 Accepted', 204: '204 No Content',
  301: '301 Moved Permanently', 302: '302 Found', 304: '304 Not Modified',
  400: '400 Bad Request', 401: '401 Unauthorized', 403: '403 Forbidden', 404: '404 Not Found',
  405: '405 Method Not Allowed', 406: '406 Not Acceptable', 409: '409 Conflict', 410: '410 Gone',
  413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 422: '422 Unprocessable Entity',
  423: '423 Locked', 429: '429 Too Many Requests', 500: '500 Internal Server Error',
  502: '502 Bad Gateway', 503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};
const statusLine = (s: number) => STATUS_TEXT[s] ?? String(s);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The hub: owns every socket. HTTP routes, SSE streams, WebSocket topics, static pages, health,
 * metrics and graceful shutdown. It knows no service: route modules register on it.
 */
export class Hub {
  readonly metrics: Metrics;
  readonly topics: Topics;
  /** Bus messages to topics and streams, with history recovery (hub/live.ts). */
  readonly live: Live;
  /** The credential gate: the identity model plugs its authenticator in with `authenticate`. */
  readonly auth = new AuthGate();
  private readonly app: TemplatedApp;
  private readonly uws: ReturnType<typeof loadNativeUws>;
  private readonly router = new Router<Entry>();
  private readonly log: Logger;
  private statics: Map<string, StaticFile>;
  private readonly pages: PageInfo[] = [];
  private readonly readiness = new Map<string, () => Promise<void | string>>();
  private readonly sockets = new Set<WebSocket<SocketData>>();
  private readonly streams = new Set<SseStream>();
  private listenSocket: unknown;
  private inFlight = 0;
  private stopping = false;
  private nextSocketId = 1;
  private readonly idPrefix = randomBytes(4).toString('hex');
  private nextRequestId = 1;
  private readonly sseOptions: SseOptions;
  private readonly uploads: UploadSettings;
  private readonly uploadSweep: NodeJS.Timeout;
  /** The route table as the API reference sees it (hub/api-doc.ts). */
  readonly api: ApiTable;

  constructor(private readonly opts: HubOptions) {
    this.uws = loadNativeUws();
    this.log = opts.logger;
    this.metrics = createMetrics();
    this.app = this.uws.App();
    this.topics = new Topics(this.app, this.metrics);
    this.live = new Live(this.topics);
    this.api = new ApiTable(this.topics);
    this.statics = loadStatic(opts.webDir);
    this.sseOptions = { heartbeatMs: 15_000, maxBacklog: 1 << 20, retryMs: 3000, ...opts.sse };
    this.uploads = { tempDir: join(tmpdir(), 'maru-uploads'), maxFileBytes: 20 << 20, ...opts.uploads };
    prepareUploadDir(this.uploads.tempDir);
    // temporary files of requests cut short by a crash: gone after an hour
    const sweep = () => void sweepTempUploads(this.uploads.tempDir, 3_600_000);
    sweep();
    this.uploadSweep = setInterval(sweep, 600_000).unref();
    this.installWebSocket();
    this.app.any('/*', (res, req) => this.handle(res, req));
    this.installOperationalRoutes();
  }

  route<Q, B, P>(def: RouteDef<Q, B, P>): this {
    this.router.add(def.method, def.path, { kind: 'route', def });
    this.api.add({ method: def.method, path: def.path, kind: 'route', def: def as RouteEntry['def'] });
    return this;
  }

  // one-line routes: hub.get(path, {query, params, body, response, auth}, handler)
  get<Q = Record<string, string>, P = Record<string, string>>(path: string, opts: RouteOpts<Q, undefined, P>, handler: RouteDef<Q, undefined, P>['handler']): this {
    return this.route({ ...opts, method: 'GET', path, handler });
  }
  post<Q = Record<string, string>, B = undefined, P = Record<string, string>>(path: string, opts: RouteOpts<Q, B, P>, handler: RouteDef<Q, B, P>['handler']): this {
    return this.route({ ...opts, method: 'POST', path, handler });
  }
  put<Q = Record<string, string>, B = undefined, P = Record<string, string>>(path: string, opts: RouteOpts<Q, B, P>, handler: RouteDef<Q, B, P>['handler']): this {
    return this.route({ ...opts, method: 'PUT', path, handler });
  }
  del<Q = Record<string, string>, B = undefined, P = Record<string, string>>(path: string, opts: RouteOpts<Q, B, P>, handler: RouteDef<Q, B, P>['handler']): this {
    return this.route({ ...opts, method: 'DELETE', path, handler });
  }

  /** An SSE route: a custom `open`, or Bus topics with ids and Last-Event-ID resume (BusSseDef). */
  sse<Q>(def: SseRouteDef<Q> | BusSseDef<Q>): this {
    if ('topics' in def) {
      for (const t of def.topics) this.live.retain(t, def.history ?? 1000);
      const { path, query, guards, auth } = def;
      this.router.add('GET', path, { kind: 'sse', def: { path, query, guards, auth, open: busStream(this.live, def) } });
      this.api.add({ method: 'GET', path, kind: 'sse', def });
      return this;
    }
    this.router.add('GET', def.path, { kind: 'sse', def });
    this.api.add({ method: 'GET', path: def.path, kind: 'sse', def });
    return this;
  }

  /** Delivers the Bus's messages to this hub's topics and streams, and reads its history. */
  attachBus(bus: HistoryBus): () => void {
    return this.live.attach(bus);
  }

  /** Installs the identity model: how a bearer token becomes a principal; `superRole` passes every role check. */
  authenticate(authenticator: Authenticator, opts: { superRole?: string } = {}): this {
    this.auth.use(authenticator, opts);
    return this;
  }

  topic(spec: TopicSpec): this {
    this.topics.define(spec);
    if (spec.history) this.live.retain(spec.name, spec.history);
    return this;
  }

  /** Registers an extra WebSocket endpoint at `pattern` (uWS syntax, `:name` parameters). */
  socket<D extends object>(pattern: string, behaviour: SocketBehaviour<D>): SocketHandle {
    type S = SocketData & D;
    const params = pattern.split('/').filter((p) => p.startsWith(':')).length;
    this.api.socket(pattern, behaviour.description ?? 'a WebSocket endpoint');
    this.app.ws<S>(pattern, {
      idleTimeout: behaviour.idleTimeoutS ?? this.opts.wsIdleTimeoutS ?? 120,
      maxPayloadLength: behaviour.maxPayloadLength ?? this.opts.wsMaxPayload ?? 64 * 1024,
      maxBackpressure: behaviour.maxBackpressure ?? this.opts.wsMaxBackpressure ?? 1 << 20,
      closeOnBackpressureLimit: 0,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => {
        if (this.stopping) {
          res.writeStatus('503 Service Unavailable').end();
          return;
        }
        // everything from req is read now: it is gone after the first await
        const key = req.getHeader('sec-websocket-key');
        const protocol = req.getHeader('sec-websocket-protocol');
        const extensions = req.getHeader('sec-websocket-extensions');
        const authorization = req.getHeader('authorization');
        const query = req.getQuery() ?? '';
        const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
        let aborted = false;
        res.onAborted(() => {
          aborted = true;
        });
        const refuse = (err: unknown) => {
          if (aborted) return;
          const e = err instanceof AppError ? err : new AppError('invalid', 'invalid_path', 'the socket path is not valid');
          res.cork(() => {
            res.writeStatus(statusLine(e.status)).writeHeader('content-type', 'application/json');
            writeSecurityHeaders(res);
            if (e.status === 401) res.writeHeader('www-authenticate', WWW_AUTHENTICATE(e.code));
            res.end(JSON.stringify(errorBody(e)));
          });
        };
        const accept = (data: D, identity: Principal | undefined) => {
          if (aborted) return;
          if (this.stopping) return refuse(new AppError('unavailable', 'shutting_down', 'the server is shutting down'));
          const base: SocketData = { id: this.nextSocketId++, remoteAddress, topics: new Set(), closed: false, identity };
          res.cork(() => res.upgrade({ ...data, ...base } as S, key, protocol, extensions, context));
        };
        let values: string[];
        try {
          values = [];
          for (let i = 0; i < params; i++) values.push(decodeURIComponent(req.getParameter(i) ?? ''));
        } catch (err) {
          return refuse(err);
        }
        const run = async () => {
          let identity: Principal | undefined;
          if (behaviour.auth) {
            const headers: Record<string, string> = authorization ? { authorization } : {};
            identity = await this.auth.check(behaviour.auth, headers, parseQuery(query));
          }
          return { data: await behaviour.upgrade(values, query, identity), identity };
        };
        run().then(({ data, identity }) => accept(data, identity), refuse);
      },
      open: (ws) => {
        this.sockets.add(ws as unknown as WebSocket<SocketData>);
        this.metrics.websockets.inc();
        behaviour.open?.(ws);
      },
      message: (ws, message, isBinary) => behaviour.message(ws, message, isBinary),
      close: (ws, code) => {
        ws.getUserData().closed = true;
        this.sockets.delete(ws as unknown as WebSocket<SocketData>);
        this.metrics.websockets.dec();
        behaviour.close?.(ws, code);
      },
    });
    return { publish: (topic, message, isBinary) => void this.app.publish(topic, message, isBinary) };
  }

  /** A binary WebSocket endpoint whose connections reach a service as SocketPeers (hub/peer-socket.ts). */
  peers<D>(pattern: string, endpoint: PeerEndpoint<D>): PeerGroups {
    const handle = this.socket(pattern, peerBehaviour(endpoint));
    return peerGroups((topic, bytes) => handle.publish(topic, bytes, true));
  }

  /** Delivers to this process's WebSocket subscribers of the topic (the Bus calls this). */
  publish(topic: string, data: unknown): number {
    return this.topics.deliver(topic, data);
  }

  /**
   * A browser page from the built web/ directory, listed in the page index at /pages. The path may
   * be a pattern with `:param` segments (/mticket/:code): every matching path gets the same built
   * file, and the page's script reads the parameter from location; `params` validates it first
   * (a mismatch is the usual 400 invalid_params).
   */
  page(path: string, file: string, info: { title: string; description: string; params?: import('zod').ZodType }): this {
    const { params, ...listed } = info;
    this.pages.push({ path, ...listed });
    this.route({
      method: 'GET',
      path,
      params,
      handler: (ctx) => this.staticReply(file, ctx.headers),
    });
    this.api.markPage(path);
    return this;
  }

  /** A named check behind /readyz (e.g. the store answers); it may resolve with a note shown instead of "ok". */
  ready(name: string, check: () => Promise<void | string>): this {
    this.readiness.set(name, check);
    return this;
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (socket) => {
        if (!socket) return reject(new Error(`cannot listen on ${host}:${port}`));
        this.listenSocket = socket;
        resolve(this.uws.us_socket_local_port(socket));
      });
    });
  }

  /**
   * Graceful stop: refuse new connections, let in-flight requests finish (up to the grace period),
   * end SSE streams, close WebSockets with 1001.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearInterval(this.uploadSweep);
    if (this.listenSocket) this.uws.us_listen_socket_close(this.listenSocket as never);
    const deadline = Date.now() + this.opts.shutdownGraceMs;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const s of this.streams) s.close();
    for (const ws of this.sockets) {
      ws.getUserData().closed = true;
      ws.end(1001, 'server shutting down');
    }
  }

  // ---- HTTP ---------------------------------------------------------------------------------

  private handle(res: HttpResponse, req: HttpRequest): void {
    const started = performance.now();
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const headers: Record<string, string> = {};
    req.forEach((k, v) => {
      headers[k] = v;
    });
    const incomingId = headers['x-request-id'];
    const requestId =
      incomingId && /^[\w.:-]{1,64}$/.test(incomingId) ? incomingId : `${this.idPrefix}-${this.nextRequestId++}`;
    const pending: Pending = { aborted: false };
    res.onAborted(() => {
      pending.aborted = true;
      pending.onAbort?.();
      pending.controller?.abort();
    });

    const finish = (routeLabel: string, reply: Reply) => {
      if (pending.aborted) return;
      this.write(res, method, reply, requestId);
      const status = reply.status;
      this.metrics.observe(method, routeLabel, status, (performance.now() - started) / 1000);
      if (this.log.isLevelEnabled('debug')) {
        this.log.debug({ requestId, method, path, status, ms: +(performance.now() - started).toFixed(2) }, 'request');
      }
    };
    const fail = (routeLabel: string, err: unknown) => finish(routeLabel, this.errorReply(err, requestId, method, path));

    if (this.stopping) {
      return fail('shutdown', new AppError('unavailable', 'shutting_down', 'the server is shutting down'));
    }

    let match;
    try {
      match = this.router.match(method, path);
    } catch {
      return fail('bad_path', new AppError('invalid', 'invalid_path', 'the path is not valid percent-encoding'));
    }
    if (match.kind === 'none') {
      if (method === 'GET' || method === 'HEAD') {
        const file = this.statics.get(path);
        if (file) return finish('static', this.fileReply(file, headers));
      }
      return fail('not_found', new AppError('not_found', 'not_found', `no route for ${method} ${path}`));
    }
    if (match.kind === 'method') {
      const err = new AppError('method_not_allowed', 'method_not_allowed', `${method} is not allowed on ${path}`, {
        allowed: match.allowed,
      });
      return finish('method_not_allowed', this.errorReply(err, requestId, method, path).withHeaders({ allow: match.allowed.join(', ') }));
    }

    const entry = match.value;
    const routeLabel = match.pattern;
    const ctx = new Context(method, path, routeLabel, match.params, headers, requestId, res, pending);

    // The body must be read now: uWS only delivers it to a handler registered synchronously.
    const def = entry.def as RouteDef<any, any, any>;
    // A state-changing request takes JSON only: a form post (the cross-site kind a browser sends
    // without asking) is refused even on routes that read no body.
    if (entry.kind === 'route' && !def.body && BODY_METHODS.has(method) && headers['content-type'] !== undefined && mediaType(headers['content-type']) !== 'application/json') {
      return fail(routeLabel, new AppError('unsupported_media', 'unsupported_media_type', 'content-type must be application/json', { received: mediaType(headers['content-type']) || null }));
    }
    let bodyPromise: Promise<Buffer> | undefined;
    let upload: MultipartReader | undefined;
    if (entry.kind === 'route' && def.body && BODY_METHODS.has(method)) {
      try {
        if (def.body.multipart && mediaType(headers['content-type']) === 'multipart/form-data') {
          upload = new MultipartReader(res, headers, def.body.multipart, this.uploads, pending, Boolean(def.auth));
        } else bodyPromise = this.readBody(res, headers, def.body.limit ?? this.opts.bodyLimit, pending);
      } catch (err) {
        return fail(routeLabel, err);
      }
    }

    const answer = (out: unknown) => {
      let reply = out instanceof Reply ? out : out === undefined ? Reply.empty() : Reply.json(out);
      if (def.cacheControl && reply.status < 400 && !reply.headers['cache-control']) {
        reply = reply.withHeaders({ 'cache-control': def.cacheControl });
      }
      finish(routeLabel, reply);
    };

    // Plain routes (no body, no guards) whose handler answers synchronously are served without
    // leaving this call: no promise, no extra tick, and the write is already corked by uWS.
    if (entry.kind === 'route' && !bodyPromise && !def.body && !def.guards?.length && !def.auth) {
      let out: unknown;
      try {
        ctx.query = def.query ? validate(def.query, parseQuery(rawQuery), 'query') : parseQuery(rawQuery);
        if (def.params) ctx.params = validate(def.params, match.params, 'params');
        out = def.handler(ctx);
      } catch (err) {
        return fail(routeLabel, err);
      }
      if (!(out instanceof Promise)) return answer(out);
      this.inFlight++;
      out.then(answer, (err) => fail(routeLabel, err)).finally(() => this.inFlight--);
      return;
    }

    this.inFlight++;
    const run = async (): Promise<void> => {
      try {
        const rawParsed = parseQuery(rawQuery);
        // the credential first: a caller without one learns nothing about the route's inputs
        if (entry.def.auth) ctx.identity = await this.auth.check(entry.def.auth, headers, rawParsed);
        upload?.release();
        ctx.query = entry.def.query ? validate(entry.def.query, rawParsed, 'query') : rawParsed;
        if (entry.kind === 'route') {
          if (def.params) ctx.params = validate(def.params, match.params, 'params');
          if (def.body?.multipart) ctx.files = [];
          if (upload) {
            const { fields, files } = await upload.done;
            ctx.body = validate(def.body!.schema, fields, 'body');
            ctx.files = files;
          } else if (def.body) ctx.body = await this.parseBody(def, headers, bodyPromise);
        }
        for (const guard of entry.def.guards ?? []) await guard(ctx);
        if (pending.aborted) return;
        if (entry.kind === 'sse') return this.openSse(res, ctx, entry.def, pending, routeLabel, started);
        const out = await def.handler(ctx);
        // temporary files the handler did not move away are deleted before the answer
        await upload?.dispose();
        answer(out);
      } catch (err) {
        await upload?.dispose(true);
        fail(routeLabel, err);
      } finally {
        this.inFlight--;
      }
    };
    void run();
  }

  private readBody(res: HttpResponse, headers: Record<string, string>, limit: number, pending: Pending): Promise<Buffer> {
    const declared = headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) {
      throw new AppError('too_large', 'payload_too_large', `the body is larger than ${limit} bytes`, { limit });
    }
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let over = false;
      pending.onAbort = () => reject(new AppError('invalid', 'aborted', 'the client went away'));
      res.onData((chunk, isLast) => {
        if (over) return;
        size += chunk.byteLength;
        if (size > limit) {
          over = true;
          reject(new AppError('too_large', 'payload_too_large', `the body is larger than ${limit} bytes`, { limit }));
          return;
        }
        // uWS reuses the chunk's memory after this call returns: copy it
        chunks.push(Buffer.from(chunk.slice(0)));
        if (isLast) resolve(Buffer.concat(chunks, size));
      });
    });
  }

  private async parseBody(def: RouteDef<any, any, any>, headers: Record<string, string>, raw: Promise<Buffer> | undefined): Promise<unknown> {
    const spec = def.body!;
    const reader = spec.reader ?? jsonBody;
    const bytes = raw ? await raw : Buffer.alloc(0);
    if (bytes.length === 0) {
      if (spec.optional) return validate(spec.schema, undefined, 'body');
    }
    const type = mediaType(headers['content-type']);
    const accepted = spec.multipart ? [...reader.mediaTypes, 'multipart/form-data'] : reader.mediaTypes;
    if (!reader.mediaTypes.includes(type)) {
      if (bytes.length === 0 && !headers['content-type']) {
        throw new AppError('invalid', 'invalid_body', 'a request body is required', { accepts: accepted });
      }
      throw new AppError('unsupported_media', 'unsupported_media_type', `content-type must be ${accepted.join(' or ')}`, {
        received: type || null,
      });
    }
    return validate(spec.schema, reader.parse(bytes, headers['content-type'] ?? ''), 'body');
  }

  private errorReply(err: unknown, requestId: string, method: string, path: string): Reply {
    if (err instanceof AppError) {
      if (err.status >= 500) this.log.error({ requestId, method, path, err }, 'request failed');
      const headers: Record<string, string> = { 'cache-control': 'no-store' };
      // 429/503 whose details name retry_after_s (e.g. the rate-limit guard) also say it in Retry-After
      const retry = (err.details as { retry_after_s?: unknown } | undefined)?.retry_after_s;
      if ((err.status === 429 || err.status === 503) && typeof retry === 'number' && retry >= 0) {
        headers['retry-after'] = String(Math.ceil(retry));
      }
      if (err.status === 401) headers['www-authenticate'] = WWW_AUTHENTICATE(err.code);
      return Reply.json(errorBody(err), err.status, headers);
    }
    this.log.error({ requestId, method, path, err }, 'unhandled error');
    const body = errorBody(new AppError('internal', 'internal', 'internal error', { requestId }));
    return Reply.json(body, 500, { 'cache-control': 'no-store' });
  }

  private write(res: HttpResponse, method: string, reply: Reply, requestId: string): void {
    res.cork(() => {
      res.writeStatus(statusLine(reply.status));
      if (reply.contentType) res.writeHeader('content-type', reply.contentType);
      res.writeHeader('x-request-id', requestId);
      writeSecurityHeaders(res);
      for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
      if (method === 'HEAD') {
        // the length a GET would send, written by hand: endWithoutBody(n) would make uWS wait for
        // n more bytes on the connection and drop the next request of a keep-alive client
        res.writeHeader('content-length', String(Buffer.byteLength(reply.body)));
        res.endWithoutBody();
      }
      else if (reply.status === 204 || reply.status === 304) res.endWithoutBody(0);
      else res.end(reply.body);
    });
  }

  /** A built file, precompressed (br, gzip) when the client accepts it; one ETag per encoding. */
  private fileReply(file: StaticFile, req: Record<string, string>): Reply {
    const { body, encoding } = pickEncoding(file, req['accept-encoding']);
    const etag = encoding ? `${file.etag.slice(0, -1)}-${encoding}"` : file.etag;
    const headers: Record<string, string> = { etag, 'cache-control': 'no-cache' };
    if (file.br || file.gz) headers.vary = 'accept-encoding';
    if (notModified(req['if-none-match'], etag)) return Reply.empty(304, headers);
    if (encoding) headers['content-encoding'] = encoding;
    return new Reply(200, body, file.contentType, headers);
  }

  private staticReply(file: string, req: Record<string, string>): Reply {
    const f = this.statics.get(file);
    if (!f) throw new AppError('unavailable', 'page_not_built', `${file} is missing: run npm run build`);
    return this.fileReply(f, req);
  }

  // ---- SSE ----------------------------------------------------------------------------------

  private openSse(
    res: HttpResponse,
    ctx: RequestContext<any, any, any>,
    def: SseRouteDef<any>,
    pending: Pending,
    routeLabel: string,
    started: number,
  ): void {
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('content-type', 'text/event-stream; charset=utf-8');
      res.writeHeader('cache-control', 'no-store');
      res.writeHeader('x-accel-buffering', 'no');
      res.writeHeader('x-request-id', ctx.requestId);
      writeSecurityHeaders(res);
    });
    const stream = new SseStream(res, ctx.headers['last-event-id'], this.sseOptions);
    this.streams.add(stream);
    this.metrics.sseStreams.inc();
    this.metrics.observe('GET', routeLabel, 200, (performance.now() - started) / 1000);
    pending.onAbort = () => stream.aborted();
    stream.onClose(() => {
      this.streams.delete(stream);
      this.metrics.sseStreams.dec();
    });
    Promise.resolve(def.open(ctx, stream)).catch((err) => {
      this.log.error({ err, requestId: ctx.requestId }, 'sse open failed');
      stream.close();
    });
  }

  // ---- WebSocket topics ---------------------------------------------------------------------

  /** The JSON topics endpoint: one more socket endpoint, with the hub's own frame handling. */
  private installWebSocket(): void {
    this.socket<object>('/ws', {
      upgrade: () => ({}),
      message: (ws, message, isBinary) => this.onClientFrame(ws, message, isBinary),
      close: (ws) => this.topics.removeSocket(ws),
    });
  }

  /**
   * Frames of one socket are handled in order, one after the other: an `auth` frame (a store
   * look-up) takes effect before the `subscribe` sent right after it. A socket may have at most
   * WS_MAX_QUEUED frames waiting; beyond that they are refused.
   */
  private onClientFrame(ws: WebSocket<SocketData>, message: ArrayBuffer, isBinary: boolean): void {
    const data = ws.getUserData();
    const reply = (obj: unknown) => {
      if (!data.closed) ws.send(JSON.stringify(obj), false);
    };
    let frame: ClientFrame;
    try {
      if (isBinary) throw new Error('binary');
      frame = JSON.parse(Buffer.from(message).toString('utf8'));
    } catch {
      return reply({ type: 'error', code: 'invalid_frame', message: 'frames are JSON text' });
    }
    if ((data.queued ?? 0) >= WS_MAX_QUEUED) {
      return reply({ type: 'error', code: 'too_many_frames', message: `at most ${WS_MAX_QUEUED} frames may wait for an answer` });
    }
    data.queued = (data.queued ?? 0) + 1;
    data.queue = (data.queue ?? Promise.resolve())
      .then(() => this.handleFrame(ws, data, frame, reply))
      .catch(() => reply({ type: 'error', code: 'unavailable', message: 'the frame could not be handled; try again' }))
      .finally(() => {
        data.queued!--;
      });
  }

  private async handleFrame(ws: WebSocket<SocketData>, data: SocketData, frame: ClientFrame, reply: (obj: unknown) => void): Promise<void> {
    if (data.closed) return;
    if (frame?.type === 'ping') return reply({ type: 'pong' });
    if (frame?.type === 'auth' && typeof frame.token === 'string') {
      try {
        const identity = await this.auth.resolve(frame.token);
        data.identity = identity;
        return reply({ type: 'authenticated', id: identity.id, roles: identity.roles });
      } catch {
        return reply({ type: 'error', code: 'invalid_token', message: 'the token is not valid (unknown, revoked or expired)' });
      }
    }
    if ((frame?.type === 'subscribe' || frame?.type === 'unsubscribe') && typeof frame.topic === 'string') {
      const topic = frame.topic;
      if (frame.type === 'unsubscribe') {
        this.topics.unsubscribe(ws, topic);
        return reply({ type: 'unsubscribed', topic });
      }
      if (topic.length > WS_MAX_TOPIC_LENGTH) {
        return reply({ type: 'error', code: 'invalid_topic', message: `a topic name is at most ${WS_MAX_TOPIC_LENGTH} characters`, topic: topic.slice(0, WS_MAX_TOPIC_LENGTH) });
      }
      if (!data.topics.has(topic) && data.topics.size >= WS_MAX_SUBSCRIPTIONS) {
        return reply({ type: 'error', code: 'too_many_subscriptions', message: `a socket holds at most ${WS_MAX_SUBSCRIPTIONS} subscriptions`, topic });
      }
      const verdict = await this.topics.authorize(topic, data.identity);
      if (data.closed) return;
      if (verdict !== 'ok') {
        const messages = {
          unknown: `no topic ${topic}`,
          unauthorized: 'this topic needs a signed-in identity: send {type: "auth", token} first',
          forbidden: 'this identity may not subscribe to this topic',
        };
        return reply({ type: 'error', code: verdict === 'unknown' ? 'unknown_topic' : verdict, message: messages[verdict], topic });
      }
      let since;
      try {
        since = parseSince(frame.since);
      } catch (err) {
        return reply({ type: 'error', code: 'invalid_frame', message: (err as Error).message, topic });
      }
      return this.live.subscribeSocket(ws, topic, since, reply);
    }
    reply({ type: 'error', code: 'invalid_frame', message: 'expected {type: subscribe|unsubscribe|auth|ping, topic|token}' });
  }

  // ---- Operational routes -------------------------------------------------------------------

  private installOperationalRoutes(): void {
    this.route({ method: 'GET', path: '/healthz', response: z.object({ status: z.literal('ok'), uptime_s: z.number().int() }), cacheControl: 'no-store', handler: () => ({ status: 'ok', uptime_s: Math.round(process.uptime()) }) });
    this.route({
      method: 'GET',
      path: '/readyz',
      response: z.object({ status: z.literal('ready'), checks: z.record(z.string(), z.string()) }),
      cacheControl: 'no-store',
      handler: async () => {
        const checks: Record<string, string> = {};
        let ok = true;
        for (const [name, check] of this.readiness) {
          try {
            checks[name] = (await withTimeout(check(), 2000)) || 'ok';
          } catch (err) {
            ok = false;
            checks[name] = err instanceof Error ? err.message : String(err);
          }
        }
        if (!ok) throw new AppError('unavailable', 'not_ready', 'a dependency is not reachable', { checks });
        return { status: 'ready', checks };
      },
    });
    this.route({
      method: 'GET',
      path: '/metrics',
      handler: async () => Reply.text(await this.metrics.registry.metrics(), this.metrics.registry.contentType),
    });
    this.api.install(this);
    this.route({
      method: 'GET',
      path: '/pages',
      handler: (ctx) => {
        if ((ctx.headers.accept ?? '').includes('application/json')) return { pages: this.pages };
        return Reply.html(pageIndexHtml(this.pages));
      },
    });
  }
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function pageIndexHtml(pages: PageInfo[]): string {
  // a pattern page (/mticket/:code) has no address of its own: show its pattern instead of a link
  const items = pages
    .map((p) =>
      /\/[:*]/.test(p.path)
        ? `<li>${escapeHtml(p.title)} <code>${escapeHtml(p.path)}</code><p>${escapeHtml(p.description)}</p></li>`
        : `<li><a href="${escapeHtml(p.path)}">${escapeHtml(p.title)}</a><p>${escapeHtml(p.description)}</p></li>`,
    )
    .join('');
  // styled like every page: the shared stylesheet (with the Korean web font) and the favicon
  return `<!doctype html><html lang="ko"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>maru · pages</title><link rel="icon" href="/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/assets/base.css"><style>.pages{max-width:48rem}.pages ul{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}.pages li{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:.75rem 1rem}.pages li a{font-weight:700;font-size:1.05rem}.pages li p{margin:.2rem 0 0;color:var(--muted)}</style></head><body><header class="top"><h1>maru</h1></header><main class="pages"><ul>${items}</ul></main></body></html>`;
}

/** The request context; the peer address is read from the socket only when asked (it is costly). */
class Context implements RequestContext<any, any, any> {
  query: any = undefined;
  body: any = undefined;
  state: Record<string, unknown> = {};
  identity: Principal | undefined = undefined;
  files: UploadedFile[] | undefined = undefined;
  private remote: string | undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly route: string,
    public params: any,
    readonly headers: Record<string, string>,
    readonly requestId: string,
    private readonly res: HttpResponse,
    private readonly pending: Pending,
  ) {}

  get signal(): AbortSignal {
    const c = (this.pending.controller ??= new AbortController());
    if (this.pending.aborted && !c.signal.aborted) c.abort();
    return c.signal;
  }

  get remoteAddress(): string {
    return (this.remote ??= this.pending.aborted ? '' : Buffer.from(this.res.getRemoteAddressAsText()).toString());
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
