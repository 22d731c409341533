/**
 * Full-text search over document titles and bodies (docs/collab.md "Search").
 *
 * An in-memory n-gram index per process: every lower-cased word yields its character bigrams
 * (a one-character word yields itself), so Korean is found by whole and partial words (협업 finds
 * 실시간협업문서). Candidates come from the bigram postings, then each query term is verified as a
 * substring. Score: 10 per title occurrence, 1 per body occurrence (capped at 20), plus 5 when the
 * whole title equals the query: title ranks above body.
 */

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

export const TITLE_WEIGHT = 10;
const BODY_CAP = 20;

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function terms(q: string): string[] {
  return [...new Set(q.toLowerCase().split(/[\s.,;:!?()[\]{}"'`#*_~<>|/\\=+-]+/u).filter((t) => t.length > 0))].slice(0, 8);
}

function grams(word: string): string[] {
  const chars = [...word];
  if (chars.length === 1) return chars;
  const out: string[] = [];
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!);
  return out;
}

function count(hay: string, needle: string): number {
  let n = 0;
  for (let i = hay.indexOf(needle); i >= 0; i = hay.indexOf(needle, i + needle.length)) n++;
  return n;
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

export class SearchIndex {
  private docs = new Map<string, Indexable & { lt: string; lc: string; grams: string[] }>();
  private postings = new Map<string, Set<string>>();

  has(slug: string, modified: number, version: number): boolean {
    const d = this.docs.get(slug);
    return !!d && d.modified === modified && d.version === version;
  }

  slugs(): string[] {
    return [...this.docs.keys()];
  }

  upsert(doc: Indexable): void {
    this.remove(doc.slug);
    const lt = doc.title.toLowerCase();
    const lc = doc.content.toLowerCase();
    const g = new Set<string>();
    for (const w of terms(lt + ' ' + lc)) for (const x of grams(w)) g.add(x);
    for (const x of g) {
      let set = this.postings.get(x);
      if (!set) this.postings.set(x, (set = new Set()));
      set.add(doc.slug);
    }
    this.docs.set(doc.slug, { ...doc, lt, lc, grams: [...g] });
  }

  remove(slug: string): void {
    const d = this.docs.get(slug);
    if (!d) return;
    for (const x of d.grams) {
      const set = this.postings.get(x);
      set?.delete(slug);
      if (set?.size === 0) this.postings.delete(x);
    }
    this.docs.delete(slug);
  }

  search(q: string, opts: { category?: string; limit?: number } = {}): SearchHit[] {
    const ts = terms(q);
    if (ts.length === 0) return [];
    let candidates: Set<string> | undefined;
    for (const t of ts) {
      for (const g of grams(t)) {
        const set = this.postings.get(g) ?? new Set<string>();
        candidates = candidates ? new Set([...candidates].filter((s) => set.has(s))) : new Set(set);
      }
    }
    const hits: SearchHit[] = [];
    for (const slug of candidates ?? []) {
      const d = this.docs.get(slug)!;
      if (opts.category && d.category !== opts.category) continue;
      let score = 0;
      let titleMatch = false;
      let all = true;
      for (const t of ts) {
        const inTitle = count(d.lt, t);
        const inBody = count(d.lc, t);
        if (inTitle + inBody === 0) {
          all = false;
          break;
        }
        if (inTitle) titleMatch = true;
        score += TITLE_WEIGHT * inTitle + Math.min(BODY_CAP, inBody);
      }
      if (!all) continue;
      if (d.lt.trim() === q.trim().toLowerCase()) score += 5;
      hits.push({
        slug,
        title: d.title,
        category: d.category,
        score,
        title_match: titleMatch,
        title_html: highlight(d.title, ts),
        snippet: snippet(d.content, ts),
      });
    }
    hits.sort((a, b) => b.score - a.score || a.slug.localeCompare(b.slug));
    return hits.slice(0, opts.limit ?? 20);
  }
}
