/** How the back office writes times (KST, with the zone), amounts (won) and a ticket's status. */

import type { BookingRow as Booking } from '../../src/ticket/lists.js';
import type { AttemptResult } from '../../src/ticket/records.js';

/** One booking as GET /api/shows/:id/tickets lists it. */
export type { Booking };

const kst = new Intl.DateTimeFormat('ko-KR', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'Asia/Seoul' });
const kstDate = new Intl.DateTimeFormat('ko-KR', { dateStyle: 'medium', timeZone: 'UTC' });
const won = new Intl.NumberFormat('ko-KR');

/** An instant in Korea Standard Time, zone named: "2026. 12. 24. 오후 7:00 KST". */
export const when = (iso: string) => `${kst.format(new Date(iso))} KST`;

/** A show's date: a date alone stays a date; a date-time is shown in KST. */
export const showDate = (date: string) => (/^\d{4}-\d{2}-\d{2}$/.test(date) ? kstDate.format(new Date(`${date}T00:00:00Z`)) : when(date));

/** Won with thousands separators: "88,000원". */
export const amount = (n: number) => `${won.format(n)}원`;

/** A datetime-local value (typed as Korean time) as an ISO date-time with the +09:00 offset. */
export const kstInput = (value: string) => `${value.length === 16 ? `${value}:00` : value}+09:00`;

export function statusText(b: Booking): string {
  if (b.status === 'checked_in') {
    const gate = b.checked_in_by?.gate ? ` · ${b.checked_in_by.gate}` : '';
    return `입장 · checked in ${b.checked_in_at ? when(b.checked_in_at) : ''}${gate}`;
  }
  if (b.status === 'cancelled') {
    const at = b.cancelled_at ? ` ${when(b.cancelled_at)}` : '';
    return `취소 · cancelled${at}${b.cancel_reason ? ` — ${b.cancel_reason}` : ''}`;
  }
  return '유효 · valid';
}

/** Every result an audit entry can carry (a new one fails the build until it is named here). */
const RESULTS: Record<AttemptResult, string> = {
  ok: '입장 · ok',
  already_redeemed: '이미 입장 · already checked in',
  canceled: '취소된 티켓 · cancelled ticket',
  invalid: '없는 티켓 · invalid',
  malformed: '잘못된 코드 · malformed',
  rate_limited: '제한 · rate limited',
  conflict: '충돌(오프라인 중복 입장) · offline conflict',
  product: '이 명단 아님 · not on this list',
  invalid_time: '입장 시간 아님 · outside the list\'s hours',
  not_inside: '안에 없음(퇴장 불가) · not inside',
  reverted: '취소됨(되돌림) · undone',
};
export const resultText = (r: string) => RESULTS[r as AttemptResult] ?? r;
