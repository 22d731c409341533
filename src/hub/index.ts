import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Store } from '../store/port.js';
import { AuthGate } from './auth.js';
import { ConnectionCaps, type ConnectionCapSettings } from './connection-caps.js';
import { recheckCredentials } from './credentials.js';
import { rateLimit, type RateLimitOptions } from './guards.js';
import { concurrency, type ConcurrencyOptions } from './concurrency.js';
import type { Authenticator, Guard, IdentityProvider, Mounted, RouteDef, RouteTable } from './http.js';
import { inject, type InjectAnswer, type InjectOptions } from './inject.js';
import { createMetrics, type Metrics } from './metrics.js';
import { ClientAddress } from './client-address.js';
import { prepareUploadDir, sweepTempUploads, type UploadSettings } from './multipart.js';
import { Live, type HistoryBus } from './live.js';
import { operationalRoutes, type PageInfo } from './operational.js';
import { peerBehaviour, peerGroups, type PeerEndpoint, type PeerGroups } from './peer-socket.js';
import { ApiTable } from './api-doc.js';
import type { RouteEntry } from './openapi.js';
import { Pipeline, type SseRouteDef } from './pipeline.js';
import { TopicPresence, type PresenceEvent } from './presence.js';
import { PresenceManager } from '../presence.js';
import type { Bus } from '../bus.js';
import { AppError } from '../errors.js';
import { Idempotency } from '../idempotency.js';
import { fileReply } from './respond.js';
import type { SseOptions } from './sse.js';
import { busStream, type BusSseDef } from './sse-route.js';
import { Sockets, topicsBehaviour, type MessageBudget, type SocketBehaviour, type SocketHandle } from './sockets.js';
import { checkPrefix, mountPath } from './router.js';
import { loadStatic, type StaticFile } from './static.js';
import { Topics, type TopicSpec } from './topics.js';
import { loadNativeUws, type TemplatedApp } from './uws.js';
import { matches, type ConnectionFilter, type ConnectionInfo, type DisconnectReason } from './connections.js';

export { Reply, route } from './http.js';
export type { AuthSpec, Authenticator, Guard, Principal, RequestContext, RouteDef, BodyReader, IdempotencySpec, IdempotentRun } from './http.js';
export type { SseStream } from './sse.js';
export type { MultipartOptions } from './multipart.js';
export type { UploadedFile } from './upload-files.js';
export type { BusSseDef } from './sse-route.js';
export type { PeerEndpoint, PeerGroups, SocketPeer } from './peer-socket.js';
export type { TopicSpec } from './topics.js';
export type { PresenceEvent } from './presence.js';
export type { SseRouteDef } from './pipeline.js';
export type { SocketBehaviour, SocketHandle } from './sockets.js';
export type { PageInfo } from './operational.js';
export type { InjectAnswer, InjectOptions } from './inject.js';
export type { RateLimitInfo } from './guards.js';
export type { ConcurrencyOptions } from './concurrency.js';
export { WS_MAX_QUEUED, WS_MAX_SUBSCRIPTIONS, WS_MAX_TOPIC_LENGTH } from './sockets.js';
export { WS_CLOSE_INVALID_TOKEN } from './credentials.js';
export type { ConnectionFilter, ConnectionInfo, DisconnectReason } from './connections.js';
export { CONNECTION_ID, WS_CLOSE_DISCONNECTED } from './connections.js';

export interface HubOptions {
  logger: Logger;
  bodyLimit: number;
  webDir: string;
  shutdownGraceMs: number;
  sse?: Partial<SseOptions>;
  /** Seconds of WebSocket silence before uWS pings it; as long again without an answer and it is closed (default 32). */
  wsIdleTimeoutS?: number;
  /** Messages one WebSocket may send (default a burst of 400, then 200 a second); past it, close 1008. */
  wsMessageBudget?: MessageBudget;
  wsMaxPayload?: number;
  /** Messages up to this size past an endpoint's limit are refused with 1009; larger ones uWS drops (default 4 MiB). */
  wsMaxFrame?: number;
  /** WebSockets and SSE streams open at once per address and per identity (defaults 256 and 32; 0: no cap). */
  connections?: Partial<ConnectionCapSettings>;
  /** Addresses or CIDR blocks of the reverse proxies whose forwarding headers name the client (TRUST_PROXY). */
  trustedProxies?: readonly string[];
  /** uWS per-socket limit for 'drop' topics. */
  wsMaxBackpressure?: number;
  /** Multipart uploads: temporary directory (default <tmp>/maru-uploads) and per-file limit (default 20 MiB). */
  uploads?: Partial<UploadSettings>;
  /**
   * Period of the check of the tokens that open WebSockets and SSE streams were opened with, ms
   * (default 30 s): a token that no longer resolves ends its connections (hub/credentials.ts).
   */
  authRecheckMs?: number;
  /** Milliseconds without a heartbeat before a presence entry is gone (hub.presence; default 30 s). */
  presenceTimeoutMs?: number;
}

/** Routes under one path prefix (hub.group): each declared with its path below the prefix. */
export interface RouteGroup {
  readonly prefix: string;
  route<Q, B, P>(def: RouteDef<Q, B, P>): RouteGroup;
}

/** hub.rateLimit's second argument: requests per client and window, and how a client is named. */
export type RateLimitSpec = Omit<RateLimitOptions, 'store' | 'clock' | 'name'>;

/**
 * The hub: owns every socket. HTTP routes, SSE streams, WebSocket topics, static pages, health,
 * metrics and graceful shutdown. It knows no service: route modules register on it.
 * The request pipeline is hub/pipeline.ts, socket endpoints hub/sockets.ts, its own routes
 * hub/operational.ts.
 */
export class Hub {
  readonly metrics: Metrics;
  readonly topics: Topics;
  /** Bus messages to topics and streams, with history recovery (hub/live.ts). */
  readonly live: Live;
  /** The credential gate: the identity model plugs its authenticator in with `authenticate`. */
  readonly auth = new AuthGate();
  /** The route table as the API reference sees it (hub/api-doc.ts). */
  readonly api: ApiTable;
  private readonly app: TemplatedApp;
  private readonly uws: ReturnType<typeof loadNativeUws>;
  private readonly log: Logger;
  private readonly statics: Map<string, StaticFile>;
  private readonly pages: PageInfo[] = [];
  private readonly readiness = new Map<string, () => Promise<void | string>>();
  private readonly pipeline: Pipeline;
  private readonly sockets: Sockets;
  private readonly caps: ConnectionCaps;
  private listenSocket: unknown;
  private readonly uploadSweep: NodeJS.Timeout;
  private readonly credentialCheck: NodeJS.Timeout;
  private rechecking: Promise<number> | undefined;
  private state: { store: Store; clock: Clock } | undefined;
  private idempotency: Idempotency | undefined;
  private presenceManager: PresenceManager | undefined;
  private readonly topicPresence: TopicPresence;
  private bus: (HistoryBus & Partial<Pick<Bus, 'emit'>>) | undefined;
  private readonly instance = randomBytes(4).toString('hex');

  constructor(private readonly opts: HubOptions) {
    this.uws = loadNativeUws();
    this.log = opts.logger;
    this.metrics = createMetrics();
    this.app = this.uws.App();
    this.topics = new Topics(this.app, this.metrics);
    this.live = new Live(this.topics);
    this.api = new ApiTable(this.topics, () => Object.fromEntries([...this.auth.providerList()].map(([name, p]) => [name, p.description ?? name])));
    this.statics = loadStatic(opts.webDir);
    const uploads = { tempDir: join(tmpdir(), 'maru-uploads'), maxFileBytes: 20 << 20, ...opts.uploads };
    prepareUploadDir(uploads.tempDir);
    // temporary files of requests cut short by a crash: gone after an hour
    const sweep = () => void sweepTempUploads(uploads.tempDir, 3_600_000);
    sweep();
    this.uploadSweep = setInterval(sweep, 600_000).unref();
    // a round still running when the next is due: that one is skipped
    this.credentialCheck = setInterval(() => {
      if (!this.rechecking) this.recheckCredentials().catch(() => undefined);
    }, opts.authRecheckMs ?? 30_000).unref();
    this.caps = new ConnectionCaps({ perAddress: 256, perIdentity: 32, ...opts.connections });
    const clients = new ClientAddress(opts.trustedProxies ?? []);
    this.pipeline = new Pipeline(
      {
        clients,
        caps: this.caps,
        log: this.log,
        auth: this.auth,
        metrics: this.metrics,
        bodyLimit: opts.bodyLimit,
        uploads,
        sse: { heartbeatMs: 15_000, maxBacklog: 1 << 20, retryMs: 3000, ...opts.sse },
        statics: this.statics,
        idempotency: () => {
          if (!this.state) throw new AppError('unavailable', 'not_ready', 'the hub has no store yet');
          return (this.idempotency ??= new Idempotency(this.state.store, this.state.clock));
        },
      },
      this.instance,
    );
    // join and leave events go through the Bus, so every process's subscribers hear them
    const publish = (topic: string, event: PresenceEvent) => (this.bus?.emit ? this.bus.emit(topic, { ...event }) : this.live.dispatch({ topic, message: { ...event } }));
    this.topicPresence = new TopicPresence({ manager: () => this.presence, publish, log: this.log, instance: this.instance, topics: this.topics });
    this.sockets = new Sockets({
      app: this.app,
      auth: this.auth,
      metrics: this.metrics,
      stopping: () => this.pipeline.stopping,
      caps: this.caps,
      clients,
      node: this.instance,
      defaults: {
        maxFrameBytes: opts.wsMaxFrame ?? 4 << 20,
        idleTimeoutS: opts.wsIdleTimeoutS ?? 32,
        messageBudget: opts.wsMessageBudget ?? { perSecond: 200, burst: 400 },
        maxPayloadLength: opts.wsMaxPayload ?? 64 * 1024,
        maxBackpressure: opts.wsMaxBackpressure ?? 1 << 20,
      },
    });
    this.socket('/ws', topicsBehaviour(this.auth, this.topics, this.live, this.caps));
    this.app.any('/*', (res, req) => this.pipeline.handle(res, req));
    const [healthz, readyz, metrics, pages] = operationalRoutes({ metrics: this.metrics, readiness: this.readiness, pages: this.pages });
    this.route(healthz!).route(readyz!).route(metrics!);
    this.api.install(this);
    this.route(pages!);
  }

  /** Registers a service's routes: the API document lists what `register` adds under `name`. */
  service(name: string, register: (hub: this) => void): this {
    this.api.within(name, () => register(this));
    return this;
  }

  route<Q, B, P>(def: RouteDef<Q, B, P>): this {
    this.pipeline.router.add(def.method, def.path, { kind: 'route', def });
    this.api.add({ method: def.method, path: def.path, kind: 'route', def: def as RouteEntry['def'] });
    return this;
  }

  /**
   * Routes under one path prefix, in the manner of Hono's `app.route(prefix, sub)`: a route the
   * group declares with path `/wallet` is the hub's route `<prefix>/wallet` (path `/`: the prefix
   * itself), registered, matched and documented exactly as if declared with its full path.
   */
  group(prefix: string): RouteGroup {
    const group: RouteGroup = {
      prefix: checkPrefix(prefix),
      route: (def) => {
        this.route({ ...def, path: mountPath(prefix, def.path) });
        return group;
      },
    };
    return group;
  }

  /**
   * A service's route table, as data, mounted under its prefix (each route's path is below it, as
   * with `group`; prefix '': at the root). Answers the table with the full paths, as a type and as values: a routes.ts
   * returns it, and its pages' client (web/common/api.ts) reads the routes from that type alone.
   */
  mount<const Prefix extends string, const T extends RouteTable>(prefix: Prefix, table: T): Mounted<Prefix, T> {
    // '' mounts at the root (routes an interface document names there)
    const group = prefix === '' ? { route: (def: RouteDef<any, any, any>) => this.route(def) } : this.group(prefix);
    const mounted: Record<string, RouteDef<any, any, any>> = {};
    for (const [name, def] of Object.entries(table)) {
      group.route(def);
      mounted[name] = { ...def, path: prefix === '' ? def.path : mountPath(prefix, def.path) };
    }
    return mounted as Mounted<Prefix, T>;
  }

  /** An SSE route: a custom `open`, or Bus topics with ids and Last-Event-ID resume (BusSseDef). */
  sse<Q>(def: SseRouteDef<Q> | BusSseDef<Q>): this {
    if ('topics' in def) {
      for (const t of def.topics) this.live.retain(t, def.history ?? 1000);
      const { path, query, guards, auth } = def;
      const open = this.topicPresence.stream(def.topics, busStream(this.live, def));
      this.pipeline.router.add('GET', path, { kind: 'sse', def: { path, query, guards, auth, open } });
      this.api.add({ method: 'GET', path, kind: 'sse', def });
      return this;
    }
    this.pipeline.router.add('GET', def.path, { kind: 'sse', def });
    this.api.add({ method: 'GET', path: def.path, kind: 'sse', def });
    return this;
  }

  /** Presence on topics in the hub's Store (src/presence.ts; `presence: true` topics: hub/presence.ts). Throws until `useState`. */
  get presence(): PresenceManager {
    if (!this.presenceManager) throw new AppError('unavailable', 'not_ready', 'the hub has no store yet');
    return this.presenceManager;
  }

  /**
   * A request dispatched in process through the same pipeline as one from a socket (routing,
   * credential, validation, guards, handler, error mapping, headers), without a port. `path` may
   * carry a query string. An SSE route answers its status, headers and first chunk, then closes.
   */
  inject(method: string, path: string, opts: InjectOptions = {}): Promise<InjectAnswer> {
    return inject((res, req) => this.pipeline.handle(res, req), method, path, opts);
  }

  /**
   * The Store and Clock the hub's own guards count with (rate limits). The composition root calls
   * this once the store is open; guards made before it read them on their first request.
   */
  useState(store: Store, clock: Clock): this {
    this.state = { store, clock };
    this.presenceManager = new PresenceManager({ store, clock, timeoutMs: this.opts.presenceTimeoutMs });
    this.topicPresence.start(this.presenceManager.timeoutMs);
    return this;
  }

  /**
   * A rate-limit guard counted in the hub's Store on the hub's Clock (hub/guards.ts: fixed windows,
   * 429 rate_limited with Retry-After), so route modules need neither: `hub.rateLimit('chat-turn',
   * {limit: 30, windowMs: 60_000})`. `name` separates the counters of different limits.
   */
  rateLimit(name: string, spec: RateLimitSpec): Guard {
    let guard: Guard | undefined;
    // checked now, so a bad limit fails at start-up and not on the first request
    rateLimit({ ...spec, name, store: undefined as never, clock: undefined as never });
    return (ctx) => {
      if (!guard) {
        if (!this.state) throw new AppError('unavailable', 'not_ready', 'the hub has no store yet');
        guard = rateLimit({ ...spec, name, store: this.state.store, clock: this.state.clock });
      }
      return guard(ctx);
    };
  }

  /** A concurrency-limit guard: `max` requests in flight per identity, address or route (hub/concurrency.ts). */
  concurrency(name: string, spec: ConcurrencyOptions): Guard {
    return concurrency(name, spec);
  }

  /**
   * Judges again every /ws subscription to `topic` on this process (its TopicSpec.authorize with the
   * socket's identity now). A subscription no longer allowed ends: the socket is unsubscribed and
   * told `{type: 'unsubscribed', topic, reason}` (reason: the verdict, `forbidden`, `unauthorized` or
   * `unknown`); the socket and its other subscriptions stay. Resolves with the number ended.
   */
  async reauthorize(topic: string): Promise<number> {
    let ended = 0;
    for (const ws of [...this.sockets.open]) {
      const data = ws.getUserData();
      if (data.closed || !data.topics?.has(topic)) continue;
      const verdict = await this.topics.authorize(topic, data.identity);
      if (verdict === 'ok' || typeof verdict === 'object' || data.closed || !data.topics.has(topic)) continue;
      this.topics.unsubscribe(ws, topic);
      ws.send(JSON.stringify({ type: 'unsubscribed', topic, reason: verdict }), false);
      ended++;
    }
    return ended;
  }

  /**
   * Checks again the token of every open WebSocket and SSE stream that holds one, and ends the
   * connections whose token no longer resolves (WebSocket close 4401 invalid_token; an SSE `closed`
   * event with the error body, then the end of the stream). Runs every `authRecheckMs`; rounds run one after the
   * other, each over the connections open when it starts. Resolves with the number ended.
   */
  recheckCredentials(): Promise<number> {
    const round = (this.rechecking ?? Promise.resolve(0))
      .catch(() => 0)
      .then(() => recheckCredentials(this.auth, [...this.sockets.credentials(), ...this.pipeline.streams.credentials()]));
    this.rechecking = round;
    const done = () => {
      if (this.rechecking === round) this.rechecking = undefined;
    };
    round.then(done, done);
    return round;
  }

  /**
   * What the hub holds for long-lived connections: open WebSockets, open SSE streams, and the
   * addresses and identities counted against the connection caps (all zero once every one closed).
   */
  connections(): { sockets: number; streams: number; addresses: number; identities: number } {
    return { sockets: this.sockets.open.size, streams: this.pipeline.streams.size, ...this.caps.size };
  }

  /** This hub's instance name: the first part of its connections' ids and of its presence clients' ids. */
  get node(): string {
    return this.instance;
  }

  /** This process's open WebSockets and SSE streams, all or those the filter names (hub/connections.ts). */
  connectionList(filter?: ConnectionFilter): ConnectionInfo[] {
    const out: ConnectionInfo[] = [];
    for (const c of [...this.sockets.held(), ...this.pipeline.streams.held()]) {
      const info = c.info();
      if (!filter || matches(info, filter)) out.push(info);
    }
    return out;
  }

  /**
   * Ends this process's connections the filter names: a WebSocket closes with 4403 (4401
   * `invalid_token` when `reason` is `revoked`), an SSE stream gets a `closed` event. Returns the ids ended.
   */
  disconnect(filter: ConnectionFilter, reason: DisconnectReason = 'disconnected'): string[] {
    const ended: string[] = [];
    for (const c of [...this.sockets.held(), ...this.pipeline.streams.held()]) {
      const info = c.info();
      if (!matches(info, filter)) continue;
      c.end(reason);
      ended.push(info.id);
    }
    return ended;
  }

  /** The topics this process's WebSockets are subscribed to, with their subscriber counts here (the `limit` most followed). */
  topicCounts(limit = 500): { topic: string; subscribers: number; presence: boolean }[] {
    const counts = new Map<string, number>();
    for (const ws of this.sockets.open) {
      const data = ws.getUserData();
      if (data.closed) continue;
      for (const t of data.topics) counts.set(t, (counts.get(t) ?? 0) + 1);
    }
    return [...counts]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, limit)
      .map(([topic, subscribers]) => ({ topic, subscribers, presence: this.topics.spec(topic)?.presence === true }));
  }

  /** Delivers the Bus's messages to this hub's topics and streams, and reads its history. */
  attachBus(bus: HistoryBus & Partial<Pick<Bus, 'emit'>>): () => void {
    this.bus = bus;
    return this.live.attach(bus);
  }

  /** Installs the identity model: how a bearer token becomes a principal; `superRole` passes every role check. */
  authenticate(authenticator: Authenticator, opts: { superRole?: string } = {}): this {
    this.auth.use(authenticator, opts);
    return this;
  }

  /**
   * A second kind of bearer token, told apart by its prefix, resolved by `authenticator` wherever
   * the hub reads a token (routes, streams, sockets, and the re-check of open connections): e.g.
   * a document's share link (src/collab/links.ts). The principal's `kind` names it.
   */
  tokenKind(prefix: string, authenticator: Authenticator): this {
    this.auth.useKind(prefix, authenticator);
    return this;
  }

  /** Adds a second source of identities routes can name (`auth: {provider: name}`); see IdentityProvider. */
  identityProvider(name: string, provider: IdentityProvider): this {
    this.auth.provide(name, provider);
    return this;
  }

  topic(spec: TopicSpec): this {
    this.topics.define(spec);
    if (spec.history) this.live.retain(spec.name, spec.history);
    return this;
  }

  /** Registers an extra WebSocket endpoint at `pattern` (uWS syntax, `:name` parameters). */
  socket<D extends object>(pattern: string, behaviour: SocketBehaviour<D>): SocketHandle {
    this.api.socket(pattern, behaviour.description ?? 'a WebSocket endpoint');
    return this.sockets.endpoint(pattern, behaviour);
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
      handler: (ctx) => {
        const f = this.statics.get(file);
        if (!f) throw new AppError('unavailable', 'page_not_built', `${file} is missing: run npm run build`);
        return fileReply(f, ctx.headers);
      },
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
  /**
   * Stops accepting, lets requests in flight finish until `deadline` (default: the grace from now),
   * then closes every stream and socket. Resolves with how many requests were still unanswered.
   */
  async stop(deadline = Date.now() + this.opts.shutdownGraceMs): Promise<number> {
    const p = this.pipeline;
    if (p.stopping) return 0;
    p.stopping = true;
    clearInterval(this.uploadSweep);
    clearInterval(this.credentialCheck);
    this.topicPresence.stop();
    if (this.listenSocket) this.uws.us_listen_socket_close(this.listenSocket as never);
    while (p.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    p.streams.closeAll();
    this.sockets.closeAll();
    return p.inFlight;
  }
}
