import { z } from 'zod';
import { AppError, forbidden, notFound } from '../errors.js';

const notFoundDoc = (slug: string) => notFound('unknown_document', `no document ${slug}`, { slug });
import { appearsWithin, attachment, Reply, route, type Hub, type RequestContext } from '../hub/declare.js';
import { exportHtml } from './export.js';
import { VISIBILITIES, viewerOf, type Viewer } from './access.js';
import { MAX_LINK_TTL_S } from './links.js';
import { MAX_COMMENT_CHARS, type AccountLookup, type Anchor } from './comments.js';
import { CATEGORY_RE, LIST_TOPIC, SLUG_RE, type CollabService, type Doc, type Editor } from './service.js';
import { collabResponses as R } from './schemas.js';
import { IMAGE_ID, imageIds, imagePath, type DocImages } from './images.js';

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

/** The credential of every write. */
export const EDITOR = { roles: ['editor'] };
/** Reading: open, but a credential that is given is read (a private document, a share link) and must be valid. */
const READER = { optional: true };

const slug = z.string().regex(SLUG_RE, 'a slug is 1-80 of a-z 0-9 한글 _ - (no path characters)');
const slugParams = z.object({ slug });
const presenceId = z.string().regex(/^[a-f0-9]{16}$/);

/** The caller as the service sees it (the route declares `auth`, so there is one). */
/** A document's answer: its access stays out of it (GET /api/md/access/:slug), its visibility in. */
const docView = (d: Doc) => {
  const { access, ...rest } = d;
  return { ...rest, visibility: access?.visibility ?? 'team' };
};

const editorOf = (ctx: RequestContext<any, any, any>): Editor => {
  const p = ctx.identity!;
  return { id: p.id, name: p.name, operator: p.roles.includes('operator') };
};

/** The caller as the access rules see it (access.ts); null: nobody signed in. */
const who = (ctx: RequestContext<any, any, any>): Viewer | null => viewerOf(ctx.identity) ?? null;
const viewer = (ctx: RequestContext<any, any, any>): Viewer | undefined => viewerOf(ctx.identity);

/** How long a subscription to a document that is neither saved nor being written waits for it. */
export const MD_TOPIC_WAIT_MS = 10_000;

/**
 * "The document service is version 5.0" (the interface document): every answer of its routes,
 * errors included, says so in `X-Service-Version` (no version segment in any path; docs/collab.md).
 */
export const MD_SERVICE_VERSION = '5.0';
const VERSION_HEADERS = { 'x-service-version': MD_SERVICE_VERSION } as const;

/** The live rooms' side of comment anchors (rooms.ts). */
export interface AnchorResolver {
  makeAnchor(slug: string, from: number, to: number): Promise<Anchor>;
  resolveAnchors(slug: string, anchors: Anchor[]): Promise<({ from: number; to: number; text: string; orphaned: false } | { orphaned: true })[]>;
}

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type CollabRoutes = ReturnType<typeof registerCollabRoutes>;

export function registerCollabRoutes(hub: Hub, opts: { service: CollabService; images: DocImages; anchors: AnchorResolver; accounts?: AccountLookup }) {
  const { service, images } = opts;
  /** Whether the list's channel may carry a message: not when it names a document that is private now. */
  const listMayCarry = (message: unknown) => {
    const s = (message as { slug?: unknown } | null)?.slug;
    return typeof s !== 'string' || !service.isPrivate(s);
  };
  hub.topic({
    name: 'md:*',
    policy: 'drop',
    history: 200,
    // the list, or one document: saved, or being written before its first save (someone is
    // present on it). A well-formed slug of neither is subscribed for MD_TOPIC_WAIT_MS, in case it
    // is about to be (a page that watches a room before joining it), then ended with unknown_topic
    // (docs/collab.md, "Live channel")
    authorize: async (topic, identity) => {
      if (topic === LIST_TOPIC) return 'ok';
      const slug = topic.slice('md:'.length);
      if (!SLUG_RE.test(slug)) return 'unknown';
      // a document's topic is for those who may read it (access.ts)
      const can = await service.rightsOf(slug, viewerOf(identity));
      if (!can.read) return identity ? 'forbidden' : 'unauthorized';
      const exists = async () => !!(await service.find(slug)) || (await service.presence.peers(slug)).length > 0;
      if (await exists()) return 'ok';
      return { pending: appearsWithin(exists, MD_TOPIC_WAIT_MS, 1000) };
    },
    // the list's history was published while its documents were readable to all: a recovery
    // (`since`) leaves out what it says of a document that is private now
    replay: (topic, message) => topic !== LIST_TOPIC || listMayCarry(message),
  });

  const saveBody = z.strictObject({
    slug,
    content: z.string(),
    category: z.string().trim().regex(CATEGORY_RE).optional(),
    title: z.string().trim().min(1).max(200).optional(),
    baseVersion: z.number().int().min(0).optional(),
    visibility: z.enum(VISIBILITIES).optional().describe('of a document this save creates (default team); ignored afterwards'),
  });

  const saveDoc = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/save',
    auth: EDITOR,
    response: R.save,
    // room for JSON escaping of a document at the limit; the exact limit is checked on the content
    body: { schema: saveBody, limit: service.maxBytes * 6 + 4096 },
    handler: async (ctx) => {
      const out = await service.save({ ...ctx.body, editor: editorOf(ctx), viewer: viewer(ctx), origin: 'http' });
      return { ok: true, changed: out.changed, doc: docView(out.doc) };
    },
  });
  const listDocs = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/docs',
    auth: READER,
    response: R.list,
    cacheControl: 'no-store',
    query: z.object({ category: z.string().max(40).optional() }),
    handler: (ctx) => service.list(ctx.query.category, who(ctx)),
  });
  const getDoc = route({ headers: VERSION_HEADERS, method: 'GET', path: '/doc/:slug', auth: READER, response: R.doc, cacheControl: 'no-store', params: slugParams, handler: async (ctx) => ({ doc: docView(await service.read(ctx.params.slug, viewer(ctx))) }) });
  const deleteDoc = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/delete',
    auth: EDITOR,
    response: R.deleted,
    body: { schema: z.strictObject({ slug }) },
    handler: (ctx) => service.remove(ctx.body.slug, editorOf(ctx), viewer(ctx)),
  });
  const searchDocs = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/search',
    auth: READER,
    response: R.search,
    cacheControl: 'no-store',
    query: z.object({ q: z.string().trim().min(1).max(200), category: z.string().max(40).optional() }),
    handler: async (ctx) => ({ q: ctx.query.q, results: await service.search(ctx.query.q, ctx.query.category, who(ctx)) }),
  });
  const getHistory = route({ headers: VERSION_HEADERS, method: 'GET', path: '/history/:slug', auth: READER, response: R.history, cacheControl: 'no-store', params: slugParams, handler: (ctx) => service.history(ctx.params.slug, who(ctx)) });
  const getVersion = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/history/:slug/:version',
    auth: READER,
    response: R.version,
    cacheControl: 'no-store',
    params: z.object({ slug, version: z.coerce.number().int().min(1) }),
    handler: async (ctx) => ({ slug: ctx.params.slug, version: await service.version(ctx.params.slug, ctx.params.version, who(ctx)) }),
  });
  const exportDoc = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/export/:slug',
    summary: 'A version of a document as its markdown or as one standalone, sanitised HTML file (an attachment)',
    cacheControl: 'no-store',
    auth: READER,
    params: slugParams,
    query: z.object({ format: z.enum(['md', 'html']).default('md'), version: z.coerce.number().int().min(1).optional() }),
    response: { 200: z.string().describe('text/markdown or text/html (attachment)') },
    handler: async (ctx) => {
      const slug = ctx.params.slug;
      const doc = await service.read(slug, viewer(ctx));
      const v = ctx.query.version === undefined || ctx.query.version === doc.version ? doc : await service.version(slug, ctx.query.version);
      const version = 'version' in v ? v.version : doc.version;
      const headers = { 'content-disposition': attachment(`${slug}-v${version}.${ctx.query.format}`) };
      if (ctx.query.format === 'md') return Reply.text(v.content, 'text/markdown; charset=utf-8').withHeaders(headers);
      // the document's own images travel inside the file (data: URLs): it opens anywhere, offline
      const inline = new Map<string, string>();
      for (const id of imageIds(v.content)) {
        const img = await images.read(slug, id).catch(() => undefined);
        if (img) inline.set(id, `data:${img.image.type};base64,${img.bytes.toString('base64')}`);
      }
      return Reply.text(exportHtml({ slug, title: v.title, version, modified: v.modified, author: v.author, content: v.content }, inline), 'text/html; charset=utf-8').withHeaders(headers);
    },
  });
  // images: uploaded through the hub's pipeline (multipart.keep: size, type by content, scan, blob
  // store) by someone who may write the document, served to whoever may read it (images.ts)
  const canWriteFirst = async (ctx: RequestContext<any, any, any>) => {
    // judged before the file is inspected or stored: a refusal stores nothing
    const s = (ctx.body as { slug: string }).slug;
    await service.assertCanWrite(s, viewer(ctx));
    // an image belongs to a saved document (it is served with that document's access)
    if (!(await service.find(s))) throw notFoundDoc(s);
  };
  const uploadImage = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/images',
    summary: 'Stores an image (PNG or JPEG, multipart field `image`) with a document; answers its address for the text',
    auth: EDITOR,
    response: { 201: R.image },
    body: { schema: z.strictObject({ slug }), multipart: { files: ['image'], fields: ['slug'], maxFields: 1, maxFileBytes: images.maxBytes, keep: images.keeper() } },
    guards: [canWriteFirst],
    handler: async (ctx) => {
      const file = ctx.stored?.[0];
      if (!file) throw new AppError('invalid', 'missing_file', 'the image comes as the multipart file field `image`', { field: 'image' });
      const img = await images.record(ctx.body.slug, file, editorOf(ctx).id);
      return Reply.json({ id: img.id, slug: img.slug, type: img.type, size: img.size, url: imagePath(img.slug, img.id) }, 201);
    },
  });
  const getImage = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/images/:slug/:id',
    summary: 'An image of a document, for whoever may read the document',
    auth: READER,
    params: z.object({ slug, id: z.string().regex(IMAGE_ID) }),
    response: { 200: z.string().describe('image/png or image/jpeg') },
    handler: async (ctx) => {
      // the document's own answer first: who may not read it gets the same refusal as for the document
      await service.read(ctx.params.slug, viewer(ctx));
      const { image, bytes } = await images.read(ctx.params.slug, ctx.params.id);
      return new Reply(200, bytes, image.type, { 'cache-control': 'private, max-age=3600' });
    },
  });
  const restore = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/restore',
    auth: EDITOR,
    response: R.restore,
    body: { schema: z.strictObject({ slug, version: z.number().int().min(1) }) },
    handler: async (ctx) => {
      const out = await service.restore(ctx.body.slug, ctx.body.version, editorOf(ctx), viewer(ctx));
      return { ok: true, changed: out.changed, restored_from: ctx.body.version, doc: docView(out.doc) };
    },
  });

  // the four routes of the spec
  const lock = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/lock',
    auth: EDITOR,
    response: R.lock,
    // the interface document's request "identifies the document and holder": `holder`, when given,
    // names the signed-in identity (its account id); any other holder is 403 (docs/collab.md)
    body: { schema: z.strictObject({ slug, holder: z.string().min(1).max(64).optional() }) },
    handler: async (ctx) => {
      const who = editorOf(ctx);
      if (ctx.body.holder !== undefined && ctx.body.holder !== who.id) {
        throw forbidden(`holder ${ctx.body.holder} is not the signed-in identity; a lock is held by whoever asks for it`, { holder: ctx.body.holder, identity: who.id });
      }
      await service.assertCanWrite(ctx.body.slug, viewer(ctx));
      return service.locks.lock(ctx.body.slug, who);
    },
  });
  const unlock = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/unlock',
    auth: EDITOR,
    response: R.lock,
    body: { schema: z.strictObject({ slug }) },
    handler: async (ctx) => {
      await service.assertCanWrite(ctx.body.slug, viewer(ctx));
      return service.locks.unlock(ctx.body.slug, editorOf(ctx));
    },
  });
  const lockState = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/lock/:slug',
    auth: READER,
    response: R.lock,
    cacheControl: 'no-store',
    params: slugParams,
    handler: async (ctx) => {
      await service.assertCanRead(ctx.params.slug, viewer(ctx));
      return service.locks.state(ctx.params.slug);
    },
  });
  const stats = route({ headers: VERSION_HEADERS, method: 'GET', path: '/stats', auth: READER, response: R.stats, cacheControl: 'no-store', handler: (ctx) => service.stats(who(ctx)) });

  // presence: join / heartbeat every 15 s, leave; dead peers expire after 30 s
  const presenceJoin = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/presence',
    auth: EDITOR,
    response: R.presence,
    body: { schema: z.strictObject({ slug, id: presenceId.optional() }) },
    // a reader sees who is here but does not appear as an editor: joining needs the right to write
    handler: async (ctx) => {
      await service.assertCanWrite(ctx.body.slug, viewer(ctx));
      return service.presence.join(ctx.body.slug, editorOf(ctx), ctx.body.id);
    },
  });
  const presenceLeave = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/presence/leave',
    auth: EDITOR,
    response: R.left,
    body: { schema: z.strictObject({ slug, id: presenceId }) },
    handler: (ctx) => service.presence.leave(ctx.body.slug, editorOf(ctx), ctx.body.id),
  });
  const presenceList = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/presence/:slug',
    auth: READER,
    response: R.peers,
    cacheControl: 'no-store',
    params: slugParams,
    handler: async (ctx) => {
      await service.assertCanRead(ctx.params.slug, viewer(ctx));
      return { peers: await service.presence.peers(ctx.params.slug) };
    },
  });

  // access per document: anyone who may read sees it; the owner or an operator changes it
  const names = z.array(z.string().trim().min(1).max(64)).max(50);
  const getAccess = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/access/:slug',
    summary: 'Who may read and write a document, and what the caller may do with it',
    auth: READER,
    response: R.access,
    cacheControl: 'no-store',
    params: slugParams,
    handler: (ctx) => service.access(ctx.params.slug, viewer(ctx)),
  });
  const setAccess = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/access',
    summary: 'Changes a document\'s visibility and its named editors and readers (owner or operator)',
    auth: EDITOR,
    response: R.accessSet,
    body: { schema: z.strictObject({ slug, visibility: z.enum(VISIBILITIES).optional(), editors: names.optional(), readers: names.optional(), owner: z.string().trim().min(1).max(64).optional() }) },
    handler: async (ctx) => {
      const { slug: s, ...change } = ctx.body;
      // the live rooms re-judge their peers (rooms.ts rejudge)
      return service.setAccess(s, change, viewer(ctx));
    },
  });

  // share links: the owner (or an operator) makes, lists and revokes them
  const makeLink = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/links',
    summary: 'Makes a share link that reads (or comments on) the document without an account',
    auth: EDITOR,
    response: { 201: R.linkMade },
    body: { schema: z.strictObject({ slug, role: z.enum(['read', 'comment']), expires_in_s: z.number().int().min(60).max(MAX_LINK_TTL_S).optional() }) },
    handler: async (ctx) => Reply.json(await service.links.create(ctx.body.slug, ctx.body, viewer(ctx)), 201),
  });
  const listLinks = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/links/:slug',
    summary: 'The live share links of a document (owner or operator)',
    auth: EDITOR,
    response: R.links,
    cacheControl: 'no-store',
    params: slugParams,
    handler: (ctx) => service.links.list(ctx.params.slug, viewer(ctx)),
  });
  const revokeLink = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/links/revoke',
    summary: 'Revokes a share link: it stops opening the document and the sessions it opened end',
    auth: EDITOR,
    response: R.linkRevoked,
    body: { schema: z.strictObject({ slug, id: z.string().regex(/^[a-f0-9]{16}$/) }) },
    handler: async (ctx) => {
      const out = await service.links.revoke(ctx.body.slug, ctx.body.id, viewer(ctx));
      await hub.recheckCredentials().catch(() => undefined);
      return out;
    },
  });

  // comments: anchored to a text range by Yjs relative positions, threaded, resolved and reopened
  const { anchors } = opts;
  const accounts: AccountLookup = opts.accounts ?? (async () => undefined);
  const body = z.string().trim().min(1).max(MAX_COMMENT_CHARS);
  const threadId = z.string().regex(/^[a-f0-9]{16}$/);
  const b64 = z.string().regex(/^[A-Za-z0-9+/]{2,400}={0,2}$/);
  const listComments = route({
    headers: VERSION_HEADERS,
    method: 'GET',
    path: '/comments/:slug',
    summary: 'The comment threads of a document, each anchor where its text is now (or orphaned)',
    auth: READER,
    response: R.comments,
    cacheControl: 'no-store',
    params: slugParams,
    handler: async (ctx) => {
      const slug = ctx.params.slug;
      await service.read(slug, viewer(ctx));
      const threads = await service.comments.list(slug);
      const at = await anchors.resolveAnchors(slug, threads.map((t) => t.anchor));
      return { slug, threads: threads.map((t, i) => ({ ...t, at: at[i]! })) };
    },
  });
  const comment = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/comments',
    summary: 'Comments on a range of the text: by character offsets, or by Yjs relative positions (base64)',
    auth: {},
    response: { 201: R.thread },
    body: {
      schema: z.strictObject({
        slug,
        body,
        range: z.union([
          z.strictObject({ from: z.number().int().min(0), to: z.number().int().min(1) }),
          z.strictObject({ start: b64, end: b64 }),
        ]),
      }),
    },
    handler: async (ctx) => {
      const { slug: s, range } = ctx.body;
      // judged before the anchor is made: a caller who may not comment learns nothing of the text
      const can = await service.rightsOf(s, viewer(ctx));
      if (!can.exists) throw notFoundDoc(s);
      if (!can.comment) throw new AppError('forbidden', can.read ? 'read_only' : 'forbidden', `you may not comment on ${s}`, { slug: s, needs: 'comment' });
      let anchor: Anchor;
      if ('from' in range) anchor = await anchors.makeAnchor(s, range.from, range.to);
      else {
        const [at] = await anchors.resolveAnchors(s, [{ start: range.start, end: range.end, quote: '' }]);
        if (!at || at.orphaned) throw new AppError('unprocessable', 'anchor_gone', 'the commented range is no longer in the text', { slug: s });
        anchor = { start: range.start, end: range.end, quote: at.text };
      }
      return Reply.json(await service.comments.create(s, { body: ctx.body.body, anchor }, viewer(ctx), accounts), 201);
    },
  });
  const reply = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/comments/reply',
    summary: 'Replies to a comment thread',
    auth: {},
    response: { 201: R.reply },
    body: { schema: z.strictObject({ slug, thread: threadId, body }) },
    handler: async (ctx) => Reply.json(await service.comments.reply(ctx.body.slug, ctx.body.thread, ctx.body.body, viewer(ctx), accounts), 201),
  });
  const resolve = route({
    headers: VERSION_HEADERS,
    method: 'POST',
    path: '/comments/resolve',
    summary: 'Resolves (resolved: true) or reopens (false) a comment thread',
    auth: {},
    response: R.thread,
    body: { schema: z.strictObject({ slug, thread: threadId, resolved: z.boolean() }) },
    handler: (ctx) => service.comments.resolve(ctx.body.slug, ctx.body.thread, ctx.body.resolved, viewer(ctx)),
  });


  const table = hub.mount('/api/md', {
    saveDoc,
    listDocs,
    getDoc,
    deleteDoc,
    searchDocs,
    getHistory,
    getVersion,
    exportDoc,
    uploadImage,
    getImage,
    restore,
    lock,
    unlock,
    lockState,
    stats,
    presenceJoin,
    presenceLeave,
    presenceList,
    getAccess,
    setAccess,
    makeLink,
    listLinks,
    revokeLink,
    listComments,
    comment,
    reply,
    resolve,
  });

  // the document list's events as Server-Sent Events, resumable with Last-Event-ID from the Bus
  // history (a private document's events are not on it); a share link's stream ends when it is revoked
  // (a private document's events are never published to it, and its past ones are not replayed)
  hub.sse({ path: '/api/md/stream', auth: READER, topics: [LIST_TOPIC], history: 200, filter: (m) => listMayCarry(m.message) });

  hub.page('/docs', '/docs.html', {
    title: 'Documents',
    description: '마크다운 문서: 실시간 공동 편집, 접속자 표시, 잠금, 변경 이력, 검색, 통계, 발표 모드',
  });
  return table;
}
