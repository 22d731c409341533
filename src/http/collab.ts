import { z } from 'zod';
import type { Hub } from '../hub/index.js';
import { CATEGORY_RE, LIST_TOPIC, SLUG_RE, type CollabService } from '../collab/service.js';
import { collabResponses as R } from './collab-schemas.js';

/**
 * Routes of the document collaboration service (docs/collab.md "Routes"). The four of the spec
 * (POST /api/md/lock, POST /api/md/unlock, GET /api/md/lock/:slug, GET /api/md/stats) plus save,
 * list, get, delete, search, history, version, restore and presence. Live channel: WebSocket
 * topics `md:<slug>` and `md:all` on /ws; Yjs co-editing on /yjs/<slug>.
 */

const slug = z.string().regex(SLUG_RE, 'a slug is 1-80 of a-z 0-9 한글 _ - (no path characters)');
const name = z.string().trim().min(1).max(40);
const token = z.string().min(1).max(64);
const slugParams = z.object({ slug });

export function registerCollabRoutes(hub: Hub, opts: { service: CollabService }): void {
  const { service } = opts;
  hub.topic({ name: 'md:*', policy: 'drop', history: 200 });

  const saveBody = z.strictObject({
    slug,
    content: z.string(),
    category: z.string().trim().regex(CATEGORY_RE).optional(),
    title: z.string().trim().min(1).max(200).optional(),
    baseVersion: z.number().int().min(0).optional(),
    author: name.optional(),
    lockToken: token.optional(),
  });

  hub.route({
    method: 'POST',
    path: '/api/md/save',
    response: R.save,
    // room for JSON escaping of a document at the limit; the exact limit is checked on the content
    body: { schema: saveBody, limit: service.maxBytes * 6 + 4096 },
    handler: async (ctx) => {
      const out = await service.save({ ...ctx.body, origin: 'http' });
      return { ok: true, changed: out.changed, doc: out.doc };
    },
  });
  hub.route({
    method: 'GET',
    path: '/api/md/docs',
    response: R.list,
    cacheControl: 'no-store',
    query: z.object({ category: z.string().max(40).optional() }),
    handler: (ctx) => service.list(ctx.query.category),
  });
  hub.route({ method: 'GET', path: '/api/md/doc/:slug', response: R.doc, cacheControl: 'no-store', params: slugParams, handler: async (ctx) => ({ doc: await service.get(ctx.params.slug) }) });
  hub.route({
    method: 'POST',
    path: '/api/md/delete',
    response: R.deleted,
    body: { schema: z.strictObject({ slug, lockToken: token.optional() }) },
    handler: (ctx) => service.remove(ctx.body.slug, ctx.body.lockToken),
  });
  hub.route({
    method: 'GET',
    path: '/api/md/search',
    response: R.search,
    cacheControl: 'no-store',
    query: z.object({ q: z.string().trim().min(1).max(200), category: z.string().max(40).optional() }),
    handler: async (ctx) => ({ q: ctx.query.q, results: await service.search(ctx.query.q, ctx.query.category) }),
  });
  hub.route({ method: 'GET', path: '/api/md/history/:slug', response: R.history, cacheControl: 'no-store', params: slugParams, handler: (ctx) => service.history(ctx.params.slug) });
  hub.route({
    method: 'GET',
    path: '/api/md/history/:slug/:version',
    response: R.version,
    cacheControl: 'no-store',
    params: z.object({ slug, version: z.coerce.number().int().min(1) }),
    handler: async (ctx) => ({ slug: ctx.params.slug, version: await service.version(ctx.params.slug, ctx.params.version) }),
  });
  hub.route({
    method: 'POST',
    path: '/api/md/restore',
    response: R.restore,
    body: { schema: z.strictObject({ slug, version: z.number().int().min(1), author: name.optional(), lockToken: token.optional() }) },
    handler: async (ctx) => {
      const out = await service.restore(ctx.body.slug, ctx.body.version, { author: ctx.body.author, lockToken: ctx.body.lockToken });
      return { ok: true, changed: out.changed, restored_from: ctx.body.version, doc: out.doc };
    },
  });

  // the four routes of the spec
  hub.route({
    method: 'POST',
    path: '/api/md/lock',
    response: R.lock,
    body: { schema: z.strictObject({ slug, holder: name, token: token.optional() }) },
    handler: (ctx) => service.lock(ctx.body.slug, ctx.body.holder, ctx.body.token),
  });
  hub.route({
    method: 'POST',
    path: '/api/md/unlock',
    response: R.lock,
    body: { schema: z.strictObject({ slug, token }) },
    handler: (ctx) => service.unlock(ctx.body.slug, ctx.body.token),
  });
  hub.route({ method: 'GET', path: '/api/md/lock/:slug', response: R.lock, cacheControl: 'no-store', params: slugParams, handler: (ctx) => service.lockState(ctx.params.slug) });
  hub.route({ method: 'GET', path: '/api/md/stats', response: R.stats, cacheControl: 'no-store', handler: () => service.stats() });

  // presence: join / heartbeat every 15 s, leave; dead peers expire after 30 s
  hub.route({
    method: 'POST',
    path: '/api/md/presence',
    response: R.presence,
    body: { schema: z.strictObject({ slug, name, id: z.string().regex(/^[a-f0-9]{16}$/).optional() }) },
    handler: (ctx) => service.presence(ctx.body.slug, ctx.body.name, ctx.body.id),
  });
  hub.route({
    method: 'POST',
    path: '/api/md/presence/leave',
    response: R.left,
    body: { schema: z.strictObject({ slug, id: z.string().regex(/^[a-f0-9]{16}$/) }) },
    handler: (ctx) => service.leave(ctx.body.slug, ctx.body.id),
  });
  hub.route({ method: 'GET', path: '/api/md/presence/:slug', response: R.peers, cacheControl: 'no-store', params: slugParams, handler: async (ctx) => ({ peers: await service.peers(ctx.params.slug) }) });

  // the document list's events as Server-Sent Events, resumable with Last-Event-ID from the Bus history
  hub.sse({ path: '/api/md/stream', topics: [LIST_TOPIC], history: 200 });

  hub.page('/docs', '/docs.html', {
    title: 'Documents',
    description: 'Markdown documents: live co-editing, presence, locks, history, search, statistics and presentation mode',
  });
}
