/**
 * The pages' one way to speak the API. Each call is typed from the route declarations themselves:
 * a service's routes.ts returns its route table as data (hub.mount) and exports its type, which this
 * file imports AS A TYPE ONLY (no server code reaches a page's bundle), the way Hono's `hc<typeof app>`
 * reads an app's type. `api.get('/api/shows/:id', {params: {id}})` then knows the route's query,
 * body and parameters and its answer; a route that changes or goes breaks the page's type check.
 *
 * The client owns what every call shares: the bearer token (the hub's own sign-in, or another identity
 * provider's token such as the bank's SSO for the wallet), an Idempotency-Key on every write (one per
 * call, kept across its retries), Retry-After (a 429 or 503 that names it is waited out and tried
 * again, at most twice), and the shared error shape `{error: {code, message, details}}`, thrown as an
 * ApiError whose `text` is the message for a person: Korean by code (messages.ts), English for
 * English readers.
 */
import type { z } from 'zod';
import type { Declared } from '../../src/hub/declare.js';
import type { AuthRoutes } from '../../src/auth/routes.js';
import type { ChatRoutes } from '../../src/chat/routes.js';
import type { CollabRoutes } from '../../src/collab/routes.js';
import type { CoachRoutes } from '../../src/coach/routes.js';
import type { ConsoleRoutes } from '../../src/console/routes.js';
import type { DemoRoutes } from '../../src/demo/routes.js';
import type { RentalRoutes } from '../../src/rental/routes.js';
import type { RewardRoutes } from '../../src/reward/routes.js';
import type { TicketRoutes } from '../../src/ticket/routes.js';
import type { TradingRoutes } from '../../src/trading/routes.js';
import type { PaymentRoutes } from './payment-routes.js';
import { messageFor, type Lang } from './messages.js';

// ---- the route tables, as types ------------------------------------------------------------------

type Each<T> = T[keyof T];
/** Every route a page may call: the services' tables, mounted under their prefixes. */
export type HubRoutes =
  | Each<AuthRoutes>
  | Each<ChatRoutes>
  | Each<CoachRoutes>
  | Each<CollabRoutes>
  | Each<ConsoleRoutes>
  | Each<DemoRoutes>
  | Each<RentalRoutes>
  | Each<RewardRoutes>
  | Each<TicketRoutes>
  | Each<TradingRoutes>
  | Each<PaymentRoutes>;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Schemas<R> = R extends { readonly __schemas?: infer S } ? NonNullable<S> : never;

/** The route declared for `method` and `path` in the table `R`. */
export type RouteOf<R, M extends Method, P extends string> = R extends Declared<M, P> ? R : never;
/** The paths declared for a method. */
export type PathOf<R, M extends Method> = R extends Declared<M, infer P> ? P : never;

/** `:name` segments of a path pattern. */
type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}` ? Name | ParamNames<`/${Rest}`> : P extends `${string}:${infer Name}` ? Name : never;

type Known<T> = unknown extends T ? never : T;
/** A query's keys as the route declares them; values as text or numbers (the hub reads query text). */
type QueryIn<S> = S extends { query: infer QS extends z.ZodType } ? (Known<z.input<QS>> extends never ? never : { [K in keyof z.input<QS>]?: string | number | boolean | undefined }) : never;
type BodyIn<S> = S extends { body: infer BS extends z.ZodType } ? z.input<BS> : never;

/** The JSON answer of a route: its declared response (a bare schema, or the schemas by status). */
export type AnswerOf<R> = Schemas<R> extends { response: infer A }
  ? A extends z.ZodType
    ? z.output<A>
    : A extends Record<number, z.ZodType>
      ? z.output<A[keyof A]>
      : unknown
  : unknown;

/** What a call takes besides method and path: the parameters its path names, its query and body. */
export type CallInput<R, P extends string> = ([ParamNames<P>] extends [never] ? { params?: undefined } : { params: Record<ParamNames<P>, string> }) &
  ([QueryIn<Schemas<R>>] extends [never] ? { query?: undefined } : { query?: QueryIn<Schemas<R>> }) &
  ([BodyIn<Schemas<R>>] extends [never]
    ? { body?: undefined }
    : undefined extends BodyIn<Schemas<R>>
      ? { body?: BodyIn<Schemas<R>> }
      : // a multipart form (routes that take files) stands for the JSON body
        { body: BodyIn<Schemas<R>>; form?: undefined } | { body?: undefined; form: FormData }) & {
    /** A multipart form instead of the JSON body (routes that take files). */
    form?: FormData;
    /** Keeps one Idempotency-Key across a person's own retries of the same action. */
    idempotencyKey?: string;
    signal?: AbortSignal;
    headers?: Record<string, string>;
    /** The request outlives the page (a leave sent as the page unloads; the browser's keepalive): never retried. */
    keepalive?: boolean;
    /**
     * `response()` only: the answer whatever its status, not thrown and not retried, for a caller
     * whose refusals are its results (the door scanner reads already_redeemed and its details).
     */
    answerAll?: boolean;
  };

type Args<R, M extends Method, P extends string> = {} extends CallInput<RouteOf<R, M, P>, P> ? [input?: CallInput<RouteOf<R, M, P>, P>] : [input: CallInput<RouteOf<R, M, P>, P>];

// ---- errors ----------------------------------------------------------------------------------------

/** The shared error shape, as thrown by the client (status 0: the hub could not be reached). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    /** The server's message (English). */
    readonly serverMessage: string,
    readonly details: unknown,
    /** The message for a person, in the page's language. */
    readonly text: string,
  ) {
    super(text);
    this.name = 'ApiError';
  }
  /** Field problems of a 400 invalid_body / invalid_query: field name -> message (for inline marks). */
  get fields(): Record<string, string> {
    const issues = (this.details as { issues?: { field: string; message: string }[] } | undefined)?.issues;
    return Object.fromEntries((issues ?? []).map((i) => [i.field, i.message]));
  }
}

// ---- the client ------------------------------------------------------------------------------------

export interface ClientOptions {
  /** The bearer token to send (undefined: none). Read at each call, so a sign-in takes effect at once. */
  token?: () => string | undefined;
  /** A 401 on a call that carried a token (the token it carried): that token is no longer good (the page shows its sign-in). */
  onUnauthorized?: (token: string) => void;
  /** The language of the messages (default: the page's `<html lang>`, Korean unless it is English). */
  lang?: Lang;
  /** Most seconds a Retry-After is waited out before the call gives up (default 10). */
  maxRetryAfterS?: number;
  /** The hub's origin (default: the page's own, paths stay relative). */
  base?: string;
}

export interface Client<R = HubRoutes> {
  get<P extends PathOf<R, 'GET'>>(path: P, ...args: Args<R, 'GET', P>): Promise<AnswerOf<RouteOf<R, 'GET', P>>>;
  post<P extends PathOf<R, 'POST'>>(path: P, ...args: Args<R, 'POST', P>): Promise<AnswerOf<RouteOf<R, 'POST', P>>>;
  put<P extends PathOf<R, 'PUT'>>(path: P, ...args: Args<R, 'PUT', P>): Promise<AnswerOf<RouteOf<R, 'PUT', P>>>;
  delete<P extends PathOf<R, 'DELETE'>>(path: P, ...args: Args<R, 'DELETE', P>): Promise<AnswerOf<RouteOf<R, 'DELETE', P>>>;
  /** The answer itself, for what is not JSON (a CSV, a file, an image): errors are thrown as for JSON. */
  response<M extends Method, P extends PathOf<R, M>>(method: M, path: P, ...args: Args<R, M, P>): Promise<Response>;
  /**
   * A form with files sent with upload progress (XMLHttpRequest, which reports it; fetch does not):
   * `onProgress` gets 0..1. The answer and errors as for JSON; no Retry-After retry (the person sends again).
   */
  upload<M extends 'POST' | 'PUT', P extends PathOf<R, M>>(
    method: M,
    path: P,
    input: CallInput<RouteOf<R, M, P>, P> & { form: FormData; onProgress?: (share: number) => void },
  ): Promise<AnswerOf<RouteOf<R, M, P>>>;
  /** The address a call would use (for an <img>, a link, an EventSource). */
  url<M extends Method, P extends PathOf<R, M>>(method: M, path: P, ...args: Args<R, M, P>): string;
}

type AnyInput = { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown; form?: FormData; idempotencyKey?: string; signal?: AbortSignal; headers?: Record<string, string>; keepalive?: boolean; answerAll?: boolean };

/** The page's language for messages: English only when the document says so. */
export function pageLang(): Lang {
  return typeof document !== 'undefined' && document.documentElement.lang.toLowerCase().startsWith('en') ? 'en' : 'ko';
}

function address(path: string, input: AnyInput = {}): string {
  // a pattern's :name segments are filled from params; a path given without params is taken as it is
  const filled = !input.params ? path : path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_, name: string) => {
    const v = input.params?.[name];
    if (v === undefined) throw new Error(`no value for :${name} in ${path}`);
    return encodeURIComponent(v);
  });
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(input.query ?? {})) if (v !== undefined && v !== null && v !== '') q.append(k, String(v));
  const s = q.toString();
  return s ? `${filled}?${s}` : filled;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function newKey(): string {
  return typeof crypto !== 'undefined' && 'randomUUID' in crypto ? crypto.randomUUID() : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/** The one place a page's request leaves the browser. */
export function network(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  return fetch(input, init);
}

export function createClient<R = HubRoutes>(opts: ClientOptions = {}): Client<R> {
  const lang = () => opts.lang ?? pageLang();
  const maxWait = opts.maxRetryAfterS ?? 10;

  async function toError(res: Response): Promise<ApiError> {
    let body: { error?: { code?: string; message?: string; details?: unknown } } | undefined;
    try {
      body = (await res.json()) as typeof body;
    } catch {
      body = undefined;
    }
    const code = body?.error?.code ?? `http_${res.status}`;
    const message = body?.error?.message ?? res.statusText ?? String(res.status);
    return new ApiError(res.status, code, message, body?.error?.details, messageFor(code, message, lang(), res.status));
  }

  const base = (opts.base ?? '').replace(/\/+$/, '');
  async function send(method: Method, path: string, input: AnyInput = {}): Promise<Response> {
    const url = base + address(path, input);
    const headers: Record<string, string> = { accept: 'application/json', ...(input.headers ?? {}) };
    const token = opts.token?.();
    if (token) headers.authorization = `Bearer ${token}`;
    let body: BodyInit | undefined;
    if (input.form) body = input.form;
    else if (input.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(input.body);
    }
    // every write carries a key: a route that declares idempotency runs it once, the others ignore it
    if (method !== 'GET') headers['idempotency-key'] = input.idempotencyKey ?? newKey();
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await network(url, { method, headers, body, signal: input.signal, redirect: 'follow', ...(input.keepalive ? { keepalive: true } : {}) });
      } catch (err) {
        if (input.signal?.aborted) throw err;
        // nothing came back: a read is tried again once; a write is not (its key keeps a retry safe, the person decides)
        if (method === 'GET' && attempt === 0 && !input.keepalive) {
          await sleep(500);
          continue;
        }
        throw new ApiError(0, 'network', (err as Error).message, undefined, messageFor('network', (err as Error).message, lang(), 0));
      }
      if (input.answerAll) {
        if (res.status === 401 && token) opts.onUnauthorized?.(token);
        return res;
      }
      const after = Number(res.headers.get('retry-after'));
      if ((res.status === 429 || res.status === 503) && res.headers.has('retry-after') && Number.isFinite(after) && after <= maxWait && attempt < 2 && !input.keepalive) {
        await sleep(Math.max(after, 0.2) * 1000);
        continue;
      }
      if (res.status === 401 && token) opts.onUnauthorized?.(token);
      if (!res.ok) throw await toError(res);
      return res;
    }
  }

  async function json(method: Method, path: string, input?: AnyInput): Promise<any> {
    const res = await send(method, path, input);
    if (res.status === 204) return undefined;
    const text = await res.text();
    return text ? JSON.parse(text) : undefined;
  }

  function upload(method: Method, path: string, input: AnyInput & { onProgress?: (share: number) => void }): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(method, base + address(path, input));
      xhr.setRequestHeader('accept', 'application/json');
      const token = opts.token?.();
      if (token) xhr.setRequestHeader('authorization', `Bearer ${token}`);
      xhr.setRequestHeader('idempotency-key', input.idempotencyKey ?? newKey());
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable) input.onProgress?.(e.loaded / e.total);
      };
      xhr.onload = () => {
        let body: any;
        try {
          body = xhr.responseText ? JSON.parse(xhr.responseText) : undefined;
        } catch {
          body = undefined;
        }
        if (xhr.status >= 200 && xhr.status < 300) return resolve(body);
        if (xhr.status === 401 && token) opts.onUnauthorized?.(token);
        const code = body?.error?.code ?? `http_${xhr.status}`;
        const message = body?.error?.message ?? String(xhr.status);
        reject(new ApiError(xhr.status, code, message, body?.error?.details, messageFor(code, message, lang(), xhr.status)));
      };
      xhr.onerror = () => reject(new ApiError(0, 'network', 'network error', undefined, messageFor('network', 'network error', lang(), 0)));
      xhr.send(input.form ?? null);
    });
  }

  return {
    upload: (method, path, input) => upload(method, path, input as AnyInput),
    get: (path, ...args) => json('GET', path, args[0] as AnyInput),
    post: (path, ...args) => json('POST', path, args[0] as AnyInput),
    put: (path, ...args) => json('PUT', path, args[0] as AnyInput),
    delete: (path, ...args) => json('DELETE', path, args[0] as AnyInput),
    response: (method, path, ...args) => send(method, path, args[0] as AnyInput),
    url: (_method, path, ...args) => base + address(path, args[0] as AnyInput),
  } as Client<R>;
}

/** A client without a token: public routes (the rental form, a ticket, the demo). */
export const publicApi = createClient();

/** The message for a person of anything a call threw. */
export function problemText(err: unknown): string {
  if (err instanceof ApiError) return err.text;
  return messageFor('network', err instanceof Error ? err.message : String(err), pageLang(), 0);
}

/** The answer of a hub route, by method and path: a page names a wire type so, never writes it again. */
export type Answer<M extends Method, P extends PathOf<HubRoutes, M>> = AnswerOf<RouteOf<HubRoutes, M, P>>;

/** What a hub route takes as its JSON body (its schema's input), by method and path. */
export type Body<M extends Method, P extends PathOf<HubRoutes, M>> = BodyIn<Schemas<RouteOf<HubRoutes, M, P>>>;
