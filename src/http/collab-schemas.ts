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
const peer = z.object({ id: z.string(), name: z.string(), color: z.string(), joined: ms, seen: ms });
/** Lock views carry the lock's state; their exact fields are in docs/collab.md. */
const lockView = z.looseObject({ slug: z.string(), locked: z.boolean() });

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
