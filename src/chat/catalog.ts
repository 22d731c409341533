import { IPA_BASE_FEE, PRODUCTS as RENTAL_PRODUCTS, TERM_MONTHS } from '../rental/index.js';
import type { Need, Source } from './keywords.js';

/**
 * The four fixed recommendation and upsell rules (category -> product code) and the products they
 * name. Deterministic: the same category always gives the same code, for both the recommend and the
 * upsell turn. docs/chat.md documents the card fields.
 */
export const PRODUCT_RULES: Readonly<Record<Need, number>> = Object.freeze({
  rental: 31,
  solution: 40,
  butler: 45,
  hardware: 20,
});

export const NEED_LABELS: Readonly<Record<Need, string>> = Object.freeze({
  rental: '렌탈',
  solution: '솔루션',
  butler: '버틀러 서비스',
  hardware: '하드웨어',
});

/** How the customer came, as the greet choices and the receipt's remarks say it. */
export const SOURCE_LABELS: Readonly<Record<Source, string>> = Object.freeze({
  search: '검색',
  sns: 'SNS',
  referral: '추천',
  advertisement: '광고',
  acquaintance: '지인 소개',
  offline: '오프라인',
  other: '기타',
});

/**
 * The rental the partner reviews is the form's SOL-702 (rental-ipa): the conversation names it as
 * the rental catalogue does, product code and name ("SOL-702 디지털 화재감지기"), never by its rule
 * number.
 */
const RENTAL = RENTAL_PRODUCTS['rental-ipa'];
const RENTAL_NAME = `${RENTAL.code} ${RENTAL.name}`;

/**
 * A product of the rules. `code` is the rule's number (31, 40, 45, 20): it stays in the API's cards
 * and the records, but the customer only ever reads `name`.
 */
export interface Product {
  code: number;
  name: string;
  category: Need;
  summary: string;
  /** KRW per month (the recommend card) */
  monthlyFee: number;
  /** What the upsell card adds to the product, and its extra monthly fee. */
  upsell: { name: string; summary: string; monthlyFee: number };
}

export const PRODUCTS: Readonly<Record<number, Product>> = Object.freeze({
  31: {
    code: 31,
    name: RENTAL_NAME,
    category: 'rental',
    summary: `${TERM_MONTHS}개월 렌탈, 설치·점검 포함`,
    monthlyFee: IPA_BASE_FEE,
    upsell: { name: `${RENTAL.code} 케어 플러스`, summary: '무상 교체와 분기 점검 추가', monthlyFee: 30_000 },
  },
  40: {
    code: 40,
    name: '업무 자동화 솔루션',
    category: 'solution',
    summary: '데이터베이스 관리와 업무 흐름 자동화',
    monthlyFee: 830_000,
    upsell: { name: '업무 자동화 솔루션 운영 지원', summary: '전담 운영자와 월간 리포트', monthlyFee: 120_000 },
  },
  45: {
    code: 45,
    name: '버틀러 케어 서비스',
    category: 'butler',
    summary: '시설·행정 업무를 대신 챙기는 전담 매니저',
    monthlyFee: 450_000,
    upsell: { name: '버틀러 케어 서비스 프리미엄', summary: '야간·주말 대응 추가', monthlyFee: 90_000 },
  },
  20: {
    code: 20,
    name: '하드웨어 스타터 세트',
    category: 'hardware',
    summary: '감지기·단말·게이트웨이 기본 구성',
    monthlyFee: 200_000,
    upsell: { name: '하드웨어 스타터 세트 확장 모듈', summary: '센서 5개와 예비 단말 추가', monthlyFee: 40_000 },
  },
});

export const productFor = (need: Need): Product => PRODUCTS[PRODUCT_RULES[need]]!;
