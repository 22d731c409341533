/**
 * Full-text search over document titles and bodies (docs/collab.md "Search").
 *
 * A MiniSearch index per process over every word of every document (no cap). Words with Korean
 * (or other non-Latin) letters are indexed as their character bigrams (a one-character word as
 * itself), so Korean is found by whole and partial words (협업 finds 실시간협업문서); Latin words
 * are indexed whole and a query word also matches as a prefix (collab finds collaboration). All
 * query words must match, and each must occur in the title or body as written (bigrams alone do
 * not make a match). Ranking is MiniSearch's BM25 with the title boosted, plus a bonus when the
 * whole title equals the query.
 */
import MiniSearch from 'minisearch';

export interface Indexable {
  slug: string;
  title: string;
  content: string;
  category: string;
  version: number;
  modified: number;
}

export interface SearchHit {
  slug: string;
  title: string;
  category: string;
  score: number;
  title_match: boolean;
  /** HTML-escaped text with <mark> around matches. */
  title_html: string;
  snippet: string;
}


const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const SEPARATORS = /[\s.,;:!?()[\]{}"'`#*_~<>|/\\=+-]+/u;
/** At most this many distinct words of a query are used (a bound on the work of one search). */
export const MAX_QUERY_TERMS = 8;
export const TITLE_BOOST = 3;
const LATIN = /^[\p{Script=Latin}\p{N}]+$/u;

/** The distinct lower-cased words of a query, at most MAX_QUERY_TERMS. */
export function terms(q: string): string[] {
  return [...new Set(q.toLowerCase().split(SEPARATORS).filter((t) => t.length > 0))].slice(0, MAX_QUERY_TERMS);
}

/** Index terms of one lower-cased word: itself when Latin/digits, else its character bigrams. */
function wordTerms(word: string): string[] {
  if (LATIN.test(word)) return [word];
  const chars = [...word];
  if (chars.length === 1) return chars;
  const out: string[] = [];
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!);
  return out;
}

/** Escapes `text` and wraps every occurrence of any term (case-insensitive) in <mark>. */
export function highlight(text: string, ts: string[]): string {
  const lower = text.toLowerCase();
  const marks: [number, number][] = [];
  for (const t of ts) for (let i = lower.indexOf(t); i >= 0; i = lower.indexOf(t, i + t.length)) marks.push([i, i + t.length]);
  marks.sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [s, e] of marks) {
    if (s < at) continue;
    out += escapeHtml(text.slice(at, s)) + '<mark>' + escapeHtml(text.slice(s, e)) + '</mark>';
    at = e;
  }
  return out + escapeHtml(text.slice(at));
}

function snippet(content: string, ts: string[], radius = 60): string {
  const lower = content.toLowerCase();
  let first = -1;
  for (const t of ts) {
    const i = lower.indexOf(t);
    if (i >= 0 && (first < 0 || i < first)) first = i;
  }
  if (first < 0) first = 0;
  const start = Math.max(0, first - radius);
  const end = Math.min(content.length, first + radius * 2);
  const piece = content.slice(start, end).replace(/\s+/g, ' ');
  return (start > 0 ? '…' : '') + highlight(piece, ts) + (end < content.length ? '…' : '');
}

interface Entry extends Indexable {
  lt: string;
  lc: string;
}

export class SearchIndex {
  private docs = new Map<string, Entry>();
  private mini = new MiniSearch<{ id: string; title: string; content: string; category: string }>({
    fields: ['title', 'content'],
    tokenize: (text) => text.split(SEPARATORS),
    processTerm: (term) => (term ? wordTerms(term.toLowerCase()) : null),
    searchOptions: {
      boost: { title: TITLE_BOOST },
      combineWith: 'AND',
      // a Latin query word also matches longer words; a one-character Korean query matches its bigrams
      prefix: (term) => LATIN.test(term) || [...term].length === 1,
    },
  });

  has(slug: string, modified: number, version: number): boolean {
    const d = this.docs.get(slug);
    return !!d && d.modified === modified && d.version === version;
  }

  slugs(): string[] {
    return [...this.docs.keys()];
  }

  upsert(doc: Indexable): void {
    this.remove(doc.slug);
    this.mini.add({ id: doc.slug, title: doc.title, content: doc.content, category: doc.category });
    this.docs.set(doc.slug, { ...doc, lt: doc.title.toLowerCase(), lc: doc.content.toLowerCase() });
  }

  remove(slug: string): void {
    if (!this.docs.has(slug)) return;
    this.mini.discard(slug);
    this.docs.delete(slug);
  }

  search(q: string, opts: { category?: string; limit?: number } = {}): SearchHit[] {
    const ts = terms(q);
    if (ts.length === 0) return [];
    const whole = q.trim().toLowerCase();
    const hits: SearchHit[] = [];
    const found = this.mini.search(ts.join(' '), {
      filter: opts.category ? (r) => this.docs.get(r.id as string)?.category === opts.category : undefined,
    });
    for (const r of found) {
      const d = this.docs.get(r.id as string);
      if (!d) continue;
      // every query word occurs as written (a prefix match is a substring too)
      if (!ts.every((t) => d.lt.includes(t) || d.lc.includes(t))) continue;
      const titleMatch = ts.some((t) => d.lt.includes(t));
      const score = r.score + (d.lt.trim() === whole ? 5 : 0);
      hits.push({
        slug: d.slug,
        title: d.title,
        category: d.category,
        score: Math.round(score * 1000) / 1000,
        title_match: titleMatch,
        title_html: highlight(d.title, ts),
        snippet: snippet(d.content, ts),
      });
    }
    hits.sort((a, b) => b.score - a.score || a.slug.localeCompare(b.slug));
    return hits.slice(0, opts.limit ?? 20);
  }
}
