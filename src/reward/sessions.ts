import { notFound } from '../errors.js';
import { mergedIndexRange, type Store } from '../store/port.js';
import { decodeList } from '../store/codec.js';
import { sessionCodec } from './codecs.js';
import { K } from './keys.js';
import { checkId, clampLimit } from './ledgers.js';
import { UNITS_PER_DAY, UNITS_PER_WORK_MONTH, kstDate, kstMonth } from './plan.js';

/** Units performed per KST day and calendar month by one member (newest month first). */
export async function readWorkSessions(store: Store, now: number, memberId: string, opts: { months?: number } = {}) {
  memberId = checkId(memberId);
  if (!(await store.get(K.member(memberId)))) throw notFound('member_not_found', `no member ${memberId}`);
  const today = kstDate(now);
  const month = kstMonth(now);
  // the member's months and sessions, and those of the layout before the partitions (no longer written)
  const idx = await mergedIndexRange(store, [K.sessionMonths(memberId), K.old.sessionMonths(memberId)], {
    reverse: true,
    limit: clampLimit(opts.months, 24, 200),
  });
  const own = await store.getMany(idx.map((e) => K.session(memberId, e.member)));
  const old = await store.getMany(idx.map((e) => K.old.session(memberId, e.member)));
  const recs = decodeList(sessionCodec, own.map((v, i) => v ?? old[i]));
  const [cur, before] = await store.getMany([K.session(memberId, month), K.old.session(memberId, month)]);
  const current = sessionCodec.decode(cur ?? before);
  const unitsToday = current?.days[today] ?? 0;
  const unitsMonth = current?.units ?? 0;
  return {
    member: memberId,
    limits: { units_per_day: UNITS_PER_DAY, units_per_month: UNITS_PER_WORK_MONTH },
    today: {
      date: today,
      units: unitsToday,
      remaining: Math.max(0, Math.min(UNITS_PER_DAY - unitsToday, UNITS_PER_WORK_MONTH - unitsMonth)),
    },
    month: { month, units: unitsMonth, remaining: Math.max(0, UNITS_PER_WORK_MONTH - unitsMonth) },
    months: recs.map((r) => ({
      month: r.month,
      units: r.units,
      days: Object.keys(r.days)
        .sort()
        .map((date) => ({ date, units: r.days[date]! })),
    })),
  };
}
