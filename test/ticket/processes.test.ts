import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRedisStore } from '../../src/store/redis.js';
import { K } from '../../src/ticket/keys.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { legacyReservation } from '../support/ticket.js';
import { connectTopics } from '../support/ws.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';

// Two real hub processes (dist/src/main.js) sharing one Redis: the atomicity claims must hold
// between processes, not only between requests of one process.
const redis = await redisOrSkip();
const prefix = uniquePrefix('ticket-proc');
const started: HubProcess[] = [];
afterAll(async () => {
  for (const p of started) await p.stop('SIGKILL');
  await deletePrefix(redis.url, prefix);
});

/** A staff token, issued on one process and valid on both (the sessions live in the shared store). */
let staff = '';
const post = async (url: string, body?: unknown) => {
  const r = await fetch(url, {
    method: 'POST',
    headers: { ...bearer(staff), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
};

describe.skipIf(!redis.available)('tickets on two hub processes sharing Redis', () => {
  let a: HubProcess;
  let b: HubProcess;

  beforeAll(async () => {
    // LOG_LEVEL stays info: startHubProcess waits for the "maru listening" line
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, ...AUTH_TEST_ENV };
    [a, b] = await Promise.all([startHubProcess({ ...env, DATA_DIR: tempDir('tp-a') }), startHubProcess({ ...env, DATA_DIR: tempDir('tp-b') })]);
    started.push(a, b);
    staff = await signIn(a.url, ['staff']);
  });

  it('50 simultaneous check-ins split over both processes: exactly one 201; scanners on both hear it', async () => {
    const show = (await post(`${a.url}/api/shows`, { name: '두 프로세스', venue: '홀', date: '2026-12-31' })).body;
    const t = (await post(`${b.url}/api/reservations`, { show_id: show.id, seat: 'P-1', amount_paid: 10000 })).body;
    const onA = await connectTopics(a.url);
    const onB = await connectTopics(b.url);
    await onA.auth(staff);
    await onB.auth(staff);
    await onA.subscribe('checkins');
    await onB.subscribe('checkins');

    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        post(`${(i % 2 ? a : b).url}/api/checkin`, { code: t.code, source: 'camera', scanner: `proc-${i % 2 ? 'a' : 'b'}-${i}` }),
      ),
    );
    const ok = answers.filter((x) => x.status === 201);
    expect(ok).toHaveLength(1);
    expect(answers.filter((x) => x.status === 409 && x.body.error.code === 'already_redeemed')).toHaveLength(49);
    for (const s of [onA, onB]) {
      expect((await s.next()).data).toMatchObject({ type: 'checkin', code: t.code, scanner: ok[0]!.body.checkin.scanner });
      await expect(s.next(300)).rejects.toThrow(/no frame/);
      s.close();
    }
    const audit = await (await fetch(`${a.url}/api/checkins/audit?reservation_id=${t.reservation_id}`, { headers: bearer(staff) })).json();
    expect(audit.entries).toHaveLength(50);
    expect(audit.entries.filter((e: any) => e.result === 'ok')).toHaveLength(1);
  });

  it('a reservation without cards gets one set under concurrent first lookups on both processes', async () => {
    const store = await openRedisStore({ url: redis.url, prefix });
    try {
      await legacyReservation(store, 'r_oldrecord1', 'TK-W4V3XP7N', { show_id: 's_oldshow000', seat: 'Z-9', amount_paid: 0 });
      const views = await Promise.all(
        Array.from({ length: 24 }, (_, i) => fetch(`${(i % 2 ? a : b).url}/api/mticket/TK-W4V3XP7N`).then((r) => r.json())),
      );
      const first = JSON.stringify(views[0].bingo_cards);
      expect(views[0].bingo_cards).toHaveLength(2);
      for (const v of views) expect(JSON.stringify(v.bingo_cards)).toBe(first);
      expect(JSON.stringify((await store.get<any>(K.reservation('r_oldrecord1')))!.bingo_cards)).toBe(first);
    } finally {
      await store.close();
    }
  });
});
