import { z } from 'zod';
import type { AuthSpec, ResponseSpec, RouteDef } from './http.js';

/**
 * The OpenAPI 3.1 document of a hub, generated from its route table with zod 4's JSON Schema
 * output: paths, parameters, request bodies, the declared success answers, the one error shape
 * and the statuses each route can answer with. SSE streams are GET operations answering
 * text/event-stream; the WebSocket endpoints (not expressible in OpenAPI) are described in words.
 */

export type { ResponseSpec };

/** What the generator needs of one registered route. */
export interface RouteEntry {
  method: string;
  path: string;
  kind: 'route' | 'sse' | 'page';
  /** The service that registered it (its tag in the document); the hub's own routes have none. */
  service?: string;
  def: Pick<RouteDef, 'query' | 'params' | 'body' | 'auth' | 'guards' | 'idempotency' | 'headers'> & { response?: ResponseSpec; summary?: string };
}

export interface ApiInfo {
  title: string;
  version: string;
  description: string;
  /** WebSocket endpoints and topics, described in words. */
  sockets: { path: string; description: string }[];
  topics: string[];
  /** Identity providers beside the hub's own tokens (name -> how their token is had). */
  identities?: Record<string, string>;
}

const isSchema = (v: unknown): v is z.ZodType => typeof v === 'object' && v !== null && '_zod' in v;

/** A response spec by status (a bare schema answers 200). */
export function responsesOf(spec: ResponseSpec | undefined): Map<number, z.ZodType> {
  const out = new Map<number, z.ZodType>();
  if (!spec) return out;
  if (isSchema(spec)) out.set(200, spec);
  else for (const [k, v] of Object.entries(spec)) out.set(Number(k), v);
  return out;
}

export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  try {
    const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
    return rest;
  } catch {
    return { description: 'not representable as JSON Schema' };
  }
}

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().describe('stable machine-readable code, e.g. invalid_body, not_found, rate_limited'),
      message: z.string().describe('human-readable explanation'),
      details: z.unknown().optional().describe('structured details (e.g. issues per field, retry_after_s)'),
    }),
  })
  .describe('The one error shape of every route');

const ERROR_TEXT: Record<number, string> = {
  400: 'Bad input: query, path parameters or body failed validation (code invalid_query, invalid_params, invalid_body, invalid_json), or a domain rule refused it',
  401: 'Missing, unknown, revoked or expired bearer token (code unauthorized; WWW-Authenticate: Bearer)',
  403: 'The identity lacks the role the route needs (code forbidden)',
  404: 'No such resource or route (code not_found or a domain code)',
  405: 'The path exists under other methods (code method_not_allowed; Allow header)',
  409: 'Conflict with the current state (domain code)',
  413: 'Body larger than the limit (code payload_too_large)',
  415: 'Unsupported Content-Type (code unsupported_media_type)',
  422: 'The Idempotency-Key was used with another request (code idempotency_key_reused)',
  429: 'Rate limited (code rate_limited; Retry-After)',
  500: 'Internal error (code internal; details.requestId)',
  503: 'Shutting down or a dependency is not reachable',
};

/** `/a/:b/*` -> `/a/{b}/{path}` */
export const openApiPath = (p: string) => p.replace(/:(\w+)/g, '{$1}').replace(/\/\*$/, '/{path}');

function parameters(e: RouteEntry): unknown[] {
  const out: unknown[] = [];
  const names = [...e.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const paramSchema = e.def.params ? jsonSchema(e.def.params, 'input') : undefined;
  const props = (paramSchema?.properties ?? {}) as Record<string, unknown>;
  for (const name of names) out.push({ name, in: 'path', required: true, schema: props[name] ?? { type: 'string' } });
  if (e.path.endsWith('/*')) out.push({ name: 'path', in: 'path', required: true, schema: { type: 'string' }, description: 'the rest of the path' });
  if (e.def.query) {
    const q = jsonSchema(e.def.query, 'input');
    const required = new Set((q.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((q.properties ?? {}) as Record<string, unknown>)) {
      out.push({ name, in: 'query', required: required.has(name), schema });
    }
  }
  if (e.def.idempotency) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: e.def.idempotency.key === 'required',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
      description:
        'The effect runs once per key (kept 24 hours, per caller): a retry with the same key and request replays the first answer (header Idempotent-Replayed: true); the same key with another request is 422 idempotency_key_reused; while the first request runs, 409 idempotency_in_progress.',
    });
  }
  return out;
}

function security(auth: AuthSpec | undefined): unknown[] | undefined {
  if (!auth) return undefined;
  const scheme = { [auth.provider ?? 'bearer']: [] };
  return auth.optional ? [{}, scheme] : [scheme];
}

function operation(e: RouteEntry): Record<string, unknown> {
  const op: Record<string, unknown> = { operationId: `${e.method.toLowerCase()} ${e.path}`, tags: [e.service ?? HUB_TAG] };
  if (e.def.summary) op.summary = e.def.summary;
  const params = parameters(e);
  if (params.length) op.parameters = params;
  const sec = security(e.def.auth);
  if (sec) op.security = sec;
  if (e.def.auth?.roles?.length) op.description = `Roles: ${e.def.auth.roles.join(', ')} (operator passes every role check).`;
  const responses: Record<string, unknown> = {};
  if (e.kind === 'sse') {
    responses['200'] = {
      description:
        'A Server-Sent Events stream. Events carry ids; a client that reconnects with Last-Event-ID (EventSource does) gets the events it missed first, or a `reset` event `{type: "reset", reason, position}` when they are no longer known (the client reloads what it shows).',
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    };
  } else if (e.kind === 'page') {
    responses['200'] = { description: 'An HTML page', content: { 'text/html': { schema: { type: 'string' } } } };
    responses['304'] = { description: 'Not modified (ETag)' };
  } else {
    const declared = responsesOf(e.def.response);
    for (const [status, schema] of declared) {
      responses[String(status)] = { description: 'Success', content: { 'application/json': { schema: jsonSchema(schema, 'output') } } };
    }
    if (declared.size === 0) responses['200'] = { description: 'Success (the response schema is not declared yet)' };
  }
  const errors = new Set([404, 500, 503]);
  if (e.def.query || e.def.params || e.def.body) errors.add(400);
  if (e.def.body) (errors.add(413), errors.add(415));
  if (e.def.auth) (errors.add(401), e.def.auth.roles?.length && errors.add(403));
  if (e.def.guards?.length) errors.add(429);
  if (e.def.idempotency) (errors.add(400), errors.add(409), errors.add(422));
  for (const s of [...errors].sort()) {
    responses[String(s)] = { description: ERROR_TEXT[s], content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  }
  const constant = e.def.headers;
  if (constant) {
    const headers = Object.fromEntries(Object.entries(constant).map(([k, v]) => [k, { schema: { type: 'string', const: v }, description: `always ${v}` }]));
    for (const r of Object.values(responses)) (r as { headers?: unknown }).headers = headers;
  }
  op.responses = responses;
  if (e.def.body) {
    const media = e.def.body.reader?.mediaTypes ?? ['application/json'];
    op.requestBody = {
      required: !e.def.body.optional,
      content: Object.fromEntries(media.map((m) => [m, { schema: jsonSchema(e.def.body!.schema, 'input') }])),
    };
  }
  return op;
}

/** The tag of the hub's own routes (health, metrics, this document, the page index). */
export const HUB_TAG = 'hub';

export function buildOpenApi(routes: readonly RouteEntry[], info: ApiInfo): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const tags: string[] = [];
  for (const e of routes) {
    const p = (paths[openApiPath(e.path)] ??= {});
    p[e.method.toLowerCase()] = operation(e);
    const tag = e.service ?? HUB_TAG;
    if (!tags.includes(tag)) tags.push(tag);
  }
  const sockets = info.sockets.map((s) => `- \`${s.path}\`: ${s.description}`).join('\n');
  const topics = info.topics.map((t) => `\`${t}\``).join(', ');
  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      description: `${info.description}\n\n## Errors\n\nEvery error answers \`{"error": {"code", "message", "details"?}}\` with the status named per operation.\n\n## WebSocket endpoints\n\n${sockets}\n\nTopics: ${topics || '(none)'}.`,
    },
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      schemas: { Error: jsonSchema(errorSchema, 'output') },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An opaque token from POST /api/auth/login (or a scanner device token)' },
        ...Object.fromEntries(Object.entries(info.identities ?? {}).map(([name, description]) => [name, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description }])),
      },
    },
  };
}
