import { z } from 'zod';
import { forbidden } from '../errors.js';
import { appearsWithin, attachment, Reply, type Hub, type RequestContext, type RouteDef } from '../hub/declare.js';
import { exportHtml } from './export.js';
import { CATEGORY_RE, LIST_TOPIC, SLUG_RE, type CollabService, type Editor } from './service.js';
import { collabResponses as R } from './schemas.js';

/**
 * Routes of the document collaboration service (docs/collab.md "Routes"). The four of the spec
 * (POST /api/md/lock, POST /api/md/unlock, GET /api/md/lock/:slug, GET /api/md/stats) plus save,
 * list, get, delete, search, history, version, restore and presence. Live channel: WebSocket
 * topics `md:<slug>` and `md:all` on /ws; Yjs co-editing on /yjs/<slug>.
 *
 * Reading is open (documents, list, search, history, lock state, statistics, presence list, the
 * list's stream); every write (save, delete, restore, lock, unlock, presence) and live co-editing
 * need a signed-in editor (the operator passes every role check). The identity is the author, the
 * lock holder and the presence name: the body names nobody.
 */

/** The credential of every write and of /yjs/:slug. */
export const EDITOR = { roles: ['editor'] };

const slug = z.string().regex(SLUG_RE, 'a slug is 1-80 of a-z 0-9 한글 _ - (no path characters)');
const slugParams = z.object({ slug });
const presenceId = z.string().regex(/^[a-f0-9]{16}$/);

/** The caller as the service sees it (the route declares `auth`, so there is one). */
const editorOf = (ctx: RequestContext<any, any, any>): Editor => {
  const p = ctx.identity!;
  return { id: p.id, name: p.name, operator: p.roles.includes('operator') };
};

/** How long a subscription to a document that is neither saved nor being written waits for it. */
export const MD_TOPIC_WAIT_MS = 10_000;

/**
 * "The document service is version 5.0" (the interface document): every answer of its routes,
 * errors included, says so in `X-Service-Version` (no version segment in any path; docs/collab.md).
 */
export const MD_SERVICE_VERSION = '5.0';
const VERSION_HEADERS = { 'x-service-version': MD_SERVICE_VERSION } as const;

export function registerCollabRoutes(hub: Hub, opts: { service: CollabService }): void {
  const { service } = opts;
  const route = <Q, B, P>(def: RouteDef<Q, B, P>) => hub.route({ ...def, headers: VERSION_HEADERS });
  hub.topic({
    name: 'md:*',
    policy: 'drop',
    history: 200,
    // the list, or one document: saved, or being written before its first save (someone is
    // present on it). A well-formed slug of neither is subscribed for MD_TOPIC_WAIT_MS, in case it
    // is about to be (a page that watches a room before joining it), then ended with unknown_topic
    // (docs/collab.md, "Live channel")
    authorize: async (topic) => {
      if (topic === LIST_TOPIC) return 'ok';
      const slug = topic.slice('md:'.length);
      if (!SLUG_RE.test(slug)) return 'unknown';
      const exists = async () => !!(await service.find(slug)) || (await service.presence.peers(slug)).length > 0;
      if (await exists()) return 'ok';
      return { pending: appearsWithin(exists, MD_TOPIC_WAIT_MS, 1000) };
    },
  });

  const saveBody = z.strictObject({
    slug,
    content: z.string(),
    category: z.string().trim().regex(CATEGORY_RE).optional(),
    title: z.string().trim().min(1).max(200).optional(),
    baseVersion: z.number().int().min(0).optional(),
  });

  route({
    method: 'POST',
    path: '/api/md/save',
    auth: EDITOR,
    response: R.save,
    // room for JSON escaping of a document at the limit; the exact limit is checked on the content
    body: { schema: saveBody, limit: service.maxBytes * 6 + 4096 },
    handler: async (ctx) => {
      const out = await service.save({ ...ctx.body, editor: editorOf(ctx), origin: 'http' });
      return { ok: true, changed: out.changed, doc: out.doc };
    },
  });
  route({
    method: 'GET',
    path: '/api/md/docs',
    response: R.list,
    cacheControl: 'no-store',
    query: z.object({ category: z.string().max(40).optional() }),
    handler: (ctx) => service.list(ctx.query.category),
  });
  route({ method: 'GET', path: '/api/md/doc/:slug', response: R.doc, cacheControl: 'no-store', params: slugParams, handler: async (ctx) => ({ doc: await service.get(ctx.params.slug) }) });
  route({
    method: 'POST',
    path: '/api/md/delete',
    auth: EDITOR,
    response: R.deleted,
    body: { schema: z.strictObject({ slug }) },
    handler: (ctx) => service.remove(ctx.body.slug, editorOf(ctx)),
  });
  route({
    method: 'GET',
    path: '/api/md/search',
    response: R.search,
    cacheControl: 'no-store',
    query: z.object({ q: z.string().trim().min(1).max(200), category: z.string().max(40).optional() }),
    handler: async (ctx) => ({ q: ctx.query.q, results: await service.search(ctx.query.q, ctx.query.category) }),
  });
  route({ method: 'GET', path: '/api/md/history/:slug', response: R.history, cacheControl: 'no-store', params: slugParams, handler: (ctx) => service.history(ctx.params.slug) });
  route({
    method: 'GET',
    path: '/api/md/history/:slug/:version',
    response: R.version,
    cacheControl: 'no-store',
    params: z.object({ slug, version: z.coerce.number().int().min(1) }),
    handler: async (ctx) => ({ slug: ctx.params.slug, version: await service.version(ctx.params.slug, ctx.params.version) }),
  });
  route({
    method: 'GET',
    path: '/api/md/export/:slug',
    summary: 'A version of a document as its markdown or as one standalone, sanitised HTML file (an attachment)',
    cacheControl: 'no-store',
    params: slugParams,
    query: z.object({ format: z.enum(['md', 'html']).default('md'), version: z.coerce.number().int().min(1).optional() }),
    response: { 200: z.string().describe('text/markdown or text/html (attachment)') },
    handler: async (ctx) => {
      const slug = ctx.params.slug;
      const doc = await service.get(slug);
      const v = ctx.query.version === undefined || ctx.query.version === doc.version ? doc : await service.version(slug, ctx.query.version);
      const version = 'version' in v ? v.version : doc.version;
      const headers = { 'content-disposition': attachment(`${slug}-v${version}.${ctx.query.format}`) };
      if (ctx.query.format === 'md') return Reply.text(v.content, 'text/markdown; charset=utf-8').withHeaders(headers);
      return Reply.text(exportHtml({ slug, title: v.title, version, modified: v.modified, author: v.author, content: v.content }), 'text/html; charset=utf-8').withHeaders(headers);
    },
  });
  route({
    method: 'POST',
    path: '/api/md/restore',
    auth: EDITOR,
    response: R.restore,
    body: { schema: z.strictObject({ slug, version: z.number().int().min(1) }) },
    handler: async (ctx) => {
      const out = await service.restore(ctx.body.slug, ctx.body.version, editorOf(ctx));
      return { ok: true, changed: out.changed, restored_from: ctx.body.version, doc: out.doc };
    },
  });

  // the four routes of the spec
  route({
    method: 'POST',
    path: '/api/md/lock',
    auth: EDITOR,
    response: R.lock,
    // the interface document's request "identifies the document and holder": `holder`, when given,
    // names the signed-in identity (its account id); any other holder is 403 (docs/collab.md)
    body: { schema: z.strictObject({ slug, holder: z.string().min(1).max(64).optional() }) },
    handler: (ctx) => {
      const who = editorOf(ctx);
      if (ctx.body.holder !== undefined && ctx.body.holder !== who.id) {
        throw forbidden(`holder ${ctx.body.holder} is not the signed-in identity; a lock is held by whoever asks for it`, { holder: ctx.body.holder, identity: who.id });
      }
      return service.locks.lock(ctx.body.slug, who);
    },
  });
  route({
    method: 'POST',
    path: '/api/md/unlock',
    auth: EDITOR,
    response: R.lock,
    body: { schema: z.strictObject({ slug }) },
    handler: (ctx) => service.locks.unlock(ctx.body.slug, editorOf(ctx)),
  });
  route({ method: 'GET', path: '/api/md/lock/:slug', response: R.lock, cacheControl: 'no-store', params: slugParams, handler: (ctx) => service.locks.state(ctx.params.slug) });
  route({ method: 'GET', path: '/api/md/stats', response: R.stats, cacheControl: 'no-store', handler: () => service.stats() });

  // presence: join / heartbeat every 15 s, leave; dead peers expire after 30 s
  route({
    method: 'POST',
    path: '/api/md/presence',
    auth: EDITOR,
    response: R.presence,
    body: { schema: z.strictObject({ slug, id: presenceId.optional() }) },
    handler: (ctx) => service.presence.join(ctx.body.slug, editorOf(ctx), ctx.body.id),
  });
  route({
    method: 'POST',
    path: '/api/md/presence/leave',
    auth: EDITOR,
    response: R.left,
    body: { schema: z.strictObject({ slug, id: presenceId }) },
    handler: (ctx) => service.presence.leave(ctx.body.slug, editorOf(ctx), ctx.body.id),
  });
  route({ method: 'GET', path: '/api/md/presence/:slug', response: R.peers, cacheControl: 'no-store', params: slugParams, handler: async (ctx) => ({ peers: await service.presence.peers(ctx.params.slug) }) });

  // the document list's events as Server-Sent Events, resumable with Last-Event-ID from the Bus history
  hub.sse({ path: '/api/md/stream', topics: [LIST_TOPIC], history: 200 });

  hub.page('/docs', '/docs.html', {
    title: 'Documents',
    description: 'Markdown documents: live co-editing, presence, locks, history, search, statistics and presentation mode',
  });
}
