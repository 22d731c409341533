import type { z } from 'zod';
import { AppError } from '../errors.js';
import type { IdemTicket, StoredAnswer } from '../idempotency.js';
import type { Json, Write } from '../store/port.js';
import type { MultipartOptions } from './multipart.js';
import type { StoredUpload, UploadedFile } from './upload-files.js';

/** What a handler sees. Built before any await, so nothing here touches the uWS request. */
export interface RequestContext<Q = unknown, B = unknown, P = unknown> {
  method: string;
  path: string;
  /** Route pattern that matched, e.g. /api/md/lock/:slug (metrics label). */
  route: string;
  query: Q;
  params: P;
  body: B;
  /** Request headers, lower-case names. */
  headers: Record<string, string>;
  requestId: string;
  /** The client address (resolved on first read; read it before the answer is written). */
  readonly remoteAddress: string;
  /** Set by guards (e.g. an authenticated principal). */
  state: Record<string, unknown>;
  /** The caller, when the route declares `auth` and a valid token was given. */
  identity?: Principal;
  /** The bearer token that caller presented (a logout revokes it). */
  token?: string;
  /**
   * Routes with `body.multipart`: the files of a multipart request, in temporary files the hub
   * deletes after the handler (move what you keep with BlobStore.putFile); [] for a JSON request.
   */
  files?: UploadedFile[];
  /**
   * Routes whose multipart declares `keep`: the request's files, inspected and stored by the hub
   * before the handler ([] for a JSON request). The handler's service records them or discards them.
   */
  stored?: StoredUpload[];
  /** Aborted when the client's connection closes before the answer is written. */
  readonly signal: AbortSignal;
  /** Routes that declare `idempotency`, when the request carries a key: see IdempotentRun. */
  idempotency?: IdempotentRun;
  /**
   * What guards undo when the hub could not serve the request (a 503: the store unreachable, a
   * failover): a rate limit takes back its count, so a client retrying as told is not refused later.
   */
  refunds?: (() => void)[];
  /**
   * Runs `f` once the request ends, however it ends: its answer is written, or its client went away
   * (an SSE route's request ends once its stream is open). After the end, at once.
   */
  atEnd?(f: () => void): void;
}

/**
 * A route's effect that runs once per Idempotency-Key (IETF draft; src/idempotency.ts, run by the
 * hub in src/hub/idempotent.ts): a retry with the same key and request replays the first answer.
 */
export interface IdempotencySpec {
  /** `required`: a request without the header is refused (400 idempotency_key_missing); `optional`: it runs as it comes. */
  key: 'required' | 'optional';
  /** Whose keys these are; default the signed-in caller's id, or `anon`. */
  scope?: (ctx: RequestContext<any, any, any>) => string;
  /** The store namespace of the keys; default `idem`. */
  namespace?: string;
  /** How a replayed answer is sent (default: as it was recorded, JSON unless it names its type). */
  present?: (answer: StoredAnswer, ctx: RequestContext<any, any, any>) => Reply;
}

/** What a handler of an idempotent route is given (ctx.idempotency). */
export interface IdempotentRun {
  /**
   * The writes that record this route's answer. Put them in the effect's own atomic update: the
   * effect and its answer then land together, so a retry after an answer lost on the way (a 503
   * whose write had landed) replays it and never runs the effect twice. A handler that does not
   * call it has its answer recorded by the hub after the effect, which leaves that window open.
   */
  finish(status: number, body: Json, headers?: Record<string, string>): Write[];
  /** The key's ticket, for a service that reads the key in its update and finishes with Idempotency.finishWrites. */
  ticket: IdemTicket;
}

/**
 * Who is calling, as the hub sees it: the identity model (src/auth) resolves a bearer token to
 * this. The hub only compares roles; it knows no role by name except the configured super role.
 */
export interface Principal {
  id: string;
  name: string;
  roles: readonly string[];
  /** 'account' (a person who signed in), 'device' (a scanner at a gate), or a kind of token added with Hub.tokenKind (e.g. 'md-link', a document's share link). */
  kind: string;
  /** Devices: the gate the device token was issued for. */
  gate?: string;
}

/** Resolves a bearer token to its principal, or undefined when the token is unknown or expired. */
export type Authenticator = (token: string) => Promise<Principal | undefined>;

/**
 * What a route needs from its caller. `roles` omitted: any signed-in identity; given: one of
 * them (the super role passes every check). `optional`: the route also serves callers without a
 * token (ctx.identity stays undefined); a token that is given must still be valid.
 */
export interface AuthSpec {
  roles?: readonly string[];
  optional?: boolean;
  /**
   * The identity provider that reads the credential (`hub.identityProvider`); omitted: the hub's own
   * tokens (`hub.authenticate`). Either way the handler learns who calls from ctx.identity alone.
   */
  provider?: string;
}

/**
 * A second source of identities beside the hub's own tokens, e.g. a bank's single sign-on JWT. It
 * resolves a bearer token to a principal, or throws an AppError (401 invalid_token, 503 when its keys
 * cannot be had): its refusals are its own.
 */
export interface IdentityProvider {
  /** Resolves a bearer token (never called without one). */
  authenticate(token: string): Promise<Principal>;
  /** Longest token it takes (default 512, the hub's own). */
  maxTokenLength?: number;
  /** What a caller without a token is told (401 unauthorized). */
  missing?: string;
  /** How /openapi.json describes its token. */
  description?: string;
}

/** A non-JSON or non-200 answer. Handlers may also return plain data, sent as JSON with 200. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: string | Buffer,
    readonly contentType: string,
    readonly headers: Record<string, string> = {},
  ) {}

  static json(data: unknown, status = 200, headers: Record<string, string> = {}): Reply {
    return new Reply(status, JSON.stringify(data), 'application/json; charset=utf-8', headers);
  }
  static html(body: string | Buffer, status = 200, headers: Record<string, string> = {}): Reply {
    return new Reply(status, body, 'text/html; charset=utf-8', headers);
  }
  static text(body: string, contentType = 'text/plain; charset=utf-8', status = 200): Reply {
    return new Reply(status, body, contentType);
  }
  static empty(status = 204, headers: Record<string, string> = {}): Reply {
    return new Reply(status, '', '', headers);
  }
  withHeaders(extra: Record<string, string>): Reply {
    return new Reply(this.status, this.body, this.contentType, { ...this.headers, ...extra });
  }
}

/**
 * A guard runs after parsing and before the handler: authentication, rate limits, idempotency keys.
 * It throws an AppError to refuse, or records what it learned in ctx.state.
 */
export type Guard = (ctx: RequestContext) => void | Promise<void>;

/** A body reader turns the raw bytes of a request into the value validated by the route's schema. */
export interface BodyReader {
  /** Accepted media types (without parameters); anything else is a 415. */
  mediaTypes: string[];
  parse(raw: Buffer, contentType: string): unknown;
}

/**
 * How deep a client's JSON may nest (objects and arrays inside each other). Every reader of JSON
 * that a client sends (request bodies, /ws frames) goes through parseClientJson, so no consumer
 * (the schemas, the Idempotency-Key's fingerprint, a canonical form) ever walks a deeper value.
 */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of `text` as JSON, counted without parsing; stops counting past `limit`. */
export function jsonDepthOver(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // a backslash: the next character is escaped
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > limit) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/** A client's JSON text, parsed: 400 invalid_json when it is not JSON, 400 json_too_deep past MAX_JSON_DEPTH. */
export function parseClientJson(text: string, what = 'request body'): unknown {
  if (jsonDepthOver(text, MAX_JSON_DEPTH)) {
    throw new AppError('invalid', 'json_too_deep', `the ${what} nests deeper than ${MAX_JSON_DEPTH} levels`, { max_depth: MAX_JSON_DEPTH });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('invalid', 'invalid_json', `${what} is not valid JSON`);
  }
}

export const jsonBody: BodyReader = {
  mediaTypes: ['application/json'],
  parse(raw) {
    if (raw.length === 0) return undefined;
    return parseClientJson(raw.toString('utf8'));
  },
};

export interface BodySpec<B> {
  schema: z.ZodType<B>;
  reader?: BodyReader;
  /** Bytes; default the hub's BODY_LIMIT. */
  limit?: number;
  /** When the request has no body at all, validate `undefined` instead of refusing with 415. */
  optional?: boolean;
  /**
   * Also accept multipart/form-data, streamed (src/hub/multipart.ts): the text fields are validated
   * by `schema` (as strings: coerce where needed), the files arrive in `ctx.files` (with `keep`:
   * inspected and stored, in `ctx.stored`).
   */
  multipart?: MultipartOptions;
}

/** A route's JSON answer by status; a bare schema answers 200. */
export type ResponseSpec = z.ZodType | { [status: number]: z.ZodType };

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteDef<Q = unknown, B = unknown, P = unknown> {
  method: Method;
  path: string;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  body?: BodySpec<B>;
  guards?: Guard[];
  /** The credential the route needs (checked before the guards); see AuthSpec. */
  auth?: AuthSpec;
  /** Cache-Control for successful answers; default no header (errors are always no-store). */
  cacheControl?: string;
  /**
   * Headers of every answer of the route, errors included (a service states its version so:
   * `{'x-service-version': '5.0'}`); shown on each response in /openapi.json.
   */
  headers?: Readonly<Record<string, string>>;
  /**
   * The JSON answer's schema (a bare schema: status 200; or by status, e.g. {201: schema}). It
   * documents the route in /openapi.json, and tests check the answers they receive against it.
   */
  response?: ResponseSpec;
  /** One line for the API reference. */
  summary?: string;
  /** The effect runs once per Idempotency-Key (IdempotencySpec). */
  idempotency?: IdempotencySpec;
  handler(ctx: RequestContext<Q, B, P>): unknown;
}

/**
 * Declares a route with its types inferred from the schemas. The declaration keeps its method, its
 * path and its schemas as types (a `Declared`), so a route table exported as data (hub.mount) tells
 * a page's client each call's input and answer (web/common/api.ts), the way Hono's `hc<typeof app>`
 * reads an app's type.
 */
export function route<
  const M extends Method,
  const Path extends string,
  QS extends z.ZodType = z.ZodType<Record<string, string>>,
  BS extends z.ZodType = z.ZodType<undefined, undefined>,
  PS extends z.ZodType = z.ZodType<Record<string, string>>,
  R extends ResponseSpec | undefined = undefined,
  I extends IdempotencySpec | undefined = undefined,
>(
  def: RouteDef<z.output<QS>, z.output<BS>, z.output<PS>> & {
    method: M;
    path: Path;
    query?: QS;
    params?: PS;
    body?: BodySpec<z.output<BS>> & { schema: BS };
    response?: R;
    idempotency?: I;
  },
): Declared<M, Path, QS, BS, PS, R, I> {
  return def as Declared<M, Path, QS, BS, PS, R, I>;
}

/**
 * A declared route as a type: what a client reads of it (method, path, the schemas of its query,
 * body, parameters and answers, whether it takes an Idempotency-Key) beside the route itself.
 */
export type Declared<
  M extends Method = Method,
  Path extends string = string,
  QS extends z.ZodType = z.ZodType,
  BS extends z.ZodType = z.ZodType,
  PS extends z.ZodType = z.ZodType,
  R extends ResponseSpec | undefined = ResponseSpec | undefined,
  I extends IdempotencySpec | undefined = IdempotencySpec | undefined,
> = RouteDef<any, any, any> & {
  method: M;
  path: Path;
  /** Types only: the schemas as declared (the route's own fields hold the same values). */
  readonly __schemas?: { query: QS; body: BS; params: PS; response: R; idempotency: I; multipart: boolean };
};

/** Routes as data, by name: what a service's routes.ts gives hub.mount and exports for its pages. */
export type RouteTable = Readonly<Record<string, Declared>>;

/** `path` under `prefix` (path `/` is the prefix itself), as a type. */
export type MountPath<Prefix extends string, Path extends string> = Path extends '/' ? Prefix : `${Prefix}${Path}`;

/** A route table as mounted under `prefix`: each route with its full path. */
export type Mounted<Prefix extends string, T extends RouteTable> = {
  [K in keyof T]: T[K] extends Declared<infer M, infer Path, infer QS, infer BS, infer PS, infer R, infer I> ? Declared<M, MountPath<Prefix, Path>, QS, BS, PS, R, I> : never;
};

/** Query string to a plain object; a repeated key gives an array. Throws 400 on bad encoding. */
export function parseQuery(raw: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (!raw) return out;
  let params: URLSearchParams;
  try {
    // URLSearchParams never throws on bad percent-encoding, so check it first
    decodeURIComponent(raw.replace(/\+/g, ' '));
    params = new URLSearchParams(raw);
  } catch {
    throw new AppError('invalid', 'invalid_query', 'the query string is not valid percent-encoding');
  }
  for (const [k, v] of params) {
    const prev = out[k];
    if (prev === undefined) out[k] = v;
    else if (Array.isArray(prev)) prev.push(v);
    else out[k] = [prev, v];
  }
  return out;
}

/** Runs a zod schema and turns its failure into a 400 that names every wrong field. */
export function validate<T>(schema: z.ZodType<T>, value: unknown, where: 'query' | 'body' | 'params'): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => ({
    field: i.path.length ? i.path.join('.') : where,
    message: i.message,
  }));
  const first = issues[0]!;
  throw new AppError('invalid', `invalid_${where}`, `${first.field}: ${first.message}`, { issues });
}

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** `Content-Disposition: attachment` with the original name (RFC 6266 / 5987) and an ASCII fallback. */
export function attachment(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
