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

describe('the summary: a line to change, a change, an answer that adds nothing', () => {
  it('names the line of the summary, the longest keyword winning, and a wish to change it', async () => {
    const { classify } = await load();
    expect(classify('전화번호 바꿀게요')).toMatchObject({ edit: { value: 'contact', keyword: '전화번호' }, change: true });
    expect(classify('이메일 수정').edit?.value).toBe('email');
    expect(classify('요청 사항 고칠게요')).toMatchObject({ edit: { value: 'memo', keyword: '요청사항' }, change: true });
    expect(classify('성함이 틀렸어요')).toMatchObject({ edit: { value: 'name' }, change: true });
    expect(classify('상품 변경')).toMatchObject({ edit: { value: 'product' }, change: true });
    expect(classify('네 맞아요')).toMatchObject({ yes: true });
    expect(classify('확인').yes).toBe(true);
    expect(Object.keys(classify('네'))).toEqual(['handoff', 'yes']);
  });

  // only a trailing 요 is dropped ('요없음' is not '없음'), and a "없어요" form is the whole answer
  it('an answer adds nothing when it is, as a whole, a yes, a "nothing" or only punctuation', async () => {
    const { isNothing } = await import('../../src/chat/classify.js');
    for (const t of ['네', '예', '네.', ' 네 요 ', '넵', 'ㅇㅇ', '응', '좋아요', 'OK', 'yes', '없음', '없어요', '없습니다', '없네요', '특별히 없습니다', '딱히 없어요', '네 없어요', '아니요', '아뇨', '괜찮아요', '됐어요', 'none', '-', '...', '', '없', '딱히 없'])
      expect(isNothing(t), t).toBe(true);
    for (const t of ['네 오전에 전화 주세요', '설치 진행 전에 연락 바랍니다', '없는 번호예요', '주차 공간 없어요 참고하세요', '확인 후 연락 주세요', '010-1234-5678', 'x', '요없음', '그건 없어요', '없어요 다만 오후에 와 주세요'])
      expect(isNothing(t), t).toBe(false);
  });
});

