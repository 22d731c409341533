/**
 * The keyword rules of the guided conversation, kept as data in this one file.
 *
 * A customer's free text is classified into a source (how the customer came) and a need (what the
 * customer wants). Matching (src/chat/classify.ts) normalises both the text and each keyword:
 * NFKC (phones send decomposed jamo; full-width letters fold), lower case, no spacing or
 * punctuation. A keyword matches as a substring, so particles do not matter (렌탈을, 렌탈이).
 * Of all keywords of one kind that match, the longest wins; on equal length, the one listed first.
 * Edit this table to change what the bot understands; test/chat/classify.test.ts is its table of
 * examples.
 */

export const SOURCES = ['search', 'sns', 'referral', 'advertisement', 'acquaintance', 'offline', 'other'] as const;
export type Source = (typeof SOURCES)[number];

export const NEEDS = ['rental', 'solution', 'butler', 'hardware'] as const;
export type Need = (typeof NEEDS)[number];

export interface KeywordRule<V extends string> {
  value: V;
  keywords: string[];
}

export const SOURCE_RULES: KeywordRule<Source>[] = [
  { value: 'search', keywords: ['검색', '네이버', '구글', '다음카페', '포털', '찾아보', 'search', 'google', 'naver'] },
  {
    value: 'sns',
    keywords: ['sns', '인스타', '페이스북', '유튜브', '블로그', '카카오스토리', '트위터', '틱톡', '스레드', 'instagram', 'youtube'],
  },
  { value: 'referral', keywords: ['추천코드', '추천받', '추천으로', '소개코드', '추천링크', 'referral'] },
  { value: 'advertisement', keywords: ['광고', '배너', '전단', '현수막', '홍보물', '문자광고', 'advert'] },
  { value: 'acquaintance', keywords: ['지인', '친구', '동료', '아는분', '아는사람', '가족', '지인소개', '소개받'] },
  { value: 'offline', keywords: ['매장', '박람회', '전시회', '오프라인', '세미나', '설명회', '방문', '행사장'] },
  { value: 'other', keywords: ['기타', '그냥', '모르겠', '기억안'] },
];

export const NEED_RULES: KeywordRule<Need>[] = [
  { value: 'rental', keywords: ['렌탈', '렌털', '대여', '임대', '빌리', '빌려', '리스', '월납', '구독', 'rental', 'rent'] },
  {
    value: 'solution',
    keywords: ['솔루션', '소프트웨어', '프로그램', '데이터베이스', '관리시스템', '시스템', '자동화', '플랫폼', 'solution', 'software', 'db'],
  },
  {
    value: 'butler',
    keywords: ['버틀러', '집사', '대행', '컨시어지', '비서', '심부름', '케어서비스', '관리서비스', 'butler', 'concierge'],
  },
  {
    value: 'hardware',
    keywords: ['하드웨어', '장비', '기기', '단말', '센서', '감지기', '서버', '컴퓨터', '노트북', '프린터', 'hardware', 'pc'],
  },
];

/** Words the customer may type instead of pressing a yes/no choice. */
export const YES_WORDS = ['네', '예', '응', '좋아', '좋습니다', '할게', '신청', '추가', '받을', '보기', '진행', '맞아', '맞습니다', '확인', 'yes', 'ok'];
export const NO_WORDS = ['아니', '괜찮', '됐어', '안할', '필요없', '건너', '넘어', '다음에', 'no', 'skip'];
/** Words that ask for a person, on any stage. */
export const HANDOFF_WORDS = ['상담원', '상담사', '직원', '사람연결', '사람이랑', '전화주', '연락주', '콜백', '통화하'];

/**
 * Whole answers that add nothing to an optional question (the remarks): a bare yes or a "nothing".
 * Matched against the whole normalised answer (a trailing 요 ignored), never as a substring, so a
 * remark that only contains such a word ("설치 진행 전에 전화 주세요") is kept; the yes words
 * count too, and "없어요", "특별히 없습니다" and the like (src/chat/classify.ts, isNothing).
 */
export const NOTHING_WORDS = ['없음', '아니', '아니오', '아뇨', '괜찮아', '괜찮습니다', '됐어', '넵', '네네', '예예', '응응', 'ㅇㅇ', 'ㅇ', '그래', 'none', 'no', 'nope', 'nothing'];

/** What the customer may change on the summary before the receipt is registered. */
export const EDIT_TARGETS = ['name', 'contact', 'email', 'memo', 'product'] as const;
export type EditTarget = (typeof EDIT_TARGETS)[number];
/** Words naming a summary line to change ("연락처 바꿀게요"); the longest wins, like the other rules. */
export const EDIT_RULES: KeywordRule<EditTarget>[] = [
  { value: 'name', keywords: ['성함', '이름'] },
  { value: 'contact', keywords: ['연락처', '전화번호', '휴대폰', '핸드폰', '번호'] },
  { value: 'email', keywords: ['이메일', '메일', 'email'] },
  { value: 'memo', keywords: ['요청사항', '요청', '메모', '비고'] },
  { value: 'product', keywords: ['상품', '제품'] },
];
/** Words asking to change something on the summary. */
export const CHANGE_WORDS = ['수정', '고칠', '고치', '고쳐', '바꿀', '바꾸', '바꿔', '변경', '틀렸', '틀려', '잘못'];
