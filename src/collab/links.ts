import { createHash, randomBytes } from 'node:crypto';
import { AppError, notFound } from '../errors.js';
import type { Principal } from '../hub/declare.js';
import { codec } from '../store/codec.js';
import { LINK_KIND, accessOf, assertManage, type LinkRole, type Viewer } from './access.js';
import { K, OLD, Part, SLUG_RE, checkSlug, docRecords } from './model.js';

/**
 * Share links (docs/collab.md "Share links"): the owner (or an operator) makes a link that reads,
 * or reads and comments on, one document without an account; optionally it expires; the owner
 * lists and revokes them. The link is a bearer token of its own kind, `ms_<slug in base64url>.<43
 * characters: 256 random bits>`: the slug in it finds the document's links (`md:doc:<slug>:links`,
 * one record under the document, so every change stays in the document's aggregate; the record of
 * the global layout, `md:links:<slug>`, is read while that one is absent and copied into it by the
 * first change), the random part makes
 * it unguessable, and only its SHA-256 is kept. A revoked or expired link stops resolving, so the
 * hub's re-check of open connections ends the streams and sockets opened with it (at once on the
 * process that revokes, within AUTH_RECHECK_MS on the others).
 */

export const LINK_PREFIX = 'ms_';
/** Live links per document, at most. */
export const MAX_LINKS = 20;
/** Longest life a link may be given. */
export const MAX_LINK_TTL_S = 365 * 86_400;

export interface ShareLink {
  id: string;
  hash: string;
  role: LinkRole;
  created: number;
  created_by: string;
  /** ms since the epoch; null: until revoked. */
  expires: number | null;
}

export const linkRecords = codec<{ links: ShareLink[] }>('document share links', (r) => Array.isArray(r.links));

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

export const linkView = (l: ShareLink) => ({
  id: l.id,
  role: l.role,
  created: l.created,
  created_by: l.created_by,
  expires_at: l.expires === null ? null : new Date(l.expires).toISOString(),
});

export class Links extends Part {
  /** The links of the global layout, read before an update (nothing writes that record any more). */
  private async oldLinks(slug: string): Promise<ShareLink[] | undefined> {
    return linkRecords.decode(await this.store.get(OLD.links(slug)))?.links;
  }

  /** A document's links: its own record, else the global layout's. */
  private async current(slug: string): Promise<ShareLink[]> {
    const [own, old] = linkRecords.decodeMany(await this.store.getMany([K.links(slug), OLD.links(slug)]));
    return (own ?? old)?.links ?? [];
  }

  async create(slug: string, input: { role: LinkRole; expires_in_s?: number }, viewer: Viewer | undefined): Promise<{ token: string; link: ReturnType<typeof linkView> }> {
    checkSlug(slug);
    const now = this.now();
    const token = `${LINK_PREFIX}${Buffer.from(slug, 'utf8').toString('base64url')}.${randomBytes(32).toString('base64url')}`;
    const link: ShareLink = {
      id: randomBytes(8).toString('hex'),
      hash: hashOf(token),
      role: input.role,
      created: now,
      created_by: viewer?.id ?? '',
      expires: input.expires_in_s === undefined ? null : now + input.expires_in_s * 1000,
    };
    const old = await this.oldLinks(slug);
    await this.store.update([K.doc(slug), K.links(slug)], ([doc, cur]) => {
      const d = docRecords.decode(doc);
      if (!d) throw notFound('unknown_document', `no document ${slug}`, { slug });
      assertManage(accessOf(d), slug, viewer);
      const live = (linkRecords.decode(cur)?.links ?? old ?? []).filter((l) => l.expires === null || l.expires > now);
      if (live.length >= MAX_LINKS) {
        throw new AppError('conflict', 'too_many_links', `a document has at most ${MAX_LINKS} live links: revoke one first`, { limit: MAX_LINKS });
      }
      return { writes: [{ op: 'set', key: K.links(slug), value: linkRecords.encode({ links: [...live, link] }) }], result: null };
    });
    return { token, link: linkView(link) };
  }

  async list(slug: string, viewer: Viewer | undefined): Promise<{ slug: string; links: ReturnType<typeof linkView>[] }> {
    checkSlug(slug);
    const d = docRecords.decode(await this.store.get(K.doc(slug)));
    if (!d) throw notFound('unknown_document', `no document ${slug}`, { slug });
    assertManage(accessOf(d), slug, viewer);
    const now = this.now();
    const links = (await this.current(slug)).filter((l) => l.expires === null || l.expires > now);
    return { slug, links: links.map(linkView) };
  }

  async revoke(slug: string, id: string, viewer: Viewer | undefined): Promise<{ revoked: true; slug: string; id: string }> {
    checkSlug(slug);
    const old = await this.oldLinks(slug);
    await this.store.update([K.doc(slug), K.links(slug)], ([doc, cur]) => {
      const d = docRecords.decode(doc);
      if (!d) throw notFound('unknown_document', `no document ${slug}`, { slug });
      assertManage(accessOf(d), slug, viewer);
      const links = linkRecords.decode(cur)?.links ?? old ?? [];
      if (!links.some((l) => l.id === id)) throw notFound('unknown_link', `${slug} has no link ${id}`, { slug, id });
      return { writes: [{ op: 'set', key: K.links(slug), value: linkRecords.encode({ links: links.filter((l) => l.id !== id) }) }], result: null };
    });
    return { revoked: true, slug, id };
  }

  /** The principal of a link token, or undefined when it is malformed, unknown, revoked or expired. */
  async authenticate(token: string): Promise<Principal | undefined> {
    const m = /^ms_([A-Za-z0-9_-]{1,400})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!m) return undefined;
    const slug = Buffer.from(m[1]!, 'base64url').toString('utf8');
    if (!SLUG_RE.test(slug)) return undefined;
    const hash = hashOf(token);
    const link = (await this.current(slug)).find((l) => l.hash === hash);
    if (!link || (link.expires !== null && link.expires <= this.now())) return undefined;
    return { id: `mdlink:${link.id}:${link.role}:${slug}`, name: `link ${link.id}`, roles: [], kind: LINK_KIND };
  }
}
