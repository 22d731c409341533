import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import { refuseQueryToken, type AuthGate } from './auth.js';
import { Reply, mediaType, parseQuery, validate, type AuthSpec, type Guard, type Principal, type RequestContext, type RouteDef } from './http.js';
import type { Idempotency } from '../idempotency.js';
import type { ClientAddress } from './client-address.js';
import type { ConnectionCaps } from './connection-caps.js';
import { runIdempotent } from './idempotent.js';
import { keepUploads } from './keep.js';
import type { Metrics, RouteSeries } from './metrics.js';
import { MultipartReader, type UploadSettings } from './multipart.js';
import type { StoredUpload, UploadedFile } from './upload-files.js';
import { readBody, parseBody } from './body.js';
import { errorReply, fileReply, writeReply } from './respond.js';
import { Router } from './router.js';
import type { SseStream, SseOptions } from './sse.js';
import { SseStreams } from './sse-streams.js';
import type { StaticFile } from './static.js';
import type { HttpRequest, HttpResponse } from './uws.js';

/**
 * The one request pipeline: route -> credential -> query, params and body validation -> guards ->
 * handler (or SSE open) -> error mapping -> answer. Each step runs synchronously when it can and
 * only the steps that return a promise are awaited, so a route whose handler answers synchronously
 * is served inside uWS's own call (no promise, no extra tick) through the same steps as any other.
 * Requests from a socket (`handle`) and in-process requests (hub.inject) take this same path.
 */

export interface SseRouteDef<Q = unknown> {
  path: string;
  query?: import('zod').ZodType<Q>;
  guards?: Guard[];
  /** The credential the stream needs; EventSource clients pass the token as `access_token`. */
  auth?: AuthSpec;
  /** Called once the stream is open; register stream.onClose for clean-up. */
  open(ctx: RequestContext<Q, undefined, Record<string, string>>, stream: SseStream): void | Promise<void>;
}

export type Entry =
  | { kind: 'route'; def: RouteDef<any, any, any> }
  | { kind: 'sse'; def: SseRouteDef<any> };

export interface PipelineDeps {
  log: Logger;
  auth: AuthGate;
  metrics: Metrics;
  bodyLimit: number;
  uploads: UploadSettings;
  sse: SseOptions;
  caps: ConnectionCaps;
  statics: Map<string, StaticFile>;
  /** The hub's idempotency keys (routes that declare `idempotency`); throws until the hub has a store. */
  idempotency: () => Idempotency;
  /** The client's address behind trusted proxies (TRUST_PROXY). */
  clients: ClientAddress;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REQUEST_ID = /^[\w.:-]{1,64}$/;

/** req.forEach's callback, made once: it fills the object `handle` points it at. */
let headerTarget: Record<string, string> = {};
/** Set by putHeader when the request frames its body ambiguously (see `handle`). */
let framingFault: string | undefined;
/** The peer of a request refused for its framing, until uWS's current call returns (refuseFraming). */
let refusedPeer: string | undefined;
const putHeader = (k: string, v: string) => {
  // a second Content-Length or Transfer-Encoding, or a header name with white space in it: a front
  // proxy may have framed this body otherwise (request smuggling), so the request is refused
  if ((k === 'transfer-encoding' || k === 'content-length') && k in headerTarget) framingFault = `two ${k} headers`;
  else if (/[\s:]/.test(k)) framingFault = 'a header name with white space';
  headerTarget[k] = v;
};

const isPromise = (v: unknown): v is Promise<unknown> => v instanceof Promise;
/** `f(v)` now when `v` is a value, after it when `v` is a promise. */
function then<T, R>(v: T | Promise<T>, f: (v: T) => R | Promise<R>): R | Promise<R> {
  return isPromise(v) ? v.then(f) : f(v as T);
}

/**
 * The request context, which is also the exchange's state (abort flag, timing, the uWS response):
 * one object per request. The peer address is read from the socket only when asked (it is costly).
 */
export class Context implements RequestContext<any, any, any> {
  query: any = undefined;
  body: any = undefined;
  identity: Principal | undefined = undefined;
  /** The bearer token behind `identity` (an SSE stream keeps it: hub/credentials.ts). */
  token: string | undefined = undefined;
  files: UploadedFile[] | undefined = undefined;
  stored: StoredUpload[] | undefined = undefined;
  params: any = undefined;
  route = '';
  /** The matched route's constant answer headers (RouteDef.headers), errors included. */
  answerHeaders: Readonly<Record<string, string>> | undefined = undefined;
  aborted = false;
  /** True while uWS's own call runs (its writes are corked by uWS); false once the answer is late. */
  sync = true;
  onAbort: (() => void) | undefined = undefined;
  /** What guards undo when the request is answered 503 (RequestContext.refunds). */
  refunds: (() => void)[] | undefined = undefined;
  /** What runs once the request ends (RequestContext.atEnd); made only when a guard asks. */
  private ends: (() => void)[] | undefined = undefined;
  private over = false;
  private controller: AbortController | undefined = undefined;
  private stateBag: Record<string, unknown> | undefined = undefined;
  private remote: string | undefined = undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly headers: Record<string, string>,
    readonly requestId: string,
    readonly res: HttpResponse,
    readonly started: number,
    private readonly clients?: ClientAddress,
  ) {}

  get state(): Record<string, unknown> {
    return (this.stateBag ??= {});
  }

  get signal(): AbortSignal {
    const c = (this.controller ??= new AbortController());
    if (this.aborted && !c.signal.aborted) c.abort();
    return c.signal;
  }

  /** The client's address: the socket's peer, or behind a trusted proxy the address it forwarded. */
  get remoteAddress(): string {
    if (this.remote === undefined) {
      const peer = this.aborted ? '' : Buffer.from(this.res.getRemoteAddressAsText()).toString();
      this.remote = this.clients && peer ? this.clients.of(peer, this.headers) : peer;
    }
    return this.remote;
  }

  atEnd(f: () => void): void {
    if (this.over) f();
    else (this.ends ??= []).push(f);
  }

  /** The request is over (answered, or its client gone): its atEnd callbacks run, once. */
  end(): void {
    if (this.over) return;
    this.over = true;
    const ends = this.ends;
    this.ends = undefined;
    if (ends) for (const f of ends) f();
  }

  /** uWS calls this when the client goes away before the answer. */
  abort(): void {
    this.aborted = true;
    this.end();
    this.onAbort?.();
    this.controller?.abort();
  }
}

export class Pipeline {
  readonly router = new Router<Entry>();
  readonly streams: SseStreams;
  stopping = false;
  inFlight = 0;
  private nextRequestId = 1;

  constructor(
    private readonly deps: PipelineDeps,
    private readonly idPrefix: string,
  ) {
    this.streams = new SseStreams({ ...deps, node: idPrefix });
  }

  handle(res: HttpResponse, req: HttpRequest): void {
    const started = performance.now();
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const headers: Record<string, string> = {};
    headerTarget = headers;
    framingFault = undefined;
    req.forEach(putHeader);
    if (framingFault !== undefined || ('transfer-encoding' in headers && 'content-length' in headers)) {
      return refuseFraming(res, framingFault ?? 'both content-length and transfer-encoding');
    }
    if (refusedPeer !== undefined && refusedPeer === Buffer.from(res.getRemoteAddressAsText()).toString()) {
      return refuseFraming(res, 'it follows a request refused for its framing on the same connection');
    }
    const incomingId = headers['x-request-id'];
    const requestId = incomingId && REQUEST_ID.test(incomingId) ? incomingId : `${this.idPrefix}-${this.nextRequestId++}`;
    const ctx = new Context(method, path, headers, requestId, res, started, this.deps.clients);
    this.dispatch(ctx, rawQuery);
    ctx.sync = false;
  }

  private dispatch(ctx: Context, rawQuery: string): void {
    const { method, path, headers } = ctx;
    if (this.stopping) return this.fail(ctx, 'shutdown', new AppError('unavailable', 'shutting_down', 'the server is shutting down'));

    let match;
    try {
      match = this.router.match(method, path);
    } catch {
      return this.fail(ctx, 'bad_path', new AppError('invalid', 'invalid_path', 'the path is not valid percent-encoding'));
    }
    if (match.kind === 'none') {
      if (method === 'GET' || method === 'HEAD') {
        const file = this.deps.statics.get(path);
        if (file) return this.finish(ctx, 'static', fileReply(file, headers));
      }
      return this.fail(ctx, 'not_found', new AppError('not_found', 'not_found', `no route for ${method} ${path}`));
    }
    if (match.kind === 'method') {
      const err = new AppError('method_not_allowed', 'method_not_allowed', `${method} is not allowed on ${path}`, { allowed: match.allowed });
      const reply = errorReply(this.deps.log, err, ctx.requestId, method, path).withHeaders({ allow: match.allowed.join(', ') });
      return this.finish(ctx, 'method_not_allowed', reply);
    }

    const entry = match.value;
    ctx.route = match.pattern;
    ctx.params = match.params;
    const def = entry.def as RouteDef<any, any, any>;
    if (entry.kind === 'route') ctx.answerHeaders = def.headers;
    const hasBody = entry.kind === 'route' && def.body !== undefined;
    // A state-changing request takes JSON only: a form post (the cross-site kind a browser sends
    // without asking) is refused even on routes that read no body.
    const type = headers['content-type'];
    if (entry.kind === 'route' && !hasBody && type !== undefined && BODY_METHODS.has(method) && mediaType(type) !== 'application/json') {
      return this.fail(ctx, ctx.route, new AppError('unsupported_media', 'unsupported_media_type', 'content-type must be application/json', { received: mediaType(type) || null }));
    }
    // The body must be read now: uWS only delivers it to a handler registered synchronously.
    let raw: Promise<Buffer> | undefined;
    let upload: MultipartReader | undefined;
    const reads = hasBody && BODY_METHODS.has(method);
    // a request that outlives this call (a body to read, a stream) hears about a client that goes away
    const hooked = reads || entry.kind === 'sse';
    if (hooked) ctx.res.onAborted(() => ctx.abort());
    if (reads) {
      try {
        if (def.body!.multipart && mediaType(type) === 'multipart/form-data') {
          upload = new MultipartReader(ctx.res, headers, def.body!.multipart, this.deps.uploads, ctx, Boolean(def.auth));
        } else raw = readBody(ctx, def.body!.limit ?? this.deps.bodyLimit);
      } catch (err) {
        return this.fail(ctx, ctx.route, err);
      }
    }

    let out: unknown;
    try {
      out = this.run(entry, ctx, rawQuery, raw, upload);
    } catch (err) {
      if (!upload) return this.fail(ctx, ctx.route, err);
      out = Promise.reject(err);
    }
    if (!isPromise(out) && !upload) {
      if (out !== SSE_OPEN) this.answer(ctx, def, out);
      else ctx.end();
      return;
    }
    // the answer comes later: uWS needs to hear about a client that goes away meanwhile
    if (!hooked) ctx.res.onAborted(() => ctx.abort());
    this.inFlight++;
    if (!upload) {
      // one reaction and no promise of its own: the common case of an async handler
      (out as Promise<unknown>).then(
        (v) => {
          this.inFlight--;
          if (v !== SSE_OPEN) this.answer(ctx, def, v);
          else ctx.end();
        },
        (err) => {
          this.inFlight--;
          this.fail(ctx, ctx.route, err);
        },
      );
      return;
    }
    // temporary files the handler did not move away are deleted before the answer; a failure to
    // delete one is logged and answers nothing different (the chain below never rejects)
    const dispose = (failed: boolean) =>
      upload.dispose(failed).catch((err: unknown) => this.deps.log.warn({ err, requestId: ctx.requestId }, 'an upload\'s temporary files were not deleted'));
    Promise.resolve(out)
      .then(
        async (v) => {
          await dispose(false);
          if (v !== SSE_OPEN) this.answer(ctx, def, v);
          else ctx.end();
        },
        async (err) => {
          await dispose(true);
          this.fail(ctx, ctx.route, err);
        },
      )
      .catch((err: unknown) => this.deps.log.error({ err, requestId: ctx.requestId }, 'an answer was not written'))
      .finally(() => this.inFlight--);
  }

  /** credential -> query and params -> body -> guards -> handler; synchronous where every step is. */
  private run(entry: Entry, ctx: Context, rawQuery: string, raw: Promise<Buffer> | undefined, upload: MultipartReader | undefined): unknown {
    const parsed = parseQuery(rawQuery);
    const spec = entry.def.auth;
    // a token in the query only where the client cannot send a header (EventSource)
    const sse = entry.kind === 'sse';
    if (!sse) refuseQueryToken(parsed);
    // the credential first: a caller without one learns nothing about the route's inputs
    if (spec) {
      return this.deps.auth.check(spec, ctx.headers, sse ? parsed : undefined).then((caller) => {
        ctx.identity = caller?.principal;
        ctx.token = caller?.token;
        return this.afterAuth(entry, ctx, parsed, raw, upload);
      });
    }
    return this.afterAuth(entry, ctx, parsed, raw, upload);
  }

  private afterAuth(entry: Entry, ctx: Context, parsed: Record<string, string | string[]>, raw: Promise<Buffer> | undefined, upload: MultipartReader | undefined): unknown {
    upload?.release();
    const def = entry.def;
    ctx.query = def.query ? validate(def.query, parsed, 'query') : parsed;
    let body: unknown;
    if (entry.kind === 'route') {
      const r = entry.def;
      if (r.params) ctx.params = validate(r.params, ctx.params, 'params');
      if (r.body?.multipart) {
        ctx.files = [];
        if (r.body.multipart.keep) ctx.stored = [];
      }
      if (upload) {
        body = upload.done.then(({ fields, files }) => {
          ctx.body = validate(r.body!.schema, fields, 'body');
          ctx.files = files;
        });
      } else if (r.body) body = parseBody(r, ctx.headers, raw).then((b) => void (ctx.body = b));
    }
    return then(body, () => then(runGuards(ctx, def.guards, 0), () => this.handler(entry, ctx)));
  }

  private handler(entry: Entry, ctx: Context): unknown {
    if (ctx.aborted) return SSE_OPEN;
    if (entry.kind === 'sse') {
      // a client with too many connections open: 429 before the stream's status is written
      const release = this.streams.admit(ctx.remoteAddress, ctx.identity?.id);
      this.openSse(ctx, entry.def, release);
      return SSE_OPEN;
    }
    const def = entry.def;
    const keeper = def.body?.multipart?.keep;
    // declared uploads are inspected and stored just before the handler: after the Idempotency-Key,
    // so a replayed request stores nothing
    const handler = keeper ? (c: RequestContext<any, any, any>) => keepUploads(c, keeper).then(() => def.handler(c)) : def.handler;
    if (def.idempotency) return runIdempotent(def, ctx, this.deps.idempotency(), this.deps.log, handler);
    return handler(ctx);
  }

  private answer(ctx: Context, def: RouteDef<any, any, any>, out: unknown): void {
    let reply: Reply;
    try {
      reply = out instanceof Reply ? out : out === undefined ? Reply.empty() : Reply.json(out);
    } catch (err) {
      // a handler's value that is not JSON (a BigInt, a cycle): the server's fault, answered as one
      return this.fail(ctx, ctx.route, err);
    }
    this.finish(ctx, ctx.route, reply, def.cacheControl || undefined);
  }

  private fail(ctx: Context, routeLabel: string, err: unknown): void {
    // a request the hub could not serve takes back what its guards counted (rate limits)
    if (err instanceof AppError && err.kind === 'unavailable') for (const refund of ctx.refunds ?? []) refund();
    this.finish(ctx, routeLabel, errorReply(this.deps.log, err, ctx.requestId, ctx.method, ctx.path));
  }

  private finish(ctx: Context, routeLabel: string, given: Reply, cacheControl?: string): void {
    ctx.end();
    if (ctx.aborted) return;
    const reply = ctx.answerHeaders ? given.withHeaders(ctx.answerHeaders) : given;
    const res = ctx.res;
    // inside uWS's own call the answer is corked already; later (after a promise) it is corked here
    if (ctx.sync) writeReply(res, ctx.method, reply, ctx.requestId, cacheControl);
    else res.cork(() => writeReply(res, ctx.method, reply, ctx.requestId, cacheControl));
    const status = reply.status;
    const ms = performance.now() - ctx.started;
    this.seriesOf(ctx.method, routeLabel).observe(status, ms / 1000);
    if (this.deps.log.isLevelEnabled('debug')) {
      this.deps.log.debug({ requestId: ctx.requestId, method: ctx.method, path: ctx.path, status, ms: +ms.toFixed(2) }, 'request');
    }
  }

  /** The metric series of a method and route, kept here so a request costs no string building. */
  private readonly series = new Map<string, Map<string, RouteSeries>>();
  private seriesOf(method: string, route: string): RouteSeries {
    let byRoute = this.series.get(method);
    if (!byRoute) this.series.set(method, (byRoute = new Map()));
    let s = byRoute.get(route);
    if (!s) byRoute.set(route, (s = this.deps.metrics.series(method, route)));
    return s;
  }

  private openSse(ctx: Context, def: SseRouteDef<any>, release: () => void): void {
    const stream = this.streams.start(ctx.res, ctx.requestId, ctx.headers['last-event-id'], ctx.token, release, {
      user: ctx.identity?.id,
      endpoint: ctx.route,
      address: ctx.remoteAddress,
    });
    this.seriesOf('GET', ctx.route).observe(200, (performance.now() - ctx.started) / 1000);
    ctx.onAbort = () => stream.aborted();
    const failed = (err: unknown) => {
      this.deps.log.error({ err, requestId: ctx.requestId }, 'sse open failed');
      stream.close();
    };
    try {
      const opened = def.open(ctx, stream);
      if (isPromise(opened)) opened.catch(failed);
    } catch (err) {
      failed(err);
    }
  }
}

/**
 * 400 to a request whose body framing is ambiguous, and the connection closed: whatever follows on
 * it (a request smuggled after the body) is never read.
 */
function refuseFraming(res: HttpResponse, why: string): void {
  // uWS parses what was pipelined behind this request in the same call, before the connection is
  // closed: until that call returns, a request from the same peer is refused too, never served
  if (refusedPeer === undefined) setImmediate(() => (refusedPeer = undefined));
  refusedPeer = Buffer.from(res.getRemoteAddressAsText()).toString();
  const body = JSON.stringify({ error: { code: 'bad_framing', message: `the request's framing is ambiguous: ${why}` } });
  res.writeStatus('400 Bad Request').writeHeader('content-type', 'application/json; charset=utf-8').writeHeader('connection', 'close').end(body, true);
}

/** The handler's answer when there is nothing left to write (an SSE stream is open, or the client left). */
const SSE_OPEN = Symbol('answered');

function runGuards(ctx: Context, guards: Guard[] | undefined, from: number): void | Promise<void> {
  if (!guards) return;
  for (let i = from; i < guards.length; i++) {
    const r = guards[i]!(ctx);
    if (isPromise(r)) return r.then(() => runGuards(ctx, guards, i + 1));
  }
}
