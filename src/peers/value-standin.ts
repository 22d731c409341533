import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Stand-in for the value service (document 3, "Peer services used"): a real HTTP server on
 * loopback with exactly the document's routes:
 *   GET /             service information
 *   POST /api/inflow  adds the body's `amount` to the global inflow total; idempotent by the
 *                     Idempotency-Key header (or the body's `id`): a repeated key adds nothing
 *   GET /health       liveness and the totals
 * Unknown paths are 404 and malformed JSON is 400, both {"error":{"code","message"}}.
 *
 * Knobs for tests: `delayMs` holds every answer back (the work is done first, so a client that
 * times out may still have been counted: the repeat must be deduplicated), and `failRate` answers
 * that share of requests with 503 before doing anything. Both can be changed while running.
 *
 * The HTTP helpers at the bottom are shared with the task ledger stand-in.
 */

export interface StandinOptions {
  /** 0 picks a free port. */
  port?: number;
  host?: string;
  delayMs?: number;
  /** 0..1: share of requests answered 503 without effect. */
  failRate?: number;
  /** Random source for failRate (default Math.random). */
  random?: () => number;
}

export interface StandinKnobs {
  delayMs: number;
  failRate: number;
}

export interface Standin<S> {
  url: string;
  port: number;
  host: string;
  /** The stand-in's in-memory state (pass it to a restarted stand-in to keep its totals). */
  state: S;
  knobs: StandinKnobs;
  close(): Promise<void>;
}

export interface InflowRecord {
  key: string | null;
  amount: number;
  at: number;
}

export interface ValueStandinState {
  /** Sum of the amounts of accepted (not duplicate) inflows. */
  inflowTotal: number;
  /** Accepted inflows. */
  inflowCount: number;
  /** Every POST /api/inflow that reached the handler (including duplicates and refusals). */
  calls: number;
  duplicates: number;
  /** Accepted inflows by idempotency key. */
  byKey: Map<string, InflowRecord>;
  /** The last accepted inflows, newest last (at most 100). */
  recent: InflowRecord[];
}

export function newValueStandinState(): ValueStandinState {
  return { inflowTotal: 0, inflowCount: 0, calls: 0, duplicates: 0, byKey: new Map(), recent: [] };
}

const ROUTES = ['GET /', 'POST /api/inflow', 'GET /health'];

export function startValueStandin(opts: StandinOptions & { state?: ValueStandinState } = {}): Promise<Standin<ValueStandinState>> {
  const state = opts.state ?? newValueStandinState();
  const started = Date.now();
  return startStandin(opts, state, async (req, url, reply) => {
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case 'GET /':
        return reply(200, {
          service: 'value-standin',
          description: 'Stand-in for the value service: receives ecosystem inflows (POST /api/inflow).',
          routes: ROUTES,
          inflow_total: state.inflowTotal,
          inflow_count: state.inflowCount,
        });
      case 'GET /health':
        return reply(200, {
          ok: true,
          status: 'ok',
          service: 'value-standin',
          uptime_ms: Date.now() - started,
          inflow_total: state.inflowTotal,
          inflow_count: state.inflowCount,
        });
      case 'POST /api/inflow': {
        state.calls += 1;
        const body = await readJsonBody(req);
        if (body === null || typeof body !== 'object' || Array.isArray(body)) {
          return reply(400, errorJson('invalid_inflow', 'the body must be a JSON object'));
        }
        const b = body as Record<string, unknown>;
        const amount = b.amount;
        if (typeof amount !== 'number' || !Number.isFinite(amount) || amount < 0) {
          return reply(400, errorJson('invalid_inflow', 'amount must be a finite number >= 0'));
        }
        const headerKey = req.headers['idempotency-key'];
        const key = typeof headerKey === 'string' && headerKey !== '' ? headerKey : typeof b.id === 'string' && b.id !== '' ? b.id : null;
        const previous = key === null ? undefined : state.byKey.get(key);
        if (previous) {
          state.duplicates += 1;
          return reply(200, {
            ok: true,
            duplicate: true,
            key,
            amount: previous.amount,
            inflow_total: state.inflowTotal,
            inflow_count: state.inflowCount,
          });
        }
        const rec: InflowRecord = { key, amount, at: Date.now() };
        if (key !== null) state.byKey.set(key, rec);
        state.inflowTotal += amount;
        state.inflowCount += 1;
        state.recent.push(rec);
        if (state.recent.length > 100) state.recent.shift();
        return reply(201, {
          ok: true,
          duplicate: false,
          key,
          amount,
          inflow_total: state.inflowTotal,
          inflow_count: state.inflowCount,
        });
      }
      default:
        return reply(...routeMiss(req.method, url.pathname, ROUTES));
    }
  });
}

// ------------------------------------------------------------------------------------------------
// Shared HTTP helpers of the stand-ins

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function errorJson(code: string, message: string, details?: unknown): { error: { code: string; message: string; details?: unknown } } {
  return details === undefined ? { error: { code, message } } : { error: { code, message, details } };
}

/** 405 when the path exists under another method, 404 otherwise. */
export function routeMiss(method: string | undefined, path: string, routes: string[]): [number, unknown] {
  const methods = routes.filter((r) => r.slice(r.indexOf(' ') + 1) === path).map((r) => r.slice(0, r.indexOf(' ')));
  if (methods.length > 0) {
    return [405, errorJson('method_not_allowed', `${method ?? '?'} is not allowed on ${path}`, { allow: methods })];
  }
  return [404, errorJson('not_found', `no route ${method ?? '?'} ${path}`)];
}

const BODY_LIMIT = 1024 * 1024;

/** Reads and parses a JSON body; an empty body reads as null. Throws HttpError 400/413. */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) throw new HttpError(413, 'body_too_large', `the body exceeds ${BODY_LIMIT} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid_json', 'the body is not valid JSON');
  }
}

/** `headers` (optional): extra answer headers; with a content-type, a string body is sent raw. */
export type Reply = (status: number, body: unknown, headers?: Record<string, string>) => void;
export type StandinHandler = (req: IncomingMessage, url: URL, reply: Reply) => Promise<void> | void;

/** Starts a stand-in server: knobs, JSON answers, error shape, and a close that ends every connection. */
export async function startStandin<S>(opts: StandinOptions, state: S, handler: StandinHandler): Promise<Standin<S>> {
  const knobs: StandinKnobs = { delayMs: opts.delayMs ?? 0, failRate: opts.failRate ?? 0 };
  const random = opts.random ?? Math.random;
  const host = opts.host ?? '127.0.0.1';
  const timers = new Set<NodeJS.Timeout>();

  const send = (res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>) => {
    if (res.writableEnded || res.destroyed) return;
    // a string body with its own content-type header is sent as it is (HTML pages, redirects)
    const raw = typeof body === 'string' && headers?.['content-type'] !== undefined;
    const text = raw ? (body as string) : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const server: Server = createServer((req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://standin');
    } catch {
      return send(res, 400, errorJson('bad_request', 'malformed request target'));
    }
    const reply: Reply = (status, body, headers) => {
      if (knobs.delayMs > 0) {
        const t = setTimeout(() => {
          timers.delete(t);
          send(res, status, body, headers);
        }, knobs.delayMs);
        timers.add(t);
      } else send(res, status, body, headers);
    };
    if (knobs.failRate > 0 && random() < knobs.failRate) {
      req.resume();
      return reply(503, errorJson('unavailable', 'stand-in failure injected (failRate)'));
    }
    Promise.resolve()
      .then(() => handler(req, url, reply))
      .catch((err: unknown) => {
        if (err instanceof HttpError) reply(err.status, errorJson(err.code, err.message));
        else reply(500, errorJson('internal', 'stand-in failure'));
      });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    host,
    state,
    knobs,
    close() {
      closed ??= new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
