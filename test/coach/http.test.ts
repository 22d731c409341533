import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { signOwner } from '../../src/coach/owner-id.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';

const silent = pino({ level: 'silent' });
// 23:30 in Seoul on 22 Nov = 14:30 UTC; still 22 Nov in UTC, already 23 Nov in Seoul after 15:00 UTC
const T0 = Date.parse('2026-11-22T14:30:00Z');
const SECRET = 'coach-secret-for-tests-0123456789';

async function start(extra: Record<string, string> = {}) {
  const clock = new ManualClock(T0);
  const maru = await startMaru(
    loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('coach-http'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV, ...extra }),
    { clock, logger: silent },
  );
  return { maru, clock };
}

const ACTIONS = [
  { id: 'walk', title: '아침 산책 20분', phase: '티', reward: 10 },
  { id: 'read', title: '책 10쪽 읽기', phase: '옴', reward: 20 },
  { id: 'call', title: '고객 한 분께 안부 전화', phase: '타', reward: 30 },
  { id: 'note', title: '하루 회고 쓰기', phase: '음', reward: 15 },
];

describe('coaching routes (owner id in the header)', () => {
  let maru: Maru;
  let clock: ManualClock;
  let base: string;
  let staff: string;
  beforeAll(async () => {
    ({ maru, clock } = await start());
    base = maru.url;
    staff = await signIn(base, ['staff']);
  });
  afterAll(() => maru.stop());
  const as = (owner: string) => ({ 'x-service-owner': owner });

  it('registers an owner (staff only), then profile, nudge and actions', async () => {
    expect((await call(base, 'PUT', '/api/coach/owners/kim', { actions: [] })).status).toBe(401);
    const reader = await signIn(base, ['trader']);
    expect((await call(base, 'PUT', '/api/coach/owners/kim', { actions: [] }, bearer(reader))).status).toBe(403);

    const reg = await call(base, 'PUT', '/api/coach/owners/kim', { vision: '건강한 팀을 만든다', actions: ACTIONS }, bearer(staff));
    expect(reg.status).toBe(201);
    expect(reg.body).toMatchObject({ ownerId: 'kim', header: 'kim', vision: '건강한 팀을 만든다', timeZone: 'Asia/Seoul', points: 0 });

    const p = await call(base, 'GET', '/api/coach/profile', undefined, as('kim'));
    expect(p.status).toBe(200);
    expect(p.body.actions.map((a: { phase: string }) => a.phase)).toEqual(['티', '옴', '타', '음']);
    expect(p.body.actions[0]).toMatchObject({ id: 'walk', title: '아침 산책 20분', phase: '티', status: '대기', reward: 10 });

    const n1 = await call(base, 'GET', '/api/coach/nudge', undefined, as('kim'));
    expect(n1.status).toBe(200);
    expect(n1.body.date).toBe('2026-11-22');
    expect(n1.body.message).toContain(n1.body.action.title);
    expect(n1.body.vision).toBe('건강한 팀을 만든다');
    // the same card all day
    clock.advance(20 * 60_000);
    expect((await call(base, 'GET', '/api/coach/nudge', undefined, as('kim'))).body).toEqual(n1.body);
    // past midnight in Seoul (still the 22nd in UTC) it is the owner's next day
    clock.advance(20 * 60_000);
    expect((await call(base, 'GET', '/api/coach/nudge', undefined, as('kim'))).body.date).toBe('2026-11-23');

    // set, never toggle: the same status twice is the same answer; 완료 pays once
    const a1 = await call(base, 'POST', '/api/coach/action', { actionId: 'read', status: '진행' }, as('kim'));
    expect(a1.status).toBe(200);
    expect(a1.body).toMatchObject({ action: { id: 'read', status: '진행' }, rewarded: false, reward: 20, points: 0 });
    expect((await call(base, 'POST', '/api/coach/action', { actionId: 'read', status: '진행' }, as('kim'))).body.action.status).toBe('진행');
    const done = await call(base, 'POST', '/api/coach/action', { actionId: 'read', status: '완료' }, as('kim'));
    expect(done.body).toMatchObject({ action: { status: '완료', completedOn: '2026-11-23' }, rewarded: true, reward: 20, points: 20 });
    const twice = await call(base, 'POST', '/api/coach/action', { actionId: 'read', status: '완료' }, as('kim'));
    expect(twice.body).toMatchObject({ rewarded: false, points: 20 });
    // back to 진행 and 완료 again still pays nothing more
    await call(base, 'POST', '/api/coach/action', { actionId: 'read', status: '진행' }, as('kim'));
    expect((await call(base, 'POST', '/api/coach/action', { actionId: 'read', status: '완료' }, as('kim'))).body.points).toBe(20);
    // concurrent 완료 of another action: paid exactly once
    const race = await Promise.all(
      Array.from({ length: 8 }, () => call(base, 'POST', '/api/coach/action', { actionId: 'call', status: '완료' }, as('kim'))),
    );
    expect(race.filter((r) => r.body.rewarded)).toHaveLength(1);
    expect((await call(base, 'GET', '/api/coach/profile', undefined, as('kim'))).body.points).toBe(50);

    // re-registration keeps status and payments of kept actions
    const again = await call(base, 'PUT', '/api/coach/owners/kim', { actions: ACTIONS.slice(1) }, bearer(staff));
    expect(again.status).toBe(200);
    expect(again.body.vision).toBeUndefined();
    expect(again.body.actions[0]).toMatchObject({ id: 'read', status: '완료' });
    expect(again.body.points).toBe(50);
  });

  it('204 when no open action is left; a profile without vision', async () => {
    await call(base, 'PUT', '/api/coach/owners/lee', { actions: [{ id: 'a', title: '하나', phase: '음', reward: 1 }] }, bearer(staff));
    expect((await call(base, 'GET', '/api/coach/profile', undefined, as('lee'))).body.vision).toBeUndefined();
    await call(base, 'POST', '/api/coach/action', { actionId: 'a', status: '완료' }, as('lee'));
    const n = await call(base, 'GET', '/api/coach/nudge', undefined, as('lee'));
    expect(n.status).toBe(204);
    expect(n.text).toBe('');
  });

  it('refuses bad input and changes nothing', async () => {
    await call(base, 'PUT', '/api/coach/owners/park', { actions: ACTIONS }, bearer(staff));
    const cases: [string, string, unknown, Record<string, string>, number, string][] = [
      ['GET', '/api/coach/profile', undefined, {}, 401, 'owner_required'],
      ['GET', '/api/coach/nudge', undefined, {}, 401, 'owner_required'],
      ['POST', '/api/coach/action', { actionId: 'walk', status: '완료' }, {}, 401, 'owner_required'],
      ['GET', '/api/coach/profile', undefined, as('bad owner!'), 401, 'invalid_owner'],
      ['GET', '/api/coach/profile', undefined, as('nobody'), 404, 'owner_not_found'],
      ['GET', '/api/coach/nudge', undefined, as('nobody'), 404, 'owner_not_found'],
      ['POST', '/api/coach/action', { actionId: 'walk', status: '완료' }, as('nobody'), 404, 'owner_not_found'],
      ['POST', '/api/coach/action', { actionId: 'walk', status: '끝' }, as('park'), 400, 'invalid_body'],
      ['POST', '/api/coach/action', { actionId: 'walk', status: 'done' }, as('park'), 400, 'invalid_body'],
      ['POST', '/api/coach/action', { actionId: 'walk' }, as('park'), 400, 'invalid_body'],
      ['POST', '/api/coach/action', { actionId: 'nope', status: '완료' }, as('park'), 404, 'action_not_found'],
      ['POST', '/api/coach/action', { actionId: '../x', status: '완료' }, as('park'), 400, 'invalid_body'],
      ['PUT', '/api/coach/owners/park', { actions: [{ id: 'a', title: 't', phase: '가', reward: 1 }] }, bearer(staff), 400, 'invalid_body'],
      ['PUT', '/api/coach/owners/park', { actions: [{ id: 'a', title: 't', phase: '티', reward: -1 }] }, bearer(staff), 400, 'invalid_body'],
      ['PUT', '/api/coach/owners/park', { timeZone: 'Mars/Olympus', actions: [] }, bearer(staff), 400, 'invalid_body'],
      ['PUT', '/api/coach/owners/park', { actions: [ACTIONS[0], ACTIONS[0]] }, bearer(staff), 400, 'duplicate_action'],
      ['PUT', '/api/coach/owners/a.b', { actions: [] }, bearer(staff), 400, 'invalid_params'],
    ];
    for (const [method, path, body, headers, status, code] of cases) {
      const r = await call(base, method, path, body, headers);
      expect({ path, body, headers, status: r.status, code: r.body?.error?.code }).toEqual({ path, body, headers, status, code });
    }
    const p = await call(base, 'GET', '/api/coach/profile', undefined, as('park'));
    expect(p.body.actions.every((a: { status: string }) => a.status === '대기')).toBe(true);
    expect(p.body.actions).toHaveLength(4);
  });
});

describe('coaching routes with COACH_OWNER_SECRET (signed owner ids)', () => {
  let maru: Maru;
  let base: string;
  beforeAll(async () => {
    ({ maru } = await start({ COACH_OWNER_SECRET: SECRET }));
    base = maru.url;
  });
  afterAll(() => maru.stop());

  it('accepts only the signed id; a forged or bare id is 401', async () => {
    const staff = await signIn(base, ['staff']);
    const reg = await call(base, 'PUT', '/api/coach/owners/choi', { actions: ACTIONS }, bearer(staff));
    expect(reg.body.header).toBe(signOwner(SECRET, 'choi'));
    const ok = await call(base, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': reg.body.header });
    expect(ok.status).toBe(200);
    for (const forged of ['choi', `choi.${'A'.repeat(43)}`, signOwner('another-secret-0123456789', 'choi'), `kim.${reg.body.header.split('.')[1]}`]) {
      const r = await call(base, 'POST', '/api/coach/action', { actionId: 'walk', status: '완료' }, { 'x-service-owner': forged });
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('invalid_owner');
    }
    expect((await call(base, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': reg.body.header })).body.points).toBe(0);
  });
});
