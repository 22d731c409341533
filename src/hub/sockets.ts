import { AppError, errorBody } from '../errors.js';
import { invalidToken, WWW_AUTHENTICATE, type AuthGate } from './auth.js';
import { parseClientJson, parseQuery, type AuthSpec, type Principal } from './http.js';
import { parseSince, type Live } from './live.js';
import { WS_CLOSE_INVALID_TOKEN, type HeldCredential } from './credentials.js';
import { FORWARDING_HEADERS, type ClientAddress } from './client-address.js';
import type { ConnectionCaps } from './connection-caps.js';
import type { Metrics } from './metrics.js';
import { statusLine, writeSecurity } from './respond.js';
import type { SocketData, Topics } from './topics.js';
import type { TemplatedApp, WebSocket } from './uws.js';
import { WS_CLOSE_DISCONNECTED, type HeldConnection } from './connections.js';

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
  /** Messages a socket may send: a bucket of `burst` refilled at `perSecond` (default: the hub's). */
  messageBudget?: MessageBudget;
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

/** RFC 6455 close code of a message larger than the endpoint takes. */
export const WS_CLOSE_TOO_BIG = 1009;
/** RFC 6455 close code of a policy violation: a socket that sent more messages than its budget. */
export const WS_CLOSE_POLICY = 1008;

/** How many messages a socket may send: `burst` at once, then `perSecond` on average. */
export interface MessageBudget {
  perSecond: number;
  burst: number;
}

/**
 * Takes one message from the socket's bucket (a token bucket: full at `burst`, refilled at
 * `perSecond`); false once it is empty.
 */
export function spendMessage(data: { tokens?: number; refilledAt?: number }, budget: MessageBudget, now: number): boolean {
  const tokens = data.tokens === undefined ? budget.burst : Math.min(budget.burst, data.tokens + ((now - data.refilledAt!) * budget.perSecond) / 1000);
  data.refilledAt = now;
  if (tokens < 1) {
    data.tokens = tokens;
    return false;
  }
  data.tokens = tokens - 1;
  return true;
}

/** Bounds of one /ws socket: subscriptions held at once, and the length of a topic name. */
export const WS_MAX_SUBSCRIPTIONS = 100;
export const WS_MAX_TOPIC_LENGTH = 200;
export const WS_MAX_QUEUED = 32;

export interface SocketDeps {
  app: TemplatedApp;
  auth: AuthGate;
  metrics: Metrics;
  /**
   * `maxPayloadLength`: an endpoint's default message limit; a longer message closes its socket with
   * 1009 "message too big". `maxFrameBytes`: the size past which uWS itself drops the connection
   * (it cannot send a close frame then): messages up to it are read and answered with 1009.
   */
  defaults: { idleTimeoutS: number; maxPayloadLength: number; maxBackpressure: number; maxFrameBytes: number; messageBudget: MessageBudget };
  /** Open connections per address and identity (shared with SSE streams). */
  caps: ConnectionCaps;
  /** True once the hub stops: upgrades are refused with 503. */
  stopping: () => boolean;
  /** The client's address behind trusted proxies (TRUST_PROXY). */
  clients: ClientAddress;
  /** This hub's instance name: the first part of a connection's id (hub/connections.ts). */
  node: string;
}

/** Every open WebSocket of a hub (any endpoint), for the 1001 close on shutdown. */
export class Sockets {
  readonly open = new Set<WebSocket<SocketData>>();
  private nextSocketId = 1;

  constructor(private readonly deps: SocketDeps) {}

  /** Registers a WebSocket endpoint at `pattern` (uWS syntax, `:name` parameters). */
  endpoint<D extends object>(pattern: string, behaviour: SocketBehaviour<D>): SocketHandle {
    type S = SocketData & D;
    const { app, defaults } = this.deps;
    const params = pattern.split('/').filter((p) => p.startsWith(':')).length;
    const limit = behaviour.maxPayloadLength ?? defaults.maxPayloadLength;
    const budget = behaviour.messageBudget ?? defaults.messageBudget;
    app.ws<S>(pattern, {
      idleTimeout: behaviour.idleTimeoutS ?? defaults.idleTimeoutS,
      // uWS drops a connection whose message passes its limit without a close frame (1006); up to
      // maxFrameBytes the message is read here and refused with 1009 as RFC 6455 §7.4.1 says
      maxPayloadLength: Math.max(limit, defaults.maxFrameBytes),
      maxBackpressure: behaviour.maxBackpressure ?? defaults.maxBackpressure,
      closeOnBackpressureLimit: 0,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => {
        if (this.deps.stopping()) {
          res.writeStatus('503 Service Unavailable').end();
          return;
        }
        // everything from req is read now: it is gone after the first await
        const key = req.getHeader('sec-websocket-key');
        const protocol = req.getHeader('sec-websocket-protocol');
        const extensions = req.getHeader('sec-websocket-extensions');
        const authorization = req.getHeader('authorization');
        const query = req.getQuery() ?? '';
        const forwarded: Record<string, string> = {};
        for (const name of FORWARDING_HEADERS) {
          const v = req.getHeader(name);
          if (v) forwarded[name] = v;
        }
        const remoteAddress = this.deps.clients.of(Buffer.from(res.getRemoteAddressAsText()).toString(), forwarded);
        let aborted = false;
        res.onAborted(() => {
          aborted = true;
        });
        const refuse = (err: unknown) => {
          if (aborted) return;
          const e = err instanceof AppError ? err : new AppError('invalid', 'invalid_path', 'the socket path is not valid');
          res.cork(() => {
            res.writeStatus(statusLine(e.status)).writeHeader('content-type', 'application/json');
            writeSecurity(res);
            if (e.status === 401) res.writeHeader('www-authenticate', WWW_AUTHENTICATE(e.code));
            const retry = (e.details as { retry_after_s?: unknown } | undefined)?.retry_after_s;
            if (e.status === 429 && typeof retry === 'number') res.writeHeader('retry-after', String(retry));
            res.end(JSON.stringify(errorBody(e)));
          });
        };
        const accept = (data: D, caller: { principal: Principal; token: string } | undefined) => {
          if (aborted) return;
          if (this.deps.stopping()) return refuse(new AppError('unavailable', 'shutting_down', 'the server is shutting down'));
          let release: () => void;
          try {
            release = this.deps.caps.acquire(remoteAddress, caller?.principal.id);
          } catch (err) {
            return refuse(err);
          }
          const base: SocketData = { id: this.nextSocketId++, remoteAddress, topics: new Set(), closed: false, identity: caller?.principal, release, openedAt: Date.now(), endpoint: pattern };
          if (caller) base.token = caller.token;
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
          const headers: Record<string, string> = authorization ? { authorization } : {};
          const caller = behaviour.auth ? await this.deps.auth.check(behaviour.auth, headers, parseQuery(query)) : undefined;
          return { data: await behaviour.upgrade(values, query, caller?.principal), caller };
        };
        run().then(({ data, caller }) => accept(data, caller), refuse);
      },
      open: (ws) => {
        this.open.add(ws as unknown as WebSocket<SocketData>);
        this.deps.metrics.websockets.inc();
        behaviour.open?.(ws);
      },
      message: (ws, message, isBinary) => {
        const data = ws.getUserData();
        if (data.closed) return;
        if (message.byteLength > limit) {
          data.closed = true;
          ws.end(WS_CLOSE_TOO_BIG, `message too big: at most ${limit} bytes`);
          return;
        }
        // every message counts, whatever it is (a frame the endpoint refuses costs as much to read)
        if (!spendMessage(data, budget, performance.now())) {
          data.closed = true;
          this.deps.metrics.wsClosedOverBudget.inc();
          ws.end(WS_CLOSE_POLICY, `too many messages: at most ${budget.burst} at once and ${budget.perSecond} a second`);
          return;
        }
        behaviour.message(ws, message, isBinary);
      },
      close: (ws, code) => {
        const data = ws.getUserData();
        data.closed = true;
        data.release?.();
        data.releaseIdentity?.();
        this.open.delete(ws as unknown as WebSocket<SocketData>);
        this.deps.metrics.websockets.dec();
        behaviour.close?.(ws, code);
      },
    });
    return { publish: (topic, message, isBinary) => void app.publish(topic, message, isBinary) };
  }

  /** The open sockets that hold a token, each ended with 4401 invalid_token (hub/credentials.ts). */
  *credentials(): Generator<HeldCredential> {
    for (const ws of this.open) {
      const data = ws.getUserData();
      const token = data.token;
      if (token === undefined || data.closed) continue;
      yield {
        token,
        end: () => {
          if (!data.closed) ws.end(WS_CLOSE_INVALID_TOKEN, 'invalid_token');
        },
      };
    }
  }

  /** The open sockets as the console lists them, each with the operator's disconnect (hub/connections.ts). */
  *held(): Generator<HeldConnection> {
    for (const ws of this.open) {
      const data = ws.getUserData();
      if (data.closed) continue;
      yield {
        info: () => ({
          id: `${this.deps.node}:ws:${data.id}`,
          kind: 'ws',
          endpoint: data.endpoint ?? '',
          user: data.identity?.id ?? null,
          remote_address: data.remoteAddress,
          opened_at: new Date(data.openedAt ?? 0).toISOString(),
          topics: [...data.topics],
        }),
        end: (reason) => {
          if (data.closed) return;
          data.closed = true;
          if (reason === 'revoked') ws.end(WS_CLOSE_INVALID_TOKEN, 'invalid_token');
          else ws.end(WS_CLOSE_DISCONNECTED, 'disconnected by an operator');
        },
      };
    }
  }

  /** Closes every socket with 1001 (shutdown). */
  closeAll(): void {
    for (const ws of this.open) {
      ws.getUserData().closed = true;
      ws.end(1001, 'server shutting down');
    }
  }
}

/** Messages a WebSocket client may send on /ws. */
type ClientFrame =
  | { type: 'subscribe' | 'unsubscribe'; topic: string; since?: unknown }
  | { type: 'auth'; token: string }
  | { type: 'ping' };

/** The JSON topics endpoint /ws: the hub's own frame handling on one more socket endpoint. */
export function topicsBehaviour(auth: AuthGate, topics: Topics, live: Live, caps: ConnectionCaps): SocketBehaviour<object> {
  /**
   * Frames of one socket are handled in order, one after the other: an `auth` frame (a store
   * look-up) takes effect before the `subscribe` sent right after it. A socket may have at most
   * WS_MAX_QUEUED frames waiting; beyond that they are refused.
   */
  const onFrame = (ws: WebSocket<SocketData>, message: ArrayBuffer, isBinary: boolean): void => {
    const data = ws.getUserData();
    const reply = (obj: unknown) => {
      if (!data.closed) ws.send(JSON.stringify(obj), false);
    };
    let frame: ClientFrame;
    try {
      if (isBinary) throw new Error('binary');
      frame = parseClientJson(Buffer.from(message).toString('utf8'), 'frame') as ClientFrame;
    } catch (err) {
      if (err instanceof AppError && err.code === 'json_too_deep') return reply({ type: 'error', code: err.code, message: err.message });
      return reply({ type: 'error', code: 'invalid_frame', message: 'frames are JSON text' });
    }
    if ((data.queued ?? 0) >= WS_MAX_QUEUED) {
      return reply({ type: 'error', code: 'too_many_frames', message: `at most ${WS_MAX_QUEUED} frames may wait for an answer` });
    }
    data.queued = (data.queued ?? 0) + 1;
    data.queue = (data.queue ?? Promise.resolve())
      .then(() => handleFrame(ws, data, frame, reply))
      .catch(() => reply({ type: 'error', code: 'unavailable', message: 'the frame could not be handled; try again' }))
      .finally(() => {
        data.queued!--;
      });
  };

  const handleFrame = async (ws: WebSocket<SocketData>, data: SocketData, frame: ClientFrame, reply: (obj: unknown) => void): Promise<void> => {
    if (data.closed) return;
    if (frame?.type === 'ping') return reply({ type: 'pong' });
    if (frame?.type === 'auth' && typeof frame.token === 'string') {
      try {
        const identity = await auth.resolve(frame.token);
        if (data.closed) return;
        if (data.identity?.id !== identity.id) {
          // the socket now counts against this identity's connections (and no longer another's)
          let release: () => void;
          try {
            release = caps.acquireIdentity(identity.id);
          } catch (err) {
            const e = err as AppError;
            return reply({ type: 'error', code: e.code, message: e.message, details: e.details });
          }
          data.releaseIdentity?.();
          data.releaseIdentity = release;
        }
        data.identity = identity;
        data.token = frame.token;
        return reply({ type: 'authenticated', id: identity.id, roles: identity.roles });
      } catch {
        const e = invalidToken();
        return reply({ type: 'error', code: e.code, message: e.message });
      }
    }
    if ((frame?.type === 'subscribe' || frame?.type === 'unsubscribe') && typeof frame.topic === 'string') {
      const topic = frame.topic;
      if (frame.type === 'unsubscribe') {
        topics.unsubscribe(ws, topic);
        return reply({ type: 'unsubscribed', topic });
      }
      if (topic.length > WS_MAX_TOPIC_LENGTH) {
        return reply({ type: 'error', code: 'invalid_topic', message: `a topic name is at most ${WS_MAX_TOPIC_LENGTH} characters`, topic: topic.slice(0, WS_MAX_TOPIC_LENGTH) });
      }
      if (!data.topics.has(topic) && data.topics.size >= WS_MAX_SUBSCRIPTIONS) {
        return reply({ type: 'error', code: 'too_many_subscriptions', message: `a socket holds at most ${WS_MAX_SUBSCRIPTIONS} subscriptions`, topic });
      }
      const verdict = await topics.authorize(topic, data.identity);
      if (data.closed) return;
      if (verdict !== 'ok' && typeof verdict === 'string') {
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
      if (typeof verdict === 'object') {
        // a name that may come to exist in a moment: subscribed now, ended if it does not
        void verdict.pending.then(
          (exists) => {
            if (exists || data.closed || !data.topics.has(topic)) return;
            topics.unsubscribe(ws, topic);
            reply({ type: 'error', code: 'unknown_topic', message: `no topic ${topic}`, topic });
          },
          () => undefined,
        );
      }
      return live.subscribeSocket(ws, topic, since, reply);
    }
    reply({ type: 'error', code: 'invalid_frame', message: 'expected {type: subscribe|unsubscribe|auth|ping, topic|token}' });
  };

  return {
    upgrade: () => ({}),
    message: (ws, message, isBinary) => onFrame(ws, message, isBinary),
    close: (ws) => topics.removeSocket(ws),
  };
}
