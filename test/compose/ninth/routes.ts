import { z } from 'zod';
import type { Bus } from '../../../src/bus.js';
import type { Hub } from '../../../src/hub/declare.js';

/** The ninth service's topic: one per channel, anyone may listen. */
export const NEWS_TOPIC = 'ninth:news';

/** The ninth service's routes and topic, declared as every service declares them. */
export function registerNinthRoutes(hub: Hub, deps: { bus: Bus; outboxReady: boolean }): void {
  hub.topic({ name: 'ninth:*', policy: 'drop', authorize: (topic) => (topic === NEWS_TOPIC ? 'ok' : 'unknown') });
  hub.route({
    method: 'GET',
    path: '/api/ninth/hello',
    summary: 'Says hello, and whether the port it needs was built',
    response: z.object({ hello: z.string(), outbox: z.boolean() }),
    handler: () => ({ hello: 'ninth', outbox: deps.outboxReady }),
  });
  hub.route({
    method: 'POST',
    path: '/api/ninth/news',
    summary: 'Publishes a line on the news topic',
    body: { schema: z.object({ line: z.string().min(1).max(100) }) },
    response: z.object({ delivered: z.number() }),
    handler: async (ctx) => ({ delivered: await deps.bus.publish(NEWS_TOPIC, { line: ctx.body.line }) }),
  });
}
