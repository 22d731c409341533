// Amounts, times and error messages of the wallet page: token amounts are BigInt minor units (6
// decimals, never a float), shown rounded to 2 decimals with the exact amount on hover, times in KST with the zone shown (server errors are told in Korean by
// the pages' client, web/common/messages.ts).
import { kst, kstDate } from '../common/time.js';

export const UNIT = 1_000_000n;

/** Minor units exactly: thousands grouped, every significant decimal kept (at least 2). */
export function exactTokens(units: string | bigint): string {
  const b = typeof units === 'bigint' ? units : BigInt(units);
  const neg = b < 0n;
  const a = neg ? -b : b;
  const whole = (a / UNIT).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  let frac = (a % UNIT).toString().padStart(6, '0').replace(/0+$/, '');
  if (frac.length < 2) frac = frac.padEnd(2, '0');
  return `${neg ? '-' : ''}${whole}.${frac}`;
}

/** Minor units as a person reads them: grouped, rounded (half away from zero) to 2 decimals. */
export function tokens(units: string | bigint): string {
  const b = typeof units === 'bigint' ? units : BigInt(units);
  const neg = b < 0n;
  const a = ((neg ? -b : b) + 5_000n) / 10_000n; // hundredths
  const whole = (a / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${neg && a > 0n ? '-' : ''}${whole}.${(a % 100n).toString().padStart(2, '0')}`;
}

/** Shows an amount rounded in `node`, the exact one on hover (title) and in data-units (minor units). */
export function showTokens(node: HTMLElement, units: string | bigint): HTMLElement {
  node.textContent = tokens(units);
  node.title = `${exactTokens(units)} 토큰`;
  node.dataset.units = units.toString();
  return node;
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
