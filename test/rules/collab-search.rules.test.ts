import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_QUERY_TERMS, SearchIndex, TITLE_BOOST, highlight, terms, type Indexable } from '../../src/collab/search.js';

// Document search (docs/collab.md "Search"): all query words must match, at most 8 words of a
// query are used, the title is boosted x3, +5 when the title equals the query, results are
// HTML-escaped with <mark>, a category filter, 20 results unless asked otherwise.

const doc = (slug: string, title: string, content: string, category = 'general', version = 1, modified = 1): Indexable => ({ slug, title, content, category, version, modified });

describe('query terms', () => {
  it('lower-cased, split on punctuation and spaces, distinct, at most 8', () => {
    expect(MAX_QUERY_TERMS).toBe(8);
    expect(terms('Alpha  beta.GAMMA,alpha')).toEqual(['alpha', 'beta', 'gamma']);
    expect(terms('a-b_c/d\\e=f+g~h|i')).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    expect(terms('  ...  ')).toEqual([]);
    const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`);
    expect(terms(words(7).join(' '))).toHaveLength(7);
    expect(terms(words(8).join(' '))).toHaveLength(8);
    expect(terms(words(9).join(' '))).toEqual(words(8));
  });
  it('terms are idempotent: the terms of the joined terms are the same terms', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (q) => {
        const ts = terms(q);
        expect(terms(ts.join(' '))).toEqual(ts);
        expect(ts.length).toBeLessThanOrEqual(MAX_QUERY_TERMS);
        for (const t of ts) expect(t).toBe(t.toLowerCase());
      }),
    );
  });
});

describe('highlight', () => {
  it('escapes all five HTML characters, inside and outside marks', () => {
    expect(highlight(`&<>"'`, [])).toBe('&amp;&lt;&gt;&quot;&#39;');
    expect(highlight(`<a>&`, ['a'])).toBe('&lt;<mark>a</mark>&gt;&amp;');
    expect(highlight(`x"'y`, [`"'`])).toBe('x<mark>&quot;&#39;</mark>y');
  });
  it('marks every occurrence, case-insensitively, keeping the original case; overlaps are skipped', () => {
    expect(highlight('Abab', ['ab'])).toBe('<mark>Ab</mark><mark>ab</mark>');
    expect(highlight('aaa', ['aa'])).toBe('<mark>aa</mark>a');
    expect(highlight('abc', ['bc', 'ab'])).toBe('<mark>ab</mark>c');
    expect(highlight('x ab y ab', ['ab'])).toBe('x <mark>ab</mark> y <mark>ab</mark>');
    expect(highlight('none', ['zz'])).toBe('none');
  });
  it('never lets markup through: stripping the marks gives back the escaped text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.array(fc.string({ minLength: 1, maxLength: 3 }), { maxLength: 3 }), (text, ts) => {
        const out = highlight(text, ts.map((t) => t.toLowerCase()));
        const stripped = out.replaceAll('<mark>', '').replaceAll('</mark>', '');
        expect(stripped).not.toMatch(/[<>"']/);
        const unescaped = stripped.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&amp;', '&');
        expect(unescaped).toBe(text);
      }),
    );
  });
});

describe('search', () => {
  it('all query words must match; the ninth word of a query is not used', () => {
    const idx = new SearchIndex();
    const words = Array.from({ length: 8 }, (_, i) => `term${i}`);
    idx.upsert(doc('all', 'many', words.join(' ')));
    idx.upsert(doc('some', 'few', 'term0 term1'));
    expect(idx.search('term0 term1').map((h) => h.slug).sort()).toEqual(['all', 'some']);
    expect(idx.search('term0 term2').map((h) => h.slug)).toEqual(['all']);
    expect(idx.search(`${words.slice(0, 7).join(' ')} absent`)).toEqual([]);
    expect(idx.search(`${words.join(' ')} absent`).map((h) => h.slug)).toEqual(['all']);
    expect(idx.search('term0 absent')).toEqual([]);
  });

  it('the exact title earns +5 (trimmed, any case), a longer title does not', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('exact', ' Budget ', 'numbers'));
    idx.upsert(doc('longer', 'Budget plan', 'numbers'));
    idx.upsert(doc('other', 'unrelated', 'budget in the body'));
    const bonus = (q: string, slug: string) => idx.search(q).find((h) => h.slug === slug)!.score;
    // "budget." has the same words as "budget", but is not the whole title
    expect(bonus('budget', 'exact') - bonus('budget.', 'exact')).toBeCloseTo(5, 2);
    expect(bonus(' BUDGET ', 'exact') - bonus('budget.', 'exact')).toBeCloseTo(5, 2);
    expect(bonus('budget', 'longer')).toBe(bonus('budget.', 'longer'));
    expect(bonus('budget plan', 'longer') - bonus('plan budget', 'longer')).toBeCloseTo(5, 2);
    expect(idx.search('budget')[0]!.slug).toBe('exact');
  });

  it('title words weigh 3 times body words', () => {
    expect(TITLE_BOOST).toBe(3);
    const idx = new SearchIndex();
    idx.upsert(doc('t', 'kiwi', 'plain'));
    idx.upsert(doc('b', 'plain', 'kiwi'));
    const [first, second] = idx.search('kiwi.');
    expect(first!.slug).toBe('t');
    expect(first!.title_match).toBe(true);
    expect(second!.title_match).toBe(false);
    // same lengths and frequencies: the ratio is the boost
    expect(first!.score / second!.score).toBeCloseTo(3, 1);
  });

  it('scores are rounded to 3 decimals; ties are ordered by slug', () => {
    const idx = new SearchIndex();
    for (const s of ['c', 'a', 'b']) idx.upsert(doc(s, 'same', 'same words'));
    const hits = idx.search('words');
    expect(hits.map((h) => h.slug)).toEqual(['a', 'b', 'c']);
    for (const h of hits) expect(Math.round(h.score * 1000) / 1000).toBe(h.score);
    expect(hits[0]!.score).not.toBe(Math.round(hits[0]!.score));
  });

  it('20 results unless a limit is given', () => {
    const idx = new SearchIndex();
    for (let i = 0; i < 22; i++) idx.upsert(doc(`d${String(i).padStart(2, '0')}`, `t${i}`, 'shared word'));
    expect(idx.search('shared')).toHaveLength(20);
    expect(idx.search('shared', { limit: 21 })).toHaveLength(21);
    expect(idx.search('shared', { limit: 2 }).map((h) => h.slug)).toEqual(['d00', 'd01']);
  });

  it('the category filter keeps only that category; no category means all', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('m', 'a', 'apple', 'money'));
    idx.upsert(doc('p', 'b', 'apple', 'plans'));
    expect(idx.search('apple', { category: 'plans' }).map((h) => h.slug)).toEqual(['p']);
    expect(idx.search('apple', { category: 'none' })).toEqual([]);
    expect(idx.search('apple', { category: '' }).map((h) => h.slug)).toEqual(['m', 'p']);
    expect(idx.search('apple').map((h) => ({ slug: h.slug, category: h.category }))).toEqual([
      { slug: 'm', category: 'money' },
      { slug: 'p', category: 'plans' },
    ]);
  });

  it('a hit carries the slug, title, escaped title and a snippet of about 180 characters around the first match', () => {
    const idx = new SearchIndex();
    const content = `${'x'.repeat(100)} 예산 ${'y'.repeat(200)}`;
    idx.upsert(doc('s', 'T<1>', content));
    const [hit] = idx.search('예산');
    expect(hit).toMatchObject({ slug: 's', title: 'T<1>', category: 'general', title_match: false, title_html: 'T&lt;1&gt;' });
    expect(hit!.snippet).toBe(`…${'x'.repeat(59)} <mark>예산</mark> ${'y'.repeat(117)}…`);
    idx.upsert(doc('short', 'kiwi title', 'line one\n\n  line two kiwi'));
    expect(idx.search('kiwi').find((h) => h.slug === 'short')!.snippet).toBe('line one line two <mark>kiwi</mark>');
    // a title-only match: the snippet is the start of the body
    idx.upsert(doc('head', 'lemon', `${'z'.repeat(200)}`));
    expect(idx.search('lemon')[0]!.snippet).toBe(`${'z'.repeat(120)}…`);
  });

  it('the earliest match of any word starts the snippet', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('e', 'e', `${'q'.repeat(150)} beta ${'q'.repeat(10)} alpha ${'q'.repeat(150)}`));
    const s = idx.search('alpha beta')[0]!.snippet;
    expect(s.startsWith(`…${'q'.repeat(59)} <mark>beta`)).toBe(true);
    expect(s).toContain('<mark>beta</mark>');
    expect(s.indexOf('<mark>beta</mark>')).toBe(61);
  });

  it('the earliest match starts the snippet whatever the order of the query words; a match at 0 has no ellipsis', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('e', 'e', `${'q'.repeat(150)} beta ${'q'.repeat(10)} alpha ${'q'.repeat(150)}`));
    expect(idx.search('beta alpha')[0]!.snippet.startsWith(`…${'q'.repeat(59)} <mark>beta`)).toBe(true);
    idx.upsert(doc('z', 'z', `gamma ${'q'.repeat(300)}`));
    expect(idx.search('gamma')[0]!.snippet.startsWith('<mark>gamma</mark> ')).toBe(true);
  });

  it('bigrams present but not adjacent do not match; Latin words match by prefix only', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('k', 'k', '가나 나다'));
    expect(idx.search('가나다')).toEqual([]);
    expect(idx.search('가나').map((h) => h.slug)).toEqual(['k']);
    idx.upsert(doc('l', 'l', 'xab'));
    expect(idx.search('ab')).toEqual([]);
    expect(idx.search('xa').map((h) => h.slug)).toEqual(['l']);
  });

  it('a title match needs only one query word in the title', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('t', 'plum', 'cherry'));
    const [hit] = idx.search('plum cherry');
    expect(hit!.title_match).toBe(true);
    expect(hit!.title_html).toBe('<mark>plum</mark>');
  });

  it('a one-character Korean query word finds the words it starts', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('w', 'w', '협업 문서'));
    expect(idx.search('협').map((h) => h.slug)).toEqual(['w']);
  });

  it('a one-character Korean word finds its bigrams; numbers are whole words', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('k', '협', '협업 2026 년'));
    idx.upsert(doc('n', 'n', 'year 20261'));
    expect(idx.search('협').map((h) => h.slug)).toEqual(['k']);
    expect(idx.search('2026').map((h) => h.slug).sort()).toEqual(['k', 'n']);
    // prefix of a bigram only: the second character alone is not a match
    expect(idx.search('업')).toEqual([]);
  });

  it('a deleted document is not searchable; deleting an unknown one is harmless; has() needs version and modified', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('d', 'title', 'pear', 'general', 2, 100));
    expect(idx.has('d', 100, 2)).toBe(true);
    expect(idx.has('d', 101, 2)).toBe(false);
    expect(idx.has('d', 100, 3)).toBe(false);
    expect(idx.has('x', 100, 2)).toBe(false);
    expect(() => idx.remove('nope')).not.toThrow();
    idx.remove('d');
    expect(idx.search('pear')).toEqual([]);
    expect(idx.search('title')).toEqual([]);
    expect(idx.has('d', 100, 2)).toBe(false);
    idx.upsert(doc('d', 'again', 'pear'));
    expect(idx.search('pear').map((h) => h.slug)).toEqual(['d']);
    expect(idx.slugs()).toEqual(['d']);
  });
});

describe('words that mix scripts, and the first match', () => {
  it('a word is Latin only when all of it is: a Korean particle glued to a Latin word is split into bigrams', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('api', 'API 안내', 'maru API가 응답합니다'));
    idx.upsert(doc('mix', '혼합', '한국maru 서비스'));
    // the bigrams across the script boundary find the word from its middle
    expect(idx.search('PI가').map((h) => h.slug)).toEqual(['api']);
    expect(idx.search('국ma').map((h) => h.slug)).toEqual(['mix']);
    // a Latin word on its own is still matched as a prefix
    expect(idx.search('mar').map((h) => h.slug)).toContain('api');
  });

  it('every query word must occur as written, not only its bigrams', () => {
    const idx = new SearchIndex();
    idx.upsert(doc('apart', '나뉨', '가나 나다 maru'));
    idx.upsert(doc('whole', '붙음', '가나다 maru'));
    expect(idx.search('가나다 maru').map((h) => h.slug)).toEqual(['whole']);
    expect(idx.search('maru').map((h) => h.slug).sort()).toEqual(['apart', 'whole']);
  });

  it('the snippet is around the earliest match of any query word, the start of the text included', () => {
    const idx = new SearchIndex();
    const body = `kiwi ${'a'.repeat(200)} lemon ${'b'.repeat(200)}`;
    idx.upsert(doc('fruit', 'fruit', body));
    // both words: the snippet starts at kiwi (offset 0), whichever word is asked first
    for (const q of ['kiwi lemon', 'lemon kiwi']) expect(idx.search(q)[0]!.snippet.startsWith('<mark>kiwi</mark>'), q).toBe(true);
    const late = `${'c'.repeat(100)} plum ${'d'.repeat(100)} pear ${'e'.repeat(100)}`;
    idx.upsert(doc('late', 'late', late));
    // a word found only in the title leaves the snippet at the body's match
    idx.upsert(doc('titled', 'grape', `${'f'.repeat(200)} melon ${'g'.repeat(100)}`));
    for (const q of ['melon grape', 'grape melon']) expect(idx.search(q)[0]!.snippet.startsWith(`…${'f'.repeat(59)} <mark>melon</mark>`), q).toBe(true);
    for (const q of ['plum pear', 'pear plum']) expect(idx.search(q)[0]!.snippet, q).toBe(`…${'c'.repeat(59)} <mark>plum</mark> ${'d'.repeat(100)} <mark>pear</mark> ${'e'.repeat(9)}…`);
  });
});
