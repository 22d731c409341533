import { z } from 'zod';
import type { RouteDef } from './http.js';
import { buildOpenApi, type RouteEntry } from './openapi.js';
import type { Topics } from './topics.js';

const WS_TOPICS =
  'JSON topics. Frames from the client: `{type: "auth", token}`, `{type: "subscribe", topic, since?: {offset, epoch}}`, `{type: "unsubscribe", topic}`, `{type: "ping"}`. From the hub: `{type: "subscribed", topic, position?, recovered?, reason?}`, `{type: "message", topic, data, offset?, epoch?}`, `{type: "error", code, message, topic?}`, `{type: "pong"}`. Topics with a history give every message its position; a client that resubscribes with `since` gets the missed messages right after `subscribed` (recovered: true), or `recovered: false` when they are no longer known (it reloads).';

const openApiDocument = z
  .object({ openapi: z.literal('3.1.0'), info: z.object({ title: z.string(), version: z.string() }).loose(), paths: z.record(z.string(), z.unknown()) })
  .loose();

/** The hub's route table for the API reference, and the GET /openapi.json route. */
export class ApiTable {
  private readonly entries: RouteEntry[] = [];
  private readonly sockets: { path: string; description: string }[] = [];
  private cached?: Record<string, unknown>;
  private service?: string;

  constructor(
    private readonly topics: Topics,
    private readonly identities: () => Record<string, string> = () => ({}),
  ) {}

  add(entry: RouteEntry): void {
    this.entries.push(this.service ? { ...entry, service: this.service } : entry);
    this.cached = undefined;
  }

  /** Routes added while `register` runs belong to `service` (the document's tag for them). */
  within(service: string, register: () => void): void {
    const before = this.service;
    this.service = service;
    try {
      register();
    } finally {
      this.service = before;
    }
  }

  markPage(path: string): void {
    const e = this.entries.find((x) => x.path === path && x.method === 'GET');
    if (e) e.kind = 'page';
  }

  socket(path: string, description: string): void {
    this.sockets.push({ path, description: path === '/ws' ? WS_TOPICS : description });
    this.cached = undefined;
  }

  /** Every registered HTTP route (routes, SSE streams, pages). */
  routes(): readonly RouteEntry[] {
    return this.entries;
  }

  document(): Record<string, unknown> {
    return (this.cached ??= buildOpenApi(this.entries, {
      title: 'maru',
      version: '0.1.0',
      description: 'One real-time hub: HTTP routes, Server-Sent Events and WebSocket topics for every service.',
      sockets: this.sockets,
      topics: this.topics.names(),
      identities: this.identities(),
    }));
  }

  install(hub: { route(def: RouteDef<any, any, any>): unknown }): void {
    hub.route({
      method: 'GET',
      path: '/openapi.json',
      summary: 'This API as an OpenAPI 3.1 document, generated from the route table',
      cacheControl: 'no-cache',
      response: openApiDocument,
      handler: () => this.document(),
    });
  }
}
