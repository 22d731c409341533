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
});
const summary = docSchema.omit({ content: true, created: true });
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
  stats: z.object({
    categories: z.record(z.string(), z.number().int()),
    recent: z.array(summary.extend({ modified_at: z.string() })),
    locks: z.number().int(),
    totals: z.object({ documents: z.number().int(), documents_this_week: z.number().int(), categories: z.number().int(), average_size: z.number().int() }),
  }),
};
