import { describe, expect, it } from 'vitest';
import { SearchIndex, type Indexable } from '../../src/collab/search.js';

const doc = (slug: string, title: string, content: string, category = 'general'): Indexable => ({ slug, title, content, category, version: 1, modified: 1 });

describe('search index', () => {
  it('indexes every word: the last words of a long document are found', () => {
    const idx = new SearchIndex();
    const words = Array.from({ length: 2000 }, (_, i) => `word${i}`);
    idx.upsert(doc('long', '긴 문서', `${words.join(' ')}\n\n마지막에 나오는 회의록 결론 zebra-crossing`));
    for (const q of ['word1999', 'zebra', '결론', '회의록', '나오는']) {
      expect(idx.search(q).map((h) => h.slug), q).toEqual(['long']);
    }
    const hit = idx.search('결론')[0]!;
    expect(hit.snippet).toContain('<mark>결론</mark>');
  });

  it('Korean by partial words (bigrams), Latin by prefix, all terms must match', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('a', '안내서', '실시간협업문서 collaboration guide'));
    idx.upsert(doc('b', '다른 글', '협동 문서 collection'));
    expect(idx.search('협업').map((h) => h.slug)).toEqual(['a']);
    expect(idx.search('실시간협업문서').map((h) => h.slug)).toEqual(['a']);
    expect(idx.search('collab').map((h) => h.slug)).toEqual(['a']);
    expect(idx.search('coll').map((h) => h.slug).sort()).toEqual(['a', 'b']);
    expect(idx.search('문서 guide').map((h) => h.slug)).toEqual(['a']);
    // bigrams present but not adjacent: not a match
    expect(idx.search('협업문').map((h) => h.slug)).toEqual(['a']);
    expect(idx.search('동문').map((h) => h.slug)).toEqual([]);
    expect(idx.search('zzzz')).toEqual([]);
  });

  it('ranks title above body, filters by category, and escapes HTML in titles and snippets', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('body', '본문에만', '여기에 예산 이야기가 있다 예산', 'money'));
    idx.upsert(doc('title', '예산 계획', '짧은 본문', 'plans'));
    idx.upsert(doc('xss', '<b>예산</b> & co', '<script>alert(1)</script> 예산 "quoted"', 'plans'));
    const hits = idx.search('예산');
    // both title matches rank above the body-only match (which mentions the word twice)
    expect(hits.map((h) => h.slug).at(-1)).toBe('body');
    expect(hits).toHaveLength(3);
    expect(hits.find((h) => h.slug === 'title')!.title_match).toBe(true);
    expect(hits.find((h) => h.slug === 'body')!.title_match).toBe(false);
    expect(idx.search('예산', { category: 'money' }).map((h) => h.slug)).toEqual(['body']);
    const x = hits.find((h) => h.slug === 'xss')!;
    expect(x.title_html).toBe('&lt;b&gt;<mark>예산</mark>&lt;/b&gt; &amp; co');
    expect(x.snippet).not.toContain('<script>');
    expect(x.snippet).toContain('&lt;script&gt;');
    expect(x.snippet).toContain('&quot;quoted&quot;');
  });

  it('a removed or replaced document is not found by its old words', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('d', '제목', '사과 바나나'));
    idx.upsert(doc('d', '제목', '포도'));
    expect(idx.search('사과')).toEqual([]);
    expect(idx.search('포도').map((h) => h.slug)).toEqual(['d']);
    idx.remove('d');
    expect(idx.search('포도')).toEqual([]);
    expect(idx.slugs()).toEqual([]);
    expect(idx.search('')).toEqual([]);
  });
});
