import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, type Answer } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';

// The door over real HTTP on LMDB (docs/ticket.md, "The door"): check-in lists with their own
// tickets, rules, validity and devices; exits and people inside; staff undo; bad input; credentials.
const T0 = Date.parse('2026-12-24T18:00:00+09:00');
const clock = new ManualClock(T0);
let maru: Maru;
let base: string;
let staff: Record<string, string>;
let staffToken: string;

beforeAll(async () => {
  maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('ticket-door'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV }), {
    clock,
    logger: pino({ level: 'silent' }),
  });
  base = maru.url;
  staffToken = await signIn(base, ['staff']);
  staff = bearer(staffToken);
});
afterAll(() => maru?.stop());

async function device(gate: string, name: string) {
  const r = await call(base, 'POST', '/api/auth/devices', { gate, name }, staff);
  expect(r.status).toBe(201);
  return { id: r.body.device.id as string, auth: bearer(r.body.token) };
}

async function showWith(seats: (string | { seat: string; kind: string })[]) {
  const show = (await call(base, 'POST', '/api/shows', { name: '문 앞 공연', venue: '대극장', date: '2026-12-24T20:00:00+09:00' }, staff)).body;
  const tickets = [];
  for (const s of seats) {
    const { seat, kind } = typeof s === 'string' ? { seat: s, kind: undefined } : s;
    const r = await call(base, 'POST', '/api/reservations', { show_id: show.id, seat, amount_paid: 50000, holder: `홀더 ${seat}`, ...(kind ? { kind } : {}) }, staff);
    expect(r.status).toBe(201);
    tickets.push(r.body);
  }
  return { show, tickets };
}
const list = async (showId: string, body: Record<string, unknown>) => {
  const r = await call(base, 'POST', `/api/shows/${showId}/lists`, body, staff);
  expect(r.status, r.text).toBe(201);
  return r.body;
};
// camera scans: typed codes are limited to 20 a minute per client, and this clock stands still
const scan = (code: string, more: Record<string, unknown> = {}, auth = staff) => call(base, 'POST', '/api/checkin', { code, source: 'camera', ...more }, auth);
const door = async (showId: string) => (await call(base, 'GET', `/api/shows/${showId}/door`, undefined, staff)).body;
const inside = async (showId: string) => {
  const d = await door(showId);
  return { show: d.inside, ...Object.fromEntries(d.lists.map((l: any) => [l.id, l.inside])) };
};
const ticketStatus = async (code: string) => (await call(base, 'GET', `/api/mticket/${code}`)).body.status;
const errorOf = (a: Answer) => ({ status: a.status, code: a.body?.error?.code });

describe('check-in lists', () => {
  it('a show has the main list implicitly; lists are added with their rules and the default can move', async () => {
    const { show, tickets } = await showWith(['A-1']);
    const first = await call(base, 'GET', `/api/shows/${show.id}/lists`, undefined, staff);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ show_id: show.id, default_list_id: 'main', lists: [{ id: 'main', is_default: true, allow_multiple_entries: false, allow_entry_after_exit: true }] });
    const vip = await list(show.id, { name: 'VIP', seats: [{ from: 'A-1', to: 'A-10' }], valid_from: '2026-12-24T17:00:00+09:00', valid_until: '2026-12-24T23:00:00+09:00' });
    expect(vip).toMatchObject({ id: expect.stringMatching(/^cl_/), seats: [{ from: 'A-1', to: 'A-10' }], valid_from: '2026-12-24T08:00:00.000Z', is_default: false });
    const day = await list(show.id, { name: '1일차', is_default: true });
    const now = (await call(base, 'GET', `/api/shows/${show.id}/lists`, undefined, staff)).body;
    expect(now.default_list_id).toBe(day.id);
    expect(now.lists.map((l: any) => [l.id, l.is_default])).toEqual([['main', false], [vip.id, false], [day.id, true]]);
    // an old scanner's body (code only) enters on the show's default list
    const ok = await scan(tickets[0].code);
    expect(ok.status).toBe(201);
    expect(ok.body.checkin).toMatchObject({ list_id: day.id, type: 'entry' });
    expect(await inside(show.id)).toEqual({ show: 1, main: 0, [vip.id]: 0, [day.id]: 1 });
  });

  it('a list admits only its seat ranges and kinds (409 product); the scan names holder and seat', async () => {
    const { show, tickets } = await showWith(['A-2', 'A-10', 'A-11', { seat: 'C-1', kind: 'crew' }]);
    const vip = await list(show.id, { name: 'VIP', seats: [{ from: 'A-2', to: 'A-10' }] });
    const crew = await list(show.id, { name: '백스테이지', kinds: ['crew'] });
    const a2 = await scan(tickets[0].code, { list_id: vip.id });
    expect(a2.status).toBe(201);
    expect(a2.body.ticket).toMatchObject({ holder: '홀더 A-2', seat: 'A-2', status: 'checked_in' });
    expect(a2.body.list).toEqual({ id: vip.id, name: 'VIP' });
    expect((await scan(tickets[1].code, { list_id: vip.id })).status).toBe(201); // A-10 sorts after A-2 (natural order)
    const a11 = await scan(tickets[2].code, { list_id: vip.id });
    expect(errorOf(a11)).toEqual({ status: 409, code: 'product' });
    expect(a11.body.error.details.ticket).toMatchObject({ seat: 'A-11', holder: '홀더 A-11', status: 'entry_allowed' });
    expect(errorOf(await scan(tickets[0].code, { list_id: crew.id }))).toEqual({ status: 409, code: 'product' });
    expect((await scan(tickets[3].code, { list_id: crew.id })).status).toBe(201);
    // a list of another show: the ticket is not on it
    const other = await showWith(['Z-1']);
    expect(errorOf(await scan(other.tickets[0].code, { list_id: vip.id }))).toEqual({ status: 409, code: 'product' });
    const audit = (await call(base, 'GET', `/api/checkins/audit?reservation_id=${tickets[2].reservation_id}`, undefined, staff)).body.entries;
    expect(audit[0]).toMatchObject({ result: 'product', list_id: vip.id, type: 'entry' });
  });

  it('entry, exit and re-entry follow the list (allow_multiple_entries, allow_entry_after_exit); inside counts per list and show', async () => {
    const { show, tickets } = await showWith(['B-1', 'B-2', 'B-3']);
    const once = await list(show.id, { name: '한 번만', allow_entry_after_exit: false });
    const many = await list(show.id, { name: '자유 출입', allow_multiple_entries: true });
    const [t1, t2, t3] = tickets.map((t) => t.code);
    // main: one entry, an exit, entry again after it
    expect((await scan(t1)).status).toBe(201);
    expect(errorOf(await scan(t1))).toEqual({ status: 409, code: 'already_redeemed' });
    expect(await inside(show.id)).toMatchObject({ show: 1, main: 1 });
    const out = await scan(t1, { type: 'exit' });
    expect(out.status).toBe(201);
    expect(out.body.checkin).toMatchObject({ type: 'exit', list_id: 'main' });
    expect(await inside(show.id)).toMatchObject({ show: 0, main: 0 });
    expect(await ticketStatus(t1)).toBe('checked_in');
    expect((await scan(t1)).status).toBe(201);
    expect(await inside(show.id)).toMatchObject({ show: 1, main: 1 });
    // no entry after exit on this list
    expect((await scan(t2, { list_id: once.id })).status).toBe(201);
    expect((await scan(t2, { list_id: once.id, type: 'exit' })).status).toBe(201);
    expect(errorOf(await scan(t2, { list_id: once.id }))).toEqual({ status: 409, code: 'already_redeemed' });
    // multiple entries: in while in, still one person inside
    expect((await scan(t3, { list_id: many.id })).status).toBe(201);
    expect((await scan(t3, { list_id: many.id })).status).toBe(201);
    expect(await inside(show.id)).toMatchObject({ show: 2, main: 1, [once.id]: 0, [many.id]: 1 });
    // one person inside on two lists counts once for the show
    expect((await scan(t3)).status).toBe(201);
    expect(await inside(show.id)).toMatchObject({ show: 2, main: 2, [many.id]: 1 });
  });

  it('a list is valid only from/until (409 invalid_time, nothing changed)', async () => {
    const { show, tickets } = await showWith(['D-1']);
    const day2 = await list(show.id, { name: '2부', valid_from: '2026-12-24T18:10:00+09:00', valid_until: '2026-12-24T18:30:00+09:00' });
    const early = await scan(tickets[0].code, { list_id: day2.id });
    expect(errorOf(early)).toEqual({ status: 409, code: 'invalid_time' });
    expect(early.body.error.details).toMatchObject({ valid_from: '2026-12-24T09:10:00.000Z', valid_until: '2026-12-24T09:30:00.000Z' });
    expect(await ticketStatus(tickets[0].code)).toBe('entry_allowed');
    clock.set(Date.parse('2026-12-24T18:20:00+09:00'));
    try {
      expect((await scan(tickets[0].code, { list_id: day2.id })).status).toBe(201);
      clock.set(Date.parse('2026-12-24T18:30:01+09:00'));
      expect((await scan(tickets[0].code, { list_id: day2.id, type: 'exit' })).status).toBe(201); // an exit is always let out
      expect(errorOf(await scan(tickets[0].code, { list_id: day2.id }))).toEqual({ status: 409, code: 'invalid_time' });
    } finally {
      clock.set(T0);
    }
  });

  it('the check-in by reservation id takes the list and the type too; bad values are 400', async () => {
    const { show, tickets } = await showWith(['N-1']);
    const vip = await list(show.id, { name: 'VIP' });
    const byId = (body: unknown) => call(base, 'POST', `/api/tickets/${tickets[0].reservation_id}/checkin`, body, staff);
    const inn = await byId({ list_id: vip.id });
    expect(inn.status).toBe(201);
    expect(inn.body).toMatchObject({ checkin: { list_id: vip.id, type: 'entry' }, ticket: { holder: '홀더 N-1' } });
    expect(errorOf(await byId({ list_id: vip.id }))).toEqual({ status: 409, code: 'already_redeemed' });
    expect((await byId({ list_id: vip.id, type: 'exit' })).status).toBe(201);
    expect(errorOf(await byId({ type: 'exit' }))).toEqual({ status: 409, code: 'not_inside' });
    expect(errorOf(await byId({ type: 'in' }))).toEqual({ status: 400, code: 'invalid_body' });
    expect(await inside(show.id)).toMatchObject({ show: 0, main: 0, [vip.id]: 0 });
  });

  it('an exit of a ticket not inside is 409 not_inside and changes nothing', async () => {
    const { show, tickets } = await showWith(['E-1']);
    const r = await scan(tickets[0].code, { type: 'exit' });
    expect(errorOf(r)).toEqual({ status: 409, code: 'not_inside' });
    expect(await inside(show.id)).toMatchObject({ show: 0, main: 0 });
    expect((await scan(tickets[0].code)).status).toBe(201);
    expect((await scan(tickets[0].code, { type: 'exit' })).status).toBe(201);
    expect(errorOf(await scan(tickets[0].code, { type: 'exit' }))).toEqual({ status: 409, code: 'not_inside' });
    expect(await inside(show.id)).toMatchObject({ show: 0, main: 0 });
  });

  it('a list with devices is scanned by those devices only (403 device_not_on_list); staff always may', async () => {
    const { show, tickets } = await showWith(['F-1', 'F-2']);
    const mine = await device('F', 'door-f');
    const stranger = await device('G', 'door-g');
    const gated = await list(show.id, { name: '게이트 F', devices: [mine.id] });
    expect(errorOf(await scan(tickets[0].code, { list_id: gated.id, source: 'camera' }, stranger.auth))).toEqual({ status: 403, code: 'device_not_on_list' });
    expect(await ticketStatus(tickets[0].code)).toBe('entry_allowed');
    const ok = await scan(tickets[0].code, { list_id: gated.id, source: 'camera' }, mine.auth);
    expect(ok.status).toBe(201);
    expect(ok.body.checkin).toMatchObject({ scanner: 'door-f', gate: 'F' });
    expect((await scan(tickets[1].code, { list_id: gated.id })).status).toBe(201);
    // a device reads its show's lists and counters
    expect((await call(base, 'GET', `/api/shows/${show.id}/lists`, undefined, stranger.auth)).status).toBe(200);
    expect((await call(base, 'GET', `/api/shows/${show.id}/door`, undefined, stranger.auth)).body.inside).toBe(2);
  });

  it('simultaneous exits of one ticket: exactly one 201, the counter moves once', async () => {
    const { show, tickets } = await showWith(['G-1']);
    expect((await scan(tickets[0].code)).status).toBe(201);
    const answers = await Promise.all(Array.from({ length: 30 }, () => scan(tickets[0].code, { type: 'exit', source: 'camera' })));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409 && a.body.error.code === 'not_inside')).toHaveLength(29);
    expect(await inside(show.id)).toMatchObject({ show: 0, main: 0 });
  });
});

describe('undo', () => {
  const revert = (showId: string, listId: string, body: unknown, auth = staff) => call(base, 'POST', `/api/shows/${showId}/lists/${listId}/revert`, body, auth);

  it('staff undo a scan with a reason: a new audit entry, the ticket and counters move back, every scanner hears it', async () => {
    const { show, tickets } = await showWith(['H-1']);
    const t = tickets[0];
    const other = await connectTopics(base);
    await other.auth(staffToken);
    await other.subscribe(`door:${show.id}`);
    const holder = await connectTopics(base);
    await holder.subscribe(`mticket:${t.code}`);
    const entered = await scan(t.code);
    expect((await holder.next()).data).toMatchObject({ type: 'checkin', seat: 'H-1' });
    expect((await other.next()).data).toMatchObject({ type: 'entry', list_id: 'main', seat: 'H-1', scan: { id: entered.body.checkin.id } });
    const r = await revert(show.id, 'main', { reservation_id: t.reservation_id, scan_id: entered.body.checkin.id, reason: '잘못 스캔함' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'reverted', undo: { reverts: entered.body.checkin.id, reason: '잘못 스캔함' }, ticket: { status: 'entry_allowed', seat: 'H-1' } });
    expect((await other.next()).data).toMatchObject({ type: 'revert', list_id: 'main', scan: { id: entered.body.checkin.id, reverted: { reason: '잘못 스캔함' } }, status: 'entry_allowed' });
    other.close();
    expect((await holder.next()).data).toMatchObject({ type: 'checkin_reverted', status: 'entry_allowed', checked_in_at: null });
    holder.close();
    expect(await ticketStatus(t.code)).toBe('entry_allowed');
    expect(await inside(show.id)).toMatchObject({ show: 0, main: 0 });
    expect((await call(base, 'GET', `/api/shows/${show.id}/counts`, undefined, staff)).body).toMatchObject({ checked_in: 0 });
    const audit = (await call(base, 'GET', `/api/checkins/audit?reservation_id=${t.reservation_id}`, undefined, staff)).body.entries;
    expect(audit.map((e: any) => e.result)).toEqual(['reverted', 'ok']);
    expect(audit[0]).toMatchObject({ type: 'revert', reverts: entered.body.checkin.id, scan_id: r.body.undo.id, reason: '잘못 스캔함' });
    expect(audit[1]).toMatchObject({ type: 'entry', scan_id: entered.body.checkin.id }); // the scan's entry stays as it was
    // the ticket may enter again
    expect((await scan(t.code)).status).toBe(201);
  });

  it('refuses an undo of an undo, of a scan of another list, twice, of an unknown scan: 4xx, nothing changed', async () => {
    const { show, tickets } = await showWith(['I-1']);
    const t = tickets[0];
    const vip = await list(show.id, { name: 'VIP' });
    const a = await scan(t.code);
    const b = await scan(t.code, { list_id: vip.id });
    const undo = await revert(show.id, 'main', { reservation_id: t.reservation_id, scan_id: a.body.checkin.id, reason: '실수' });
    expect(undo.status).toBe(200);
    const before = { inside: await inside(show.id), status: await ticketStatus(t.code) };
    const auditBefore = (await call(base, 'GET', `/api/checkins/audit?reservation_id=${t.reservation_id}`, undefined, staff)).body.entries.length;
    expect(errorOf(await revert(show.id, 'main', { reservation_id: t.reservation_id, scan_id: undo.body.undo.id, reason: 'x' }))).toEqual({ status: 409, code: 'not_revertible' });
    expect(errorOf(await revert(show.id, 'main', { reservation_id: t.reservation_id, scan_id: b.body.checkin.id, reason: 'x' }))).toEqual({ status: 409, code: 'wrong_list' });
    expect(errorOf(await revert(show.id, 'main', { reservation_id: t.reservation_id, scan_id: a.body.checkin.id, reason: 'x' }))).toEqual({ status: 409, code: 'already_reverted' });
    expect(errorOf(await revert(show.id, 'main', { reservation_id: t.reservation_id, scan_id: 'sc_nosuchscan', reason: 'x' }))).toEqual({ status: 404, code: 'scan_not_found' });
    expect(errorOf(await revert(show.id, 'cl_nosuchlist', { reservation_id: t.reservation_id, scan_id: b.body.checkin.id, reason: 'x' }))).toEqual({ status: 404, code: 'list_not_found' });
    const otherShow = await showWith(['I-2']);
    expect(errorOf(await revert(otherShow.show.id, 'main', { reservation_id: t.reservation_id, scan_id: a.body.checkin.id, reason: 'x' }))).toEqual({ status: 404, code: 'invalid' });
    for (const bad of [{}, { reservation_id: t.reservation_id, scan_id: a.body.checkin.id }, { reservation_id: 'nope', scan_id: 'x', reason: 'r' }, { reservation_id: t.reservation_id, scan_id: 'x', reason: 'r', extra: 1 }]) {
      const r = await revert(show.id, 'main', bad);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_body');
    }
    expect(errorOf(await revert(show.id, 'not a list', { reservation_id: t.reservation_id, scan_id: 'x', reason: 'r' }))).toEqual({ status: 400, code: 'invalid_params' });
    expect({ inside: await inside(show.id), status: await ticketStatus(t.code) }).toEqual(before);
    expect((await call(base, 'GET', `/api/checkins/audit?reservation_id=${t.reservation_id}`, undefined, staff)).body.entries).toHaveLength(auditBefore);
  });

  it('30 simultaneous undos of one scan: one 200, the counters move back once', async () => {
    const { show, tickets } = await showWith(['J-1']);
    const a = await scan(tickets[0].code);
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => revert(show.id, 'main', { reservation_id: tickets[0].reservation_id, scan_id: a.body.checkin.id, reason: '동시' })),
    );
    expect(answers.filter((x) => x.status === 200)).toHaveLength(1);
    expect(answers.filter((x) => x.status === 409 && x.body.error.code === 'already_reverted')).toHaveLength(29);
    expect(await inside(show.id)).toMatchObject({ show: 0, main: 0 });
    expect((await call(base, 'GET', `/api/shows/${show.id}/counts`, undefined, staff)).body.checked_in).toBe(0);
  });
});

describe('bad input and credentials on the new routes', () => {
  it('a list rule that contradicts itself is 400 invalid_rule and no list is added', async () => {
    const { show } = await showWith(['K-1']);
    const backwards = await call(base, 'POST', `/api/shows/${show.id}/lists`, { name: '거꾸로', valid_from: '2026-12-25T00:00:00+09:00', valid_until: '2026-12-24T00:00:00+09:00' }, staff);
    expect(errorOf(backwards)).toEqual({ status: 400, code: 'invalid_rule' });
    expect(backwards.body.error.details).toEqual({ field: 'valid_until' });
    const seats = await call(base, 'POST', `/api/shows/${show.id}/lists`, { name: '좌석', seats: [{ from: 'B-10', to: 'B-2' }] }, staff);
    expect(errorOf(seats)).toEqual({ status: 400, code: 'invalid_rule' });
    for (const bad of [{}, { name: '' }, { name: 'x', kinds: [] }, { name: 'x', valid_from: 'tomorrow' }, { name: 'x', devices: ['me'] }, { name: 'x', allow_multiple_entries: 'yes' }, { name: 'x', is_default: true, extra: 1 }]) {
      const r = await call(base, 'POST', `/api/shows/${show.id}/lists`, bad, staff);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.error.code).toBe('invalid_body');
    }
    expect(errorOf(await call(base, 'POST', '/api/shows/s_nosuchshow/lists', { name: 'x' }, staff))).toEqual({ status: 404, code: 'show_not_found' });
    expect(errorOf(await call(base, 'GET', '/api/shows/s_nosuchshow/door', undefined, staff))).toEqual({ status: 404, code: 'show_not_found' });
    expect(errorOf(await call(base, 'GET', '/api/shows/bad/lists', undefined, staff))).toEqual({ status: 400, code: 'invalid_params' });
    expect((await call(base, 'GET', `/api/shows/${show.id}/lists`, undefined, staff)).body.lists).toHaveLength(1);
    // the new check-in fields
    const { tickets } = await showWith(['K-2']);
    expect(errorOf(await scan(tickets[0].code, { type: 'leave' }))).toEqual({ status: 400, code: 'invalid_body' });
    expect(errorOf(await scan(tickets[0].code, { list_id: 'VIP' }))).toEqual({ status: 400, code: 'invalid_body' });
    expect(await ticketStatus(tickets[0].code)).toBe('entry_allowed');
  });

  it('missing (401), unknown (401) and wrong-role (403) credentials; a scanner device may not add lists or undo', async () => {
    const { show, tickets } = await showWith(['L-1']);
    const entered = await scan(tickets[0].code);
    const dev = await device('L', 'door-l');
    const partner = bearer(await signIn(base, ['partner']));
    const undoBody = { reservation_id: tickets[0].reservation_id, scan_id: entered.body.checkin.id, reason: '시도' };
    const routes: [string, string, unknown, boolean][] = [
      ['GET', `/api/shows/${show.id}/lists`, undefined, true],
      ['GET', `/api/shows/${show.id}/door`, undefined, true],
      ['POST', `/api/shows/${show.id}/lists`, { name: '몰래' }, false],
      ['POST', `/api/shows/${show.id}/lists/main/revert`, undoBody, false],
    ];
    for (const [method, path, body, deviceMay] of routes) {
      expect(errorOf(await call(base, method, path, body)), path).toEqual({ status: 401, code: 'unauthorized' });
      expect((await call(base, method, path, body, bearer('not-a-token'))).status, path).toBe(401);
      expect(errorOf(await call(base, method, path, body, partner)), path).toEqual({ status: 403, code: 'forbidden' });
      expect((await call(base, method, path, body, dev.auth)).status, path).toBe(deviceMay ? 200 : 403);
    }
    expect((await call(base, 'GET', `/api/shows/${show.id}/lists`, undefined, staff)).body.lists).toHaveLength(1);
    expect(await ticketStatus(tickets[0].code)).toBe('checked_in');
    expect((await door(show.id)).inside).toBe(1);
  });
});

describe('offline: a list\'s own signed set, and uploads settled on their list', () => {
  const upload = (scans: unknown[], auth = staff) => call(base, 'POST', '/api/checkin/offline', { scans }, auth);
  let n = 0;
  const offline = (code: string, listId?: string, at = T0 - 60_000) => ({ id: `door-${process.pid}-${++n}`, code, scanned_at: new Date(at).toISOString(), source: 'camera', ...(listId ? { list_id: listId } : {}) });

  it('the set of a list carries its rules and, per ticket, kind, entered and inside on that list; signed like the show\'s', async () => {
    const { show, tickets } = await showWith(['M-1', { seat: 'M-2', kind: 'vip' }]);
    const vip = await list(show.id, { name: 'VIP', kinds: ['vip'], allow_entry_after_exit: false, valid_until: '2026-12-24T23:00:00+09:00' });
    expect((await scan(tickets[1].code, { list_id: vip.id })).status).toBe(201);
    const r = await call(base, 'GET', `/api/checkin/list?show_id=${show.id}&list_id=${vip.id}`, undefined, staff);
    expect(r.status).toBe(200);
    const { createPublicKey, verify } = await import('node:crypto');
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: r.body.public_key }, format: 'jwk' });
    expect(verify(null, Buffer.from(r.body.payload), key, Buffer.from(r.body.signature, 'base64url'))).toBe(true);
    const payload = JSON.parse(r.body.payload);
    expect(payload).toMatchObject({ v: 2, count: 2, list: { id: vip.id, name: 'VIP', kinds: ['vip'], seats: null, allow_multiple_entries: false, allow_entry_after_exit: false, valid_until: '2026-12-24T14:00:00.000Z' } });
    const bySeat = Object.fromEntries(payload.tickets.map((t: any) => [t.seat, t]));
    expect(bySeat['M-1']).toMatchObject({ kind: 'standard', entered: false, inside: false, checked_in_at: null });
    expect(bySeat['M-2']).toMatchObject({ kind: 'vip', entered: true, inside: true, status: 'checked_in' });
    expect(r.body.payload).not.toContain('홀더');
    // the main list's set: M-2 is not in by the main gate
    const main = JSON.parse((await call(base, 'GET', `/api/checkin/list?show_id=${show.id}&list_id=main`, undefined, staff)).body.payload);
    expect(main.tickets.find((t: any) => t.seat === 'M-2')).toMatchObject({ entered: false, inside: false });
    // without list_id: the show's set, as before
    expect(JSON.parse((await call(base, 'GET', `/api/checkin/list?show_id=${show.id}`, undefined, staff)).body.payload)).not.toHaveProperty('list');
    // bad input, unknown list, a device the list does not name
    expect(errorOf(await call(base, 'GET', `/api/checkin/list?show_id=${show.id}&list_id=VIP`, undefined, staff))).toEqual({ status: 400, code: 'invalid_query' });
    expect(errorOf(await call(base, 'GET', `/api/checkin/list?show_id=${show.id}&list_id=cl_nosuchlist`, undefined, staff))).toEqual({ status: 404, code: 'list_not_found' });
    const mine = await device('M', 'door-m');
    const stranger = await device('N', 'door-n');
    const gated = await list(show.id, { name: '게이트 M', devices: [mine.id] });
    expect(errorOf(await call(base, 'GET', `/api/checkin/list?show_id=${show.id}&list_id=${gated.id}`, undefined, stranger.auth))).toEqual({ status: 403, code: 'device_not_on_list' });
    expect((await call(base, 'GET', `/api/checkin/list?show_id=${show.id}&list_id=${gated.id}`, undefined, mine.auth)).status).toBe(200);
    expect((await call(base, 'GET', `/api/checkin/list?show_id=${show.id}&list_id=${gated.id}`)).status).toBe(401);
  });

  it('uploads are settled on the list they name, by its rules: not on the list, outside its hours, in twice are conflicts', async () => {
    const { show, tickets } = await showWith(['P-1', 'P-2', 'Q-1']);
    const vip = await list(show.id, { name: 'VIP', seats: [{ from: 'P-1', to: 'P-9' }], valid_from: '2026-12-24T17:00:00+09:00' });
    const res = await upload([
      offline(tickets[0].code, vip.id),
      offline(tickets[2].code, vip.id),
      offline(tickets[1].code, vip.id, Date.parse('2026-12-24T16:00:00+09:00')),
      offline(tickets[0].code, vip.id),
      offline(tickets[0].code),
    ]);
    expect(res.status).toBe(200);
    const results = res.body.results;
    expect(results[0]).toMatchObject({ result: 'ok' });
    expect(results[1]).toMatchObject({ result: 'conflict', conflict: { reason: 'product', list_id: vip.id, seat: 'Q-1' } });
    expect(results[2]).toMatchObject({ result: 'conflict', conflict: { reason: 'invalid_time', list_id: vip.id } });
    expect(results[3]).toMatchObject({ result: 'conflict', conflict: { reason: 'already_redeemed', list_id: vip.id } });
    // on the main list (no list named: the default) the same ticket is a first entry
    expect(results[4]).toMatchObject({ result: 'ok' });
    expect(await inside(show.id)).toMatchObject({ show: 1, main: 1, [vip.id]: 1 });
    const conflicts = (await call(base, 'GET', `/api/checkin/conflicts?show_id=${show.id}`, undefined, staff)).body.conflicts;
    expect(conflicts.map((c: any) => c.reason)).toEqual(['already_redeemed', 'invalid_time', 'product']);
    expect(errorOf(await upload([{ ...offline(tickets[1].code), list_id: 'nope' }]))).toEqual({ status: 400, code: 'invalid_body' });
  });
});
