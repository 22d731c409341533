import { randomBytes } from 'node:crypto';
import { AppError, notFound } from '../errors.js';
import { mailWrites } from '../mail/index.js';
import { codec } from '../store/codec.js';
import type { Write } from '../store/port.js';
import { accessOf, rights, type Viewer } from './access.js';
import { DOC_TOPIC, K, OLD, Part, checkSlug, docRecords } from './model.js';

/**
 * Comments on a document (docs/collab.md "Comments"): threads anchored to a text range by two Yjs
 * relative positions (so the anchor follows every edit made around it), with replies, resolve and
 * reopen, and `@name` mentions of accounts that may read the document. All of a document's
 * threads are one record under the document, `md:doc:<slug>:comments`, so every change stays in the
 * document's aggregate (docs/partitions.md); the record of the global layout, `md:comments:<slug>`,
 * is read while the new one is absent, and the first change copies its threads into the new one. Who may comment follows access: anyone signed in who may read, and a share link made
 * for comments. The anchors are made and resolved by the live rooms (rooms.ts), which hold the Yjs
 * state; this part keeps the records and tells the document's topic, and each mentioned account
 * with a mail address by mail (the outbox, in the comment's own update).
 */

/** Longest comment or reply, in characters. */
export const MAX_COMMENT_CHARS = 2000;
/** Threads per document, replies per thread, mentions per comment, at most. */
export const MAX_THREADS = 500;
export const MAX_REPLIES = 100;
export const MAX_MENTIONS = 20;
/** Characters of the commented text kept with the anchor (shown when the text is gone). */
export const MAX_QUOTE = 200;

export interface Anchor {
  /** base64 of Y.encodeRelativePosition at the range's start and end, on Y.Text 'content'. */
  start: string;
  end: string;
  /** The text the range held when the comment was made. */
  quote: string;
}

export interface Reply {
  id: string;
  author: string;
  author_name: string;
  created: number;
  body: string;
  mentions: string[];
}

export interface Thread extends Reply {
  anchor: Anchor;
  resolved: boolean;
  resolved_by?: string;
  resolved_at?: number;
  replies: Reply[];
}

export const commentRecords = codec<{ threads: Thread[] }>('document comments', (r) => Array.isArray(r.threads));

/** The account ids a body mentions (`@id`), each once, in order. */
export function mentionsOf(body: string): string[] {
  const out: string[] = [];
  for (const m of body.matchAll(/(?<![\w@])@([a-z0-9][a-z0-9_.-]{0,63})/gi)) if (!out.includes(m[1]!)) out.push(m[1]!);
  return out;
}

/** Who an account id is, as far as the access rules need (the identity model's accounts). */
export type AccountLookup = (id: string) => Promise<{ id: string; name: string; roles: readonly string[]; disabled?: boolean; email?: string | undefined } | undefined>;
type Mentioned = NonNullable<Awaited<ReturnType<AccountLookup>>>;

/**
 * The mails that tell each mentioned account with an address (not the author) of a comment, queued
 * in the outbox with the comment itself (one atomic update): `id` names the comment.
 */
function mentionMails(slug: string, title: string, id: string, by: { author: string; author_name: string }, body: string, mentioned: Mentioned[], now: number): Write[] {
  return mentioned
    .filter((a) => a.email && a.id !== by.author)
    .flatMap((a) =>
      mailWrites(
        `md:${slug}:${id}:${a.id}`,
        {
          to: a.email!,
          subject: `[maru] ${by.author_name} 님이 "${title}" 문서 댓글에서 언급했습니다`,
          text: `${a.name} 님,\n\n${by.author_name} 님이 문서 "${title}" (${slug})의 댓글에서 언급했습니다.\n\n${body}\n\n문서: /docs#${encodeURIComponent(slug)}\n`,
        },
        now,
        // the outbox message in the partition of the comments it is written with (docs/partitions.md)
        K.comments(slug),
      ),
    );
}

export class Comments extends Part {
  async list(slug: string): Promise<Thread[]> {
    checkSlug(slug);
    const [own, old] = commentRecords.decodeMany(await this.store.getMany([K.comments(slug), OLD.comments(slug)]));
    return (own ?? old)?.threads ?? [];
  }

  /**
   * The threads of the global layout, read before an update (nothing writes that record any more):
   * the update starts from them while the document's own record is absent.
   */
  private async oldThreads(slug: string): Promise<Thread[] | undefined> {
    return commentRecords.decode(await this.store.get(OLD.comments(slug)))?.threads;
  }

  /** Refuses a mention of an account that does not exist or may not read the document (422 `mention_not_reader`). */
  private async checkMentions(slug: string, body: string, accounts: AccountLookup): Promise<Mentioned[]> {
    const names = mentionsOf(body);
    if (names.length > MAX_MENTIONS) throw new AppError('invalid', 'too_many_mentions', `a comment mentions at most ${MAX_MENTIONS} people`, { limit: MAX_MENTIONS });
    const access = accessOf(docRecords.decode(await this.store.get(K.doc(slug))));
    const refused: string[] = [];
    const found: Mentioned[] = [];
    for (const id of names) {
      const a = await accounts(id);
      if (!a || a.disabled || !rights(access, slug, { id: a.id, name: a.name, roles: a.roles }).read) refused.push(id);
      else found.push(a);
    }
    if (refused.length) {
      throw new AppError('unprocessable', 'mention_not_reader', `${refused.map((r) => `@${r}`).join(', ')} may not read ${slug}`, { slug, mentions: refused });
    }
    return found;
  }

  private author(viewer: Viewer): { author: string; author_name: string } {
    return viewer.link ? { author: `link:${viewer.link.id}`, author_name: '공유 링크 · share link' } : { author: viewer.id, author_name: viewer.name.trim() || viewer.id };
  }

  private assertComment(slug: string, doc: unknown, viewer: Viewer | undefined): void {
    const d = docRecords.decode(doc as never);
    if (!d) throw notFound('unknown_document', `no document ${slug}`, { slug });
    const can = rights(accessOf(d), slug, viewer);
    if (can.comment) return;
    if (!viewer) throw new AppError('unauthorized', 'unauthorized', 'commenting needs a bearer token', { slug });
    throw new AppError('forbidden', can.read ? 'read_only' : 'forbidden', `you may not comment on ${slug}`, { slug, needs: 'comment' });
  }

  async create(slug: string, input: { body: string; anchor: Anchor }, viewer: Viewer | undefined, accounts: AccountLookup): Promise<Thread> {
    checkSlug(slug);
    this.assertComment(slug, await this.store.get(K.doc(slug)), viewer);
    const mentioned = await this.checkMentions(slug, input.body, accounts);
    const mentions = mentioned.map((a) => a.id);
    const thread: Thread = {
      id: randomBytes(8).toString('hex'),
      ...this.author(viewer!),
      created: this.now(),
      body: input.body,
      mentions,
      anchor: { ...input.anchor, quote: input.anchor.quote.slice(0, MAX_QUOTE) },
      resolved: false,
      replies: [],
    };
    const old = await this.oldThreads(slug);
    await this.store.update([K.doc(slug), K.comments(slug)], ([doc, cur]) => {
      this.assertComment(slug, doc, viewer);
      const threads = commentRecords.decode(cur)?.threads ?? old ?? [];
      if (threads.length >= MAX_THREADS) throw new AppError('conflict', 'too_many_threads', `a document holds at most ${MAX_THREADS} threads`, { limit: MAX_THREADS });
      const title = docRecords.decode(doc as never)?.title ?? slug;
      return {
        writes: [{ op: 'set', key: K.comments(slug), value: commentRecords.encode({ threads: [...threads, thread] }) }, ...mentionMails(slug, title, thread.id, thread, thread.body, mentioned, thread.created)],
        result: null,
      };
    });
    this.publish(DOC_TOPIC(slug), { type: 'comment', event: 'created', slug, thread: thread.id, author: thread.author, author_name: thread.author_name, mentions });
    return thread;
  }

  async reply(slug: string, threadId: string, body: string, viewer: Viewer | undefined, accounts: AccountLookup): Promise<Reply> {
    checkSlug(slug);
    this.assertComment(slug, await this.store.get(K.doc(slug)), viewer);
    const mentioned = await this.checkMentions(slug, body, accounts);
    const mentions = mentioned.map((a) => a.id);
    const reply: Reply = { id: randomBytes(8).toString('hex'), ...this.author(viewer!), created: this.now(), body, mentions };
    await this.change(slug, threadId, viewer, (t) => {
      if (t.replies.length >= MAX_REPLIES) throw new AppError('conflict', 'too_many_replies', `a thread holds at most ${MAX_REPLIES} replies`, { limit: MAX_REPLIES });
      t.replies.push(reply);
    }, (title) => mentionMails(slug, title, reply.id, reply, body, mentioned, reply.created));
    this.publish(DOC_TOPIC(slug), { type: 'comment', event: 'replied', slug, thread: threadId, reply: reply.id, author: reply.author, author_name: reply.author_name, mentions });
    return reply;
  }

  async resolve(slug: string, threadId: string, resolved: boolean, viewer: Viewer | undefined): Promise<Thread> {
    checkSlug(slug);
    const now = this.now();
    const out = await this.change(slug, threadId, viewer, (t) => {
      t.resolved = resolved;
      if (resolved) {
        t.resolved_by = this.author(viewer!).author;
        t.resolved_at = now;
      } else {
        delete t.resolved_by;
        delete t.resolved_at;
      }
    });
    this.publish(DOC_TOPIC(slug), { type: 'comment', event: resolved ? 'resolved' : 'reopened', slug, thread: threadId, author: this.author(viewer!).author });
    return out;
  }

  private async change(slug: string, threadId: string, viewer: Viewer | undefined, fn: (t: Thread) => void, also?: (title: string) => Write[]): Promise<Thread> {
    const old = await this.oldThreads(slug);
    return this.store.update<Thread>([K.doc(slug), K.comments(slug)], ([doc, cur]) => {
      this.assertComment(slug, doc, viewer);
      // a copy: the update may run again
      const threads = commentRecords.decode(cur)?.threads ?? structuredClone(old) ?? [];
      const t = threads.find((x) => x.id === threadId);
      if (!t) throw notFound('unknown_thread', `${slug} has no comment thread ${threadId}`, { slug, thread: threadId });
      fn(t);
      const title = docRecords.decode(doc as never)?.title ?? slug;
      return { writes: [{ op: 'set', key: K.comments(slug), value: commentRecords.encode({ threads }) }, ...(also?.(title) ?? [])], result: t };
    });
  }
}
