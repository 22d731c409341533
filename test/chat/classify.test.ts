import { describe, expect, it } from 'vitest';
import { classify, normalise } from '../../src/chat/classify.js';
import { normaliseEmail, normaliseName, normalisePhone, maskName, maskPhone } from '../../src/chat/contact.js';

const nfd = (s: string) => s.normalize('NFD');

// [utterance, source, need] — undefined: nothing of that kind matches (the bot asks again)
const TABLE: [string, string | undefined, string | undefined][] = [
  ['네이버에서 검색해서 왔어요', 'search', undefined],
  ['구글 검색', 'search', undefined],
  ['포털에서 찾아보다가요', 'search', undefined],
  ['인스타 보고 왔어요', 'sns', undefined],
  ['유튜브 광고 보고요', 'sns', undefined], // 유튜브 (3) is longer than 광고 (2)
  ['블로그 후기 보고 왔습니다', 'sns', undefined],
  ['페이스북', 'sns', undefined],
  ['추천코드 받아서 왔어요', 'referral', undefined],
  ['추천받았어요', 'referral', undefined],
  ['지하철 광고 보고 왔어요', 'advertisement', undefined],
  ['현수막 봤어요', 'advertisement', undefined],
  ['전단지 받았어요', 'advertisement', undefined],
  ['지인 소개로요', 'acquaintance', undefined],
  ['친구가 알려줬어요', 'acquaintance', undefined],
  ['회사 동료가 써보래요', 'acquaintance', undefined],
  ['박람회에서 봤어요', 'offline', undefined],
  ['매장 방문했었어요', 'offline', undefined],
  ['세미나 듣고 왔어요', 'offline', undefined],
  ['기억 안 나요', 'other', undefined],
  ['그냥 왔어요', 'other', undefined],
  ['렌탈 문의드려요', undefined, 'rental'],
  ['렌털 가능한가요', undefined, 'rental'],
  ['장기 대여 하고 싶어요', undefined, 'rental'],
  ['월납으로 쓰고 싶어요', undefined, 'rental'],
  ['솔루션 도입 상담', undefined, 'solution'],
  ['업무 자동화 하고 싶어요', undefined, 'solution'],
  ['데이터베이스 관리 프로그램', undefined, 'solution'], // 데이터베이스 (5) beats 프로그램 (4)
  ['ＤＢ 구축', undefined, 'solution'], // full-width letters fold under NFKC
  ['버틀러 서비스 알아봐요', undefined, 'butler'],
  ['행정 업무 대행 해주나요', undefined, 'butler'],
  ['컨시어지 같은 거요', undefined, 'butler'],
  ['하드웨어 구매하려고요', undefined, 'hardware'],
  ['화재 감지기 설치', undefined, 'hardware'],
  ['노트북 필요해요', undefined, 'hardware'],
  ['서버 장비 견적', undefined, 'hardware'],
  ['네이버 블로그 보고 렌탈 문의', 'search', 'rental'], // one of each kind; 네이버 and 블로그 are equally long: the rule listed first wins
  ['안녕하세요', undefined, undefined],
  ['가격이 궁금해요', undefined, undefined],
  ['ㅎㅎ', undefined, undefined],
  ['', undefined, undefined],
  ['12345', undefined, undefined],
  [nfd('렌탈을 하고 싶어요'), undefined, 'rental'], // decomposed jamo from a phone keyboard
  [nfd('지인 소개받았어요'), 'acquaintance', undefined],
  [nfd('버틀러'), undefined, 'butler'],
  ['R E N T A L please', undefined, 'rental'], // spacing and case ignored
];

describe('keyword classifier', () => {
  it('has a table of at least 40 utterances', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(40);
  });

  it.each(TABLE)('%j -> source %s, need %s', (text, source, need) => {
    const c = classify(text);
    expect(c.source?.value).toBe(source);
    expect(c.need?.value).toBe(need);
  });

  it('names the keyword that fired, the longest one', () => {
    expect(classify('데이터베이스 관리 프로그램').need).toEqual({ value: 'solution', keyword: '데이터베이스' });
    expect(classify('지인소개').source).toEqual({ value: 'acquaintance', keyword: '지인소개' });
  });

  it('normalises NFKC, case and spacing', () => {
    expect(normalise(nfd('렌 탈'))).toBe('렌탈');
    expect(normalise('ＡＢ c!')).toBe('abc');
  });

  it('reads yes, no and requests for a person', () => {
    expect(classify('네 좋아요').yes).toBe(true);
    expect(classify('아니요 괜찮아요').yes).toBe(false);
    expect(classify('음...').yes).toBeUndefined();
    expect(classify('상담원 연결해 주세요').handoff).toBe(true);
    expect(classify('아는 사람이 알려줬어요').handoff).toBe(false);
  });
});

describe('contact fields', () => {
  it('normalises Korean phone numbers', () => {
    expect(normalisePhone('01012345678')).toBe('010-1234-5678');
    expect(normalisePhone('010 1234 5678')).toBe('010-1234-5678');
    expect(normalisePhone('+82 10-1234-5678')).toBe('010-1234-5678');
    expect(normalisePhone('02-123-4567')).toBe('02-123-4567');
    expect(normalisePhone('０１０-１２３４-５６７８')).toBe('010-1234-5678');
    expect(normalisePhone('1588-1234')).toBe('1588-1234');
    for (const bad of ['12345', '010-1234', 'phone', '010-1234-56789', '']) expect(normalisePhone(bad)).toBeUndefined();
  });

  it('checks e-mail addresses and names; masks', () => {
    expect(normaliseEmail(' Kim@Example.KR ')).toBe('Kim@example.kr');
    for (const bad of ['kim', 'kim@', '@x.kr', 'kim@x', 'a b@x.kr', 'kim..lee@x.kr']) expect(normaliseEmail(bad)).toBeUndefined();
    expect(normaliseName('  홍길동 ')).toBe('홍길동');
    expect(normaliseName('123')).toBeUndefined();
    expect(maskName('홍길동')).toBe('홍*동');
    expect(maskName('김철')).toBe('김*');
    expect(maskPhone('010-1234-5678')).toBe('010-****-5678');
  });
});
