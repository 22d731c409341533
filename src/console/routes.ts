import { z } from 'zod';
import { route, CONNECTION_ID, type Hub } from '../hub/declare.js';
import type { ConsoleService } from './service.js';

/**
 * The console's routes (docs/console.md, docs/api.md "Console"): operator only, each with its
 * answer's schema. The page /console draws from GET /api/console/state and follows
 * GET /api/console/live.
 */

const OPERATOR = { roles: ['operator'] } as const;

/** An identity's id: an account name, a device id, a single-sign-on user. */
export const IDENTITY_RE = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
const identity = z.string().regex(IDENTITY_RE, 'an identity is 1-128 of A-Z a-z 0-9 . _ : @ - (starting with a letter or digit)');
const connectionId = z.string().regex(CONNECTION_ID, 'a connection id is <node>:ws:<n> or <node>:sse:<n> (node: 8 hex digits)');
const deliveryId = z.string().regex(/^[^\u0000-\u001f\u007f]{1,512}$/, 'a delivery id is 1-512 printable characters');

const connection = z.object({
  id: z.string(),
  kind: z.enum(['ws', 'sse']),
  endpoint: z.string(),
  user: z.string().nullable(),
  remote_address: z.string(),
  opened_at: z.string(),
  topics: z.array(z.string()),
});
const node = z.object({
  id: z.string(),
  process: z.string(),
  version: z.string(),
  node_version: z.string(),
  started_at: z.string(),
  uptime_s: z.number().int(),
  connections: z.object({ sockets: z.number().int(), streams: z.number().int() }),
  memory: z.object({ rss: z.number().int(), heap_used: z.number().int() }),
  topics: z.array(z.object({ topic: z.string(), subscribers: z.number().int(), presence: z.boolean() })),
  jobs: z.object({ admitted: z.number().int(), running: z.number().int(), waiting: z.number().int(), queue_max: z.number().int(), running_max: z.number().int() }),
  updated_at: z.number().int(),
});
const delivery = z.object({
  id: z.string(),
  dest: z.string(),
  attempts: z.number().int(),
  created_at: z.string(),
  due_at: z.string().nullable(),
  last_error: z.string().nullable(),
  held: z.boolean(),
});
export const consoleStateSchema = z.object({
  node: z.string().describe('the hub process that answered'),
  at: z.string(),
  nodes: z.array(node),
  topics: z.array(z.object({ topic: z.string(), subscribers: z.number().int(), presence: z.object({ clients: z.number().int(), users: z.number().int() }).nullable() })),
  queues: z.object({
    trading: z.array(z.object({ node: z.string(), admitted: z.number().int(), running: z.number().int(), waiting: z.number().int(), queue_max: z.number().int(), running_max: z.number().int() })),
    outbox: z.object({
      destinations: z.array(
        z.object({
          dest: z.string(),
          pending: z.number().int(),
          in_flight: z.number().int(),
          retrying: z.number().int(),
          held: z.number().int(),
          oldest_at: z.number().int().nullable(),
        }),
      ),
      waiting: z.array(delivery),
    }),
  }),
  store: z.object({
    kind: z.string(),
    role: z.string(),
    replicas: z.number().int(),
    min_replicas: z.number().int(),
    durability: z.string(),
    details: z.record(z.string(), z.string()),
  }),
});

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type ConsoleRoutes = ReturnType<typeof registerConsoleRoutes>;

export function registerConsoleRoutes(hub: Hub, opts: { service: ConsoleService; liveEveryMs: number }) {
  // the operators' payments back office: its calls are the relay's /api/token/ops/* routes
  hub.page('/payments', '/payments.html', {
    title: '결제 백오피스 · Payments back office',
    description: '운영자가 보류된 지급을 승인하거나 반려하고, 이체를 사유와 함께 되돌리고, 운영 계정 명세서와 일일 정산(차이 포함), 체인 경보를 봅니다.',
  });
  const { service } = opts;
  const getState = route({
    method: 'GET',
    path: '/state',
    summary: 'The live state of every hub process: nodes, topics, queues, the store (operator)',
    auth: OPERATOR,
    response: consoleStateSchema,
    cacheControl: 'no-store',
    handler: () => service.state(),
  });
  const getConnections = route({
    method: 'GET',
    path: '/connections',
    summary: "An identity's open WebSockets and SSE streams on every live hub process (operator)",
    auth: OPERATOR,
    query: z.strictObject({ user: identity }),
    response: z.object({ user: z.string(), connections: z.array(connection), missing: z.array(z.string()).describe('live processes that did not answer in time') }),
    cacheControl: 'no-store',
    handler: (ctx) => service.connectionsOf(ctx.query.user),
  });
  const postConnectionsByIdDisconnect = route({
    method: 'POST',
    path: '/connections/:id/disconnect',
    summary: 'Ends one connection on whichever hub process holds it (WebSocket close 4403; SSE `closed` event) (operator)',
    auth: OPERATOR,
    params: z.object({ id: connectionId }),
    response: z.object({ disconnected: z.array(connection) }),
    handler: (ctx) => service.disconnectConnection(ctx.params.id),
  });
  const postIdentitiesByUserDisconnect = route({
    method: 'POST',
    path: '/identities/:user/disconnect',
    summary: 'Ends every connection of an identity on every hub process; with revoke_tokens, revokes its tokens first (close 4401) (operator)',
    auth: OPERATOR,
    params: z.object({ user: identity }),
    body: { schema: z.strictObject({ revoke_tokens: z.boolean().default(false) }) },
    response: z.object({ user: z.string(), disconnected: z.array(connection), revoked_tokens: z.number().int().nullable(), missing: z.array(z.string()) }),
    handler: (ctx) => service.disconnectIdentity(ctx.params.user, ctx.body.revoke_tokens),
  });
  const postOutboxByIdRetry = route({
    method: 'POST',
    path: '/outbox/:id/retry',
    summary: 'Makes a waiting outbox delivery due now (operator)',
    auth: OPERATOR,
    params: z.object({ id: deliveryId }),
    response: z.object({ delivery }),
    handler: async (ctx) => ({ delivery: await service.retryDelivery(ctx.params.id) }),
  });
  hub.sse({
    path: '/api/console/live',
    auth: OPERATOR,
    open: (_ctx, stream) => {
      let busy = false;
      const send = async () => {
        if (busy || stream.closed) return;
        busy = true;
        try {
          stream.send({ event: 'state', data: await service.state() }, { droppable: true });
        } catch {
          stream.send({ event: 'unavailable', data: { error: { code: 'unavailable', message: 'the state could not be read; the next one follows' } } }, { droppable: true });
        } finally {
          busy = false;
        }
      };
      const timer = setInterval(() => void send(), opts.liveEveryMs);
      timer.unref();
      stream.onClose(() => clearInterval(timer));
      void send();
    },
  });
  return hub.mount('/api/console', {
    getState,
    getConnections,
    postConnectionsByIdDisconnect,
    postIdentitiesByUserDisconnect,
    postOutboxByIdRetry,
  });
}
