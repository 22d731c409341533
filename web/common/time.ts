/**
 * One time-zone rule for every page: an instant is shown in Korea Standard Time (Asia/Seoul, no
 * daylight saving) with the zone written after it, and a date always carries its year:
 * "2026-11-25 13:05 KST". The pages format times only through these functions, whatever zone the
 * browser is in.
 */
export const ZONE = 'Asia/Seoul';
export const ZONE_NAME = 'KST';

/** An instant: epoch milliseconds, an ISO string, or a Date. */
export type Instant = number | string | Date;

const parts = new Intl.DateTimeFormat('en-US', {
  timeZone: ZONE,
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});

function fields(t: Instant): Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', string> | null {
  const d = t instanceof Date ? t : new Date(t);
  if (Number.isNaN(d.getTime())) return null;
  const out: Record<string, string> = {};
  for (const p of parts.formatToParts(d)) out[p.type] = p.value;
  return out as Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', string>;
}

const text = (t: Instant) => (t instanceof Date ? t.toISOString() : String(t));

/** "2026-11-25 13:05 KST" (with `seconds`: "2026-11-25 13:05:09 KST"); text that is no instant is shown as it is. */
export function kst(t: Instant, opts: { seconds?: boolean; zone?: boolean } = {}): string {
  const f = fields(t);
  if (!f) return text(t);
  const clock = `${f.hour}:${f.minute}${opts.seconds ? `:${f.second}` : ''}`;
  return `${f.year}-${f.month}-${f.day} ${clock}${opts.zone === false ? '' : ` ${ZONE_NAME}`}`;
}

/** The KST calendar date of an instant: "2026-11-25". */
export function kstDate(t: Instant): string {
  const f = fields(t);
  return f ? `${f.year}-${f.month}-${f.day}` : text(t);
}

/** The KST time of day, for live feeds of today: "13:05:09 KST" (`seconds: false`: "13:05 KST"). */
export function kstTime(t: Instant, opts: { seconds?: boolean } = {}): string {
  const f = fields(t);
  if (!f) return text(t);
  return `${f.hour}:${f.minute}${opts.seconds === false ? '' : `:${f.second}`} ${ZONE_NAME}`;
}

/** A period, the zone written once: "2026-01-02 09:00 – 2026-01-04 13:15 KST". */
export function kstSpan(from: Instant, to: Instant): string {
  return `${kst(from, { zone: false })} – ${kst(to)}`;
}
