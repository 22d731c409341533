import { AppError } from '../errors.js';
import type { Principal } from '../hub/declare.js';

/**
 * Who may read and change a document (docs/collab.md "Access"). Each document carries its access
 * in its own record (`md:doc:<slug>` field `access`), so a save, an access change and the check
 * of either are one aggregate: the owner, a visibility and the named editors and readers.
 *
 * - `private`: the owner, the named editors (read, write) and the named readers (read);
 * - `team` (the default): readable as every document always was (the interface document shows no
 *   credential for reading); written by every editor while no editor is named, else by the owner
 *   and the named editors only;
 * - `public`: readable by anyone, through any link; written like a team document.
 *
 * The operator passes every check. A share link (links.ts) reads (or comments on) its one document.
 * A document stored before access existed has no `access`: it is a team document without an owner
 * (the operator manages it; the first access change by an operator may name one).
 */

export const VISIBILITIES = ['private', 'team', 'public'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** Named editors and readers per document, each at most. */
export const MAX_NAMED = 50;

export interface Access {
  /** The owner's account id; absent on documents stored before access existed. */
  owner?: string;
  visibility: Visibility;
  editors: string[];
  readers: string[];
}

export const DEFAULT_ACCESS: Access = { visibility: 'team', editors: [], readers: [] };

/** The caller as the access rules see it: an account, a share link, or nobody (undefined). */
export interface Viewer {
  id: string;
  name: string;
  roles: readonly string[];
  /** When the credential is a share link: its id, document and role. */
  link?: { id: string; slug: string; role: LinkRole };
}

export type LinkRole = 'read' | 'comment';

/** The principal kind of a share link's credential; its id is `mdlink:<link id>:<role>:<slug>`. */
export const LINK_KIND = 'md-link';

export function viewerOf(p: Principal | undefined): Viewer | undefined {
  if (!p) return undefined;
  if (p.kind === LINK_KIND) {
    const [, id, role, slug] = p.id.split(':');
    return { id: p.id, name: p.name, roles: [], link: { id: id!, slug: slug!, role: role as LinkRole } };
  }
  return { id: p.id, name: p.name, roles: p.roles };
}

const isOperator = (v: Viewer | undefined) => !!v && !v.link && v.roles.includes('operator');
const isEditor = (v: Viewer | undefined) => !!v && !v.link && (v.roles.includes('editor') || v.roles.includes('operator'));

/** What the viewer may do with a document of this access (`slug` for links). */
export function rights(access: Access, slug: string, v: Viewer | undefined): { read: boolean; comment: boolean; write: boolean; manage: boolean } {
  if (v?.link) {
    // its own document, and what anyone reads without an account
    const mine = v.link.slug === slug;
    return { read: mine || access.visibility !== 'private', comment: mine && v.link.role === 'comment', write: false, manage: false };
  }
  if (isOperator(v)) return { read: true, comment: true, write: true, manage: true };
  const owner = !!v && access.owner === v.id;
  const namedEditor = !!v && access.editors.includes(v.id);
  const namedReader = !!v && access.readers.includes(v.id);
  const write = isEditor(v) && (owner || namedEditor || (access.visibility !== 'private' && access.editors.length === 0));
  const read = write || owner || namedEditor || namedReader || access.visibility !== 'private';
  return { read, comment: read && !!v, write, manage: owner };
}

export const accessOf = (doc: { access?: Access } | undefined): Access => doc?.access ?? DEFAULT_ACCESS;

/**
 * Refuses a caller who may not read: 401 `unauthorized` without a credential, 403 `forbidden`
 * with one (an account without the right, or a link to another document).
 */
export function assertRead(access: Access, slug: string, v: Viewer | undefined): void {
  if (rights(access, slug, v).read) return;
  if (!v) throw new AppError('unauthorized', 'unauthorized', `${slug} is not readable without signing in`, { slug });
  throw new AppError('forbidden', 'forbidden', `you may not read ${slug}`, { slug, needs: 'read' });
}

/** Refuses a caller who may not write (403 `read_only` for one who may read, else as assertRead). */
export function assertWrite(access: Access, slug: string, v: Viewer | undefined): void {
  const r = rights(access, slug, v);
  if (r.write) return;
  assertRead(access, slug, v);
  throw new AppError('forbidden', 'read_only', `you may read ${slug} but not change it`, { slug, needs: 'write' });
}

/** Refuses a caller who is neither the owner nor an operator (403 `not_owner`). */
export function assertManage(access: Access, slug: string, v: Viewer | undefined): void {
  if (rights(access, slug, v).manage) return;
  assertRead(access, slug, v);
  throw new AppError('forbidden', 'not_owner', `only the owner of ${slug} or an operator changes its access or links`, { slug, owner: access.owner ?? null });
}
