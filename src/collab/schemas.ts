import { z } from 'zod';

/** The answers of the document routes (docs/collab.md), as /openapi.json declares them. */

const ms = z.number().int().describe('milliseconds since the Unix epoch');
export const docSchema = z.object({
  slug: z.string(),
  category: z.string(),
  title: z.string(),
  content: z.string(),
  version: z.number().int().min(1),
  created: ms,
  modified: ms,
  author: z.string(),
  size: z.number().int().min(0).describe('bytes of UTF-8'),
  visibility: z.enum(['private', 'team', 'public']).optional().describe('who may read it (GET /api/md/access/:slug tells the rest)'),
});
const summary = docSchema.omit({ content: true, created: true, visibility: true });
const access = z.object({
  owner: z.string().optional().describe('the owner\'s account id (absent on documents stored before access existed)'),
  visibility: z.enum(['private', 'team', 'public']),
  editors: z.array(z.string()),
  readers: z.array(z.string()),
});
const link = z.object({ id: z.string(), role: z.enum(['read', 'comment']), created: ms, created_by: z.string(), expires_at: z.string().nullable() });
const versionMeta = z.object({
  version: z.number().int(),
  title: z.string(),
  category: z.string(),
  modified: ms,
  author: z.string(),
  size: z.number().int(),
  restored_from: z.number().int().optional(),
});
const peer = z.object({ id: z.string(), user: z.string().optional().describe('the identity id behind the entry'), name: z.string(), color: z.string(), joined: ms, seen: ms });
const iso = z.string().describe('ISO 8601 time');
/** Lock state (GET), lock and renewal (POST /lock), release or break (POST /unlock): docs/collab.md "Locks". */
const lockView = z.object({
  ok: z.literal(true).optional(),
  slug: z.string(),
  locked: z.boolean(),
  renewed: z.boolean().optional(),
  released: z.boolean().optional(),
  broken: z.boolean().optional().describe('an operator released someone else\'s lock'),
  holder: z.string().optional().describe('the holder\'s identity id'),
  holder_name: z.string().optional(),
  acquired_at: iso.optional(),
  expires_at: iso.optional(),
  expires: ms.optional(),
  remaining_ms: z.number().int().optional(),
  max_until: iso.optional().describe('renewals stop here (LOCK_MAX_MS after the acquisition)'),
});

const reply = z.object({ id: z.string(), author: z.string(), author_name: z.string(), created: ms, body: z.string(), mentions: z.array(z.string()) });
const thread = reply.extend({
  anchor: z.object({ start: z.string().describe('base64 Yjs relative position'), end: z.string(), quote: z.string().describe('the text when the comment was made') }),
  resolved: z.boolean(),
  resolved_by: z.string().optional(),
  resolved_at: ms.optional(),
  replies: z.array(reply),
});

export const collabResponses = {
  save: z.object({ ok: z.literal(true), changed: z.boolean(), doc: docSchema }),
  list: z.object({ docs: z.array(summary), categories: z.record(z.string(), z.number().int()) }),
  doc: z.object({ doc: docSchema }),
  deleted: z.object({ deleted: z.literal(true), slug: z.string() }),
  search: z.object({
    q: z.string(),
    results: z.array(
      z.object({ slug: z.string(), title: z.string(), category: z.string(), score: z.number(), title_match: z.boolean(), title_html: z.string(), snippet: z.string() }),
    ),
  }),
  history: z.object({ slug: z.string(), current: z.number().int(), versions: z.array(versionMeta) }),
  version: z.object({ slug: z.string(), version: versionMeta.extend({ content: z.string() }) }),
  restore: z.object({ ok: z.literal(true), changed: z.boolean(), restored_from: z.number().int(), doc: docSchema }),
  lock: lockView,
  presence: z.object({ id: z.string(), color: z.string(), peers: z.array(peer) }),
  left: z.object({ left: z.boolean() }),
  peers: z.object({ peers: z.array(peer) }),
  access: z.object({ slug: z.string(), access, can: z.object({ read: z.boolean(), comment: z.boolean(), write: z.boolean(), manage: z.boolean() }) }),
  accessSet: z.object({ slug: z.string(), access }),
  linkMade: z.object({ token: z.string().describe('the link\'s bearer token: shown once, kept only as its hash'), link }),
  links: z.object({ slug: z.string(), links: z.array(link) }),
  linkRevoked: z.object({ revoked: z.literal(true), slug: z.string(), id: z.string() }),
  image: z.object({ id: z.string(), slug: z.string(), type: z.string(), size: z.number().int(), url: z.string().describe('the address to put in the text: ![alt](url)') }),
  thread,
  reply,
  comments: z.object({
    slug: z.string(),
    threads: z.array(
      thread.extend({
        at: z.union([
          z.object({ from: z.number().int(), to: z.number().int(), text: z.string(), orphaned: z.literal(false) }),
          z.object({ orphaned: z.literal(true).describe('the commented text is gone (deleted, or replaced by a restore)') }),
        ]),
      }),
    ),
  }),
  stats: z.object({
    categories: z.record(z.string(), z.number().int()),
    recent: z.array(summary.extend({ modified_at: z.string() })),
    locks: z.number().int(),
    totals: z.object({ documents: z.number().int(), documents_this_week: z.number().int(), categories: z.number().int(), average_size: z.number().int() }),
  }),
};
