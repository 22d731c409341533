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
const T0 = Date.parse('2026-11-22T01:00:00Z');
const SECRET = 'coach-secret-for-owner-list-0123456789';

async function start(extra: Record<string, string> = {}) {
  const clock = new ManualClock(T0);
  const maru = await startMaru(
    loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('coach-owners'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV, ...extra }),
    { clock, logger: silent },
  );
  return { maru, clock };
}

const ACTIONS = [
  { id: 'walk', title: '아침 산책', phase: '티', reward: 10 },
  { id: 'read', title: '책 읽기', phase: '옴', reward: 20 },
  { id: 'call', title: '안부 전화', phase: '타', reward: 30 },
];

describe('staff list and read coaching owners', () => {
  let maru: Maru;
  let clock: ManualClock;
  let base: string;
  let staff: string;
  beforeAll(async () => {
    ({ maru, clock } = await start({ COACH_OWNER_SECRET: SECRET }));
    base = maru.url;
    staff = await signIn(base, ['staff']);
  });
  afterAll(() => maru.stop());

  it('lists owners newest first with counts by status and points, paged', async () => {
    for (const id of ['o1', 'o2', 'o3']) {
      expect((await call(base, 'PUT', `/api/coach/owners/${id}`, { vision: `${id}의 비전`, actions: ACTIONS }, bearer(staff))).status).toBe(201);
      clock.advance(1000);
    }
    const o2 = signOwner(SECRET, 'o2');
    await call(base, 'POST', '/api/coach/action', { actionId: 'read', status: '완료' }, { 'x-service-owner': o2 });
    await call(base, 'POST', '/api/coach/action', { actionId: 'walk', status: '진행' }, { 'x-service-owner': o2 });

    const all = await call(base, 'GET', '/api/coach/owners', undefined, bearer(staff));
    expect(all.status).toBe(200);
    expect(all.headers.get('cache-control')).toBe('no-store');
    expect(all.body).toMatchObject({ total: 3, limit: 20, offset: 0 });
    expect(all.body.owners.map((o: { ownerId: string }) => o.ownerId)).toEqual(['o3', 'o2', 'o1']);
    expect(all.body.owners[1]).toMatchObject({
      ownerId: 'o2',
      header: o2,
      vision: 'o2의 비전',
      timeZone: 'Asia/Seoul',
      points: 20,
      actions: { 대기: 1, 진행: 1, 완료: 1 },
    });

    const page = await call(base, 'GET', '/api/coach/owners?limit=1&offset=1', undefined, bearer(staff));
    expect(page.body).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect(page.body.owners.map((o: { ownerId: string }) => o.ownerId)).toEqual(['o2']);
    expect((await call(base, 'GET', '/api/coach/owners?offset=3', undefined, bearer(staff))).body.owners).toEqual([]);
  });

  it('re-registering keeps the owner once in the list, in place, with statuses, payments and points of kept actions', async () => {
    const o2 = signOwner(SECRET, 'o2');
    // read (완료, paid) kept with a new title and reward; walk (진행) dropped; a new action joins as 대기
    const edit = await call(
      base,
      'PUT',
      '/api/coach/owners/o2',
      { actions: [{ ...ACTIONS[1], title: '책 20쪽 읽기', reward: 40 }, { id: 'new', title: '새 실천', phase: '음', reward: 5 }] },
      bearer(staff),
    );
    expect(edit.status).toBe(200);
    expect(edit.body.actions).toMatchObject([
      { id: 'read', title: '책 20쪽 읽기', reward: 40, status: '완료' },
      { id: 'new', status: '대기' },
    ]);
    expect(edit.body.actions[0].paidAt).toBeDefined();
    expect(edit.body.vision).toBeUndefined();
    // completing the kept action again pays nothing: its reward was paid before the edit
    const again = await call(base, 'POST', '/api/coach/action', { actionId: 'read', status: '완료' }, { 'x-service-owner': o2 });
    expect(again.body).toMatchObject({ rewarded: false, points: 20 });

    const list = await call(base, 'GET', '/api/coach/owners', undefined, bearer(staff));
    expect(list.body.total).toBe(3);
    expect(list.body.owners.map((o: { ownerId: string }) => o.ownerId)).toEqual(['o3', 'o2', 'o1']);
    expect(list.body.owners[1]).toMatchObject({ points: 20, actions: { 대기: 1, 진행: 0, 완료: 1 } });
    expect(list.body.owners[1].vision).toBeUndefined();

    const one = await call(base, 'GET', '/api/coach/owners/o2', undefined, bearer(staff));
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ ownerId: 'o2', header: o2, points: 20, timeZone: 'Asia/Seoul' });
    expect(one.body.actions.map((a: { id: string }) => a.id)).toEqual(['read', 'new']);
  });

  it('refuses bad input with the shared error shape', async () => {
    const cases: [string, number, string][] = [
      ['/api/coach/owners?limit=0', 400, 'invalid_query'],
      ['/api/coach/owners?limit=101', 400, 'invalid_query'],
      ['/api/coach/owners?limit=1.5', 400, 'invalid_query'],
      ['/api/coach/owners?limit=abc', 400, 'invalid_query'],
      ['/api/coach/owners?offset=-1', 400, 'invalid_query'],
      ['/api/coach/owners?offset=100001', 400, 'invalid_query'],
      ['/api/coach/owners?limit=1&limit=2', 400, 'invalid_query'],
      ['/api/coach/owners?page=2', 400, 'invalid_query'],
      ['/api/coach/owners/a.b', 400, 'invalid_params'],
      [`/api/coach/owners/${'x'.repeat(65)}`, 400, 'invalid_params'],
      ['/api/coach/owners/nobody', 404, 'owner_not_found'],
    ];
    for (const [path, status, code] of cases) {
      const r = await call(base, 'GET', path, undefined, bearer(staff));
      expect({ path, status: r.status, code: r.body?.error?.code }).toEqual({ path, status, code });
      expect(typeof r.body.error.message).toBe('string');
    }
    const field = await call(base, 'GET', '/api/coach/owners?limit=0', undefined, bearer(staff));
    expect(field.body.error.details.issues[0]).toMatchObject({ field: 'limit' });
  });

  it('refuses a missing (401) or wrong-role (403) credential on both routes; an operator passes', async () => {
    const trader = await signIn(base, ['trader']);
    const operator = await signIn(base, ['operator']);
    for (const path of ['/api/coach/owners', '/api/coach/owners/o1']) {
      const none = await call(base, 'GET', path);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(none.body.error.code).toBeTypeOf('string');
      expect((await call(base, 'GET', path, undefined, bearer(`mt_${'A'.repeat(43)}`))).status).toBe(401);
      const wrong = await call(base, 'GET', path, undefined, bearer(trader));
      expect(wrong.status).toBe(403);
      expect(wrong.body.error.code).toBeTypeOf('string');
      // the owner header is no staff credential
      expect((await call(base, 'GET', path, undefined, { 'x-service-owner': signOwner(SECRET, 'o1') })).status).toBe(401);
      expect((await call(base, 'GET', path, undefined, bearer(operator))).status).toBe(200);
    }
  });
});

describe('the owner list without COACH_OWNER_SECRET', () => {
  let maru: Maru;
  beforeAll(async () => {
    ({ maru } = await start());
  });
  afterAll(() => maru.stop());

  it('is empty at first and names the bare owner id as the header', async () => {
    const staff = await signIn(maru.url, ['staff']);
    expect((await call(maru.url, 'GET', '/api/coach/owners', undefined, bearer(staff))).body).toEqual({ owners: [], total: 0, limit: 20, offset: 0 });
    await call(maru.url, 'PUT', '/api/coach/owners/kim', { actions: [] }, bearer(staff));
    const list = await call(maru.url, 'GET', '/api/coach/owners', undefined, bearer(staff));
    expect(list.body.owners).toMatchObject([{ ownerId: 'kim', header: 'kim', points: 0, actions: { 대기: 0, 진행: 0, 완료: 0 } }]);
  });
});
