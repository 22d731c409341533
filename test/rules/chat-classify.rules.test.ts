import { describe, expect, it } from 'vitest';

// The module compiles its keyword tables when it loads: each test imports it itself, so that a
// broken table fails the tests rather than the file's collection (where no test would fail).
const load = () => import('../../src/chat/classify.js');

// The matching rules of src/chat/keywords.ts as classify applies them: text and keywords are
// normalised alike (NFKC, lower case, no spacing, punctuation or symbols); of the keywords of one
// kind that match, the longest wins, and on equal length the one listed first.

describe('normalisation', () => {
  it('drops spacing, punctuation and symbols and folds case and width', async () => {
    const { classify, normalise } = await load();
    expect(normalise(' 렌-탈, 문의! ')).toBe('렌탈문의');
    expect(normalise('렌★탈~♡')).toBe('렌탈');
    expect(normalise('ＤＢ Rental')).toBe('dbrental');
    expect(normalise('a.b(c)d?')).toBe('abcd');
  });

  it('lets a keyword split by punctuation still match', async () => {
    const { classify, normalise } = await load();
    expect(classify('렌.탈 문의').need?.value).toBe('rental');
    expect(classify('버/틀/러').need?.value).toBe('butler');
    expect(classify('상담-원 연결').handoff).toBe(true);
  });
});

describe('the longest keyword wins across rules', () => {
  it('prefers a longer keyword of a rule listed later', async () => {
    const { classify, normalise } = await load();
    // advertisement (광고, 2) is listed before offline (오프라인, 4)
    expect(classify('오프라인 광고 보고요').source).toEqual({ value: 'offline', keyword: '오프라인' });
    // solution (시스템, 3) is listed before hardware (하드웨어, 4)
    expect(classify('시스템 하드웨어').need).toEqual({ value: 'hardware', keyword: '하드웨어' });
  });

  it('on equal length keeps the order of the rules file', async () => {
    const { classify, normalise } = await load();
    expect(classify('블로그 네이버').source).toEqual({ value: 'search', keyword: '네이버' });
    expect(classify('서버 대여').need).toEqual({ value: 'rental', keyword: '대여' });
  });

  it('names the keyword as written in the rules file', async () => {
    const { classify, normalise } = await load();
    expect(classify('ＤＢ').need).toEqual({ value: 'solution', keyword: 'db' });
  });
});

describe('yes, no and hand-off', () => {
  it('a no wins over a yes in one answer', async () => {
    const { classify, normalise } = await load();
    expect(classify('네 아니요').yes).toBe(false);
    expect(classify('좋아요').yes).toBe(true);
    expect(classify('다음에 할게요').yes).toBe(false);
  });

  it('asks for a person only on a hand-off word', async () => {
    const { classify, normalise } = await load();
    expect(classify('직원 연결해 주세요').handoff).toBe(true);
    expect(classify('렌탈 문의').handoff).toBe(false);
  });

  it('leaves out what does not match', async () => {
    const { classify, normalise } = await load();
    expect(Object.keys(classify('안녕하세요'))).toEqual(['handoff']);
    expect(Object.keys(classify('렌탈'))).toEqual(['handoff', 'need']);
    expect(Object.keys(classify('검색'))).toEqual(['handoff', 'source']);
  });
});
