// Amounts, times and error messages of the wallet page: token amounts are exact (BigInt minor units,
// 6 decimals, never a float), times in KST with the zone shown, server errors in Korean.
import { kst, kstDate } from '../common/time.js';

export const UNIT = 1_000_000n;

/** Minor units as a human amount: thousands grouped, every significant decimal kept (at least 2). */
export function tokens(units: string | bigint): string {
  const b = typeof units === 'bigint' ? units : BigInt(units);
  const neg = b < 0n;
  const a = neg ? -b : b;
  const whole = (a / UNIT).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  let frac = (a % UNIT).toString().padStart(6, '0').replace(/0+$/, '');
  if (frac.length < 2) frac = frac.padEnd(2, '0');
  return `${neg ? '-' : ''}${whole}.${frac}`;
}

/** A typed token amount (commas allowed, at most 6 decimals) in minor units; null when it is not one. */
export function parseTokens(text: string): bigint | null {
  const t = text.replace(/[,\s]/g, '');
  const m = /^(\d{1,24})(?:\.(\d{1,6}))?$/.exec(t);
  if (!m) return null;
  return BigInt(m[1]!) * UNIT + BigInt((m[2] ?? '').padEnd(6, '0'));
}

/** Won: grouped, no decimals. */
export const krw = (n: number) => `${Math.round(n).toLocaleString('ko-KR')}원`;

/** A decimal the server sends as text (a peg rate, "1.000000"): grouped, trailing zeros dropped, at least 2 decimals. */
export function decimal(text: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) return text;
  let frac = (m[3] ?? '').replace(/0+$/, '');
  if (frac.length < 2) frac = frac.padEnd(2, '0');
  return `${m[1]}${m[2]!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${frac}`;
}

/** An instant in KST, with the zone (the pages' one rule, web/common/time.ts): "2026-11-25 13:05 KST". */
export const when = (ms: number) => kst(ms);

/** Today's date in KST as YYYY-MM-DD. */
export { kstDate };
/** 00:00 KST of a YYYY-MM-DD date, as an ISO time the statement route takes. */
export const kstMidnight = (date: string) => `${date}T00:00:00+09:00`;
/** The day after a YYYY-MM-DD date. */
export function nextDay(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
}

/** What a transfer's code means, in Korean. */
export const CODE_NAMES: Record<string, string> = {
  onramp: '충전',
  challenge_fee: '챌린지 참가비',
  challenge_purchase: '챌린지 구매',
  violation: '규칙 위반',
  learning_credit: '학습 크레딧',
  collateral: '담보 예치',
  collateral_deduction: '담보 차감 (규칙 위반)',
  collateral_refund: '담보 반환',
  payout: '수익 지급',
  payout_platform: '플랫폼 몫',
  pool_funding: '지급 풀 적립',
  offramp: '출금',
  offramp_fee: '출금 수수료',
  offramp_return: '출금 반환',
  reversal: '정정',
};
export const codeName = (code: string) => CODE_NAMES[code] ?? code;

/** The server's error codes in Korean; an unknown code shows the server's own message. */
const ERRORS: Record<string, string> = {
  unauthorized: '로그인이 필요합니다.',
  invalid_token: '로그인이 만료되었거나 올바르지 않습니다. 다시 로그인해 주세요.',
  forbidden: '이 계정으로는 할 수 없는 요청입니다.',
  insufficient_balance: '잔액이 부족합니다.',
  invalid_amount: '금액이 올바르지 않습니다.',
  invalid_body: '입력한 값이 올바르지 않습니다.',
  invalid_query: '입력한 값이 올바르지 않습니다.',
  invalid_period: '기간이 올바르지 않습니다. 시작일은 종료일보다 앞서야 합니다.',
  period_too_long: '기간에 거래가 너무 많습니다. 더 짧은 기간을 선택해 주세요.',
  invalid_week: '주 형식이 올바르지 않습니다 (예: 2026-W47).',
  week_not_finished: '아직 끝나지 않은 주입니다.',
  account_not_found: '계정을 찾을 수 없습니다.',
  challenge_not_found: '챌린지를 찾을 수 없습니다.',
  challenge_not_funded: '담보가 예치된 챌린지가 아닙니다.',
  challenge_active: '진행 중인 챌린지가 있습니다.',
  peg_unavailable: '시세를 가져올 수 없습니다. 잠시 후 다시 시도해 주세요.',
  banking_not_configured: '은행 연결이 설정되어 있지 않습니다.',
  bank_unavailable: '은행이 응답하지 않습니다. 잠시 후 다시 시도해 주세요.',
  chain_unavailable: '체인이 응답하지 않습니다. 잠시 후 다시 시도해 주세요.',
  chain_key_not_configured: '체인 공개키가 설정되어 있지 않아 검증할 수 없습니다.',
  chain_not_configured: '체인이 설정되어 있지 않습니다.',
  tree_head_signature_invalid: '체인 트리 헤드의 서명이 올바르지 않습니다 (위조).',
  tree_head_out_of_order: '체인 트리 헤드가 이전에 검증한 것보다 오래되었습니다.',
  tree_head_inconsistent: '체인 기록이 이전에 검증한 것과 일치하지 않습니다 (기록 변조).',
  offramp_not_found: '출금 내역을 찾을 수 없습니다.',
  receipt_not_found: '영수증을 찾을 수 없습니다.',
  rate_limited: '요청이 너무 많습니다. 잠시 후 다시 시도해 주세요.',
  idempotency_in_progress: '같은 요청을 처리하고 있습니다.',
  public_url_not_configured: '허브 주소가 설정되어 있지 않습니다.',
  sso_unavailable: '은행 로그인 서비스에 연결할 수 없습니다.',
};

export interface ApiError {
  code?: string;
  message?: string;
}
/** A refusal in Korean, with the server's own words after it. */
export function errorText(body: unknown, status: number, what: string): string {
  const e = (body as { error?: ApiError } | null)?.error ?? {};
  const ko = (e.code && ERRORS[e.code]) ?? `${what}에 실패했습니다 (HTTP ${status}).`;
  return e.message ? `${ko} (서버: ${e.message})` : ko;
}
