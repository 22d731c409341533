import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

// The door in Chromium (docs/ticket.md, "The door"): a scanner picks its check-in list, scans
// entries and exits on two lists with the people inside counted; a staff undo on one scanner is
// seen at once on another.
const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('the door in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  let staff: Record<string, string>;
  const errors: string[] = [];

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('scan-door'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
    const operator = bearer(await signIn(hub.url, ['operator']));
    for (const user of ['door1', 'door2']) await call(hub.url, 'POST', '/api/auth/accounts', { user, password: `${user}-password`, roles: ['staff'] }, operator);
    staff = bearer(await signIn(hub.url, ['staff']));
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  async function scanner(user: string, query: string): Promise<Page> {
    const p = await browser.newPage({ viewport: { width: 390, height: 900 } });
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${hub.url}/scan${query}`);
    await p.waitForSelector('body[data-ready="true"][data-live="on"][data-auth="none"]');
    await p.fill('#signin-user', user);
    await p.fill('#signin-password', `${user}-password`);
    await p.click('#signin-form button[type="submit"]');
    await p.waitForSelector('body[data-auth="staff"]');
    await p.waitForSelector('#door:not([hidden])');
    return p;
  }
  async function type(p: Page, code: string, expected: string) {
    await p.evaluate(() => document.getElementById('result')!.setAttribute('data-result', 'idle'));
    await p.fill('#code', code);
    await p.click('#submit');
    await p.waitForSelector(`#result[data-result="${expected}"]`);
    return (await p.textContent('#result-detail')) ?? '';
  }
  const inside = (p: Page, list: string, show: string) =>
    p.waitForFunction(([l, s]) => document.getElementById('inside-list')?.textContent === l && document.getElementById('inside-show')?.textContent === s, [list, show], { timeout: 10_000 });

  it('a door with two lists: the scanner picks its list, scans entries and an exit, and counts who is inside', async () => {
    const show = (await post(hub.url, '/api/shows', { name: '두 명단 공연', venue: '올림픽홀', date: '2026-12-24T19:00:00+09:00' }, staff)).body;
    const vipTicket = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'A-3', amount_paid: 150000, holder: '김마루' }, staff)).body;
    const floor = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'F-20', amount_paid: 80000, holder: '이하늘' }, staff)).body;
    const vip = (await post(hub.url, `/api/shows/${show.id}/lists`, { name: 'VIP 입구', seats: [{ from: 'A-1', to: 'A-9' }] }, staff)).body;

    const p = await scanner('door1', `?show=${show.id}&list=${vip.id}`);
    expect(await p.$eval('#list', (s) => (s as HTMLSelectElement).value)).toBe(vip.id);
    expect(await p.$$eval('#list option', (o) => o.map((x) => x.textContent))).toEqual(['정문 · Main (기본 · default)', 'VIP 입구']);

    // the VIP ticket enters by the VIP list; the result names holder and seat
    const ok = await type(p, vipTicket.code, 'ok');
    expect(ok).toContain('김마루');
    expect(ok).toContain('A-3');
    expect(ok).toContain('VIP 입구');
    await inside(p, '1', '1');
    // a floor ticket is not on the VIP list
    expect(await type(p, floor.code, 'product')).toContain('F-20');
    await inside(p, '1', '1');

    // the main gate: the floor ticket enters; the VIP ticket cannot leave by a list it is not inside on
    await p.selectOption('#list', 'main');
    expect(await type(p, floor.code, 'ok')).toContain('이하늘');
    await inside(p, '1', '2');
    await p.check('#mode-exit');
    await type(p, vipTicket.code, 'not_inside');
    // the floor ticket leaves: the main list and the show count one fewer
    expect(await type(p, floor.code, 'exit')).toContain('F-20');
    await inside(p, '0', '1');
    // the list stays picked on this device
    await p.selectOption('#list', vip.id);
    await p.reload();
    await p.waitForSelector('#door:not([hidden])');
    expect(await p.$eval('#list', (s) => (s as HTMLSelectElement).value)).toBe(vip.id);
    await p.check('#mode-exit');
    expect(await type(p, vipTicket.code, 'exit')).toContain('김마루');
    await inside(p, '0', '0');
    // entry again after the exit (the list's rule)
    await p.check('#mode-entry');
    await type(p, vipTicket.code, 'ok');
    await inside(p, '1', '1');
    const door = (await call(hub.url, 'GET', `/api/shows/${show.id}/door`, undefined, staff)).body;
    expect(door).toMatchObject({ inside: 1, lists: [{ id: 'main', inside: 0 }, { id: vip.id, inside: 1 }] });
    expect(errors).toEqual([]);
    await p.close();
  });

  it('an undo by staff on one scanner is seen live on a second scanner', async () => {
    const show = (await post(hub.url, '/api/shows', { name: '되돌림 공연', venue: '소극장', date: '2026-12-25T19:00:00+09:00' }, staff)).body;
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'C-7', amount_paid: 50000, holder: '박도윤' }, staff)).body;
    const one = await scanner('door1', `?show=${show.id}`);
    const two = await scanner('door2', `?show=${show.id}`);

    expect(await type(one, t.code, 'ok')).toContain('박도윤');
    await two.waitForSelector(`#live li[data-type="entry"][data-code="${t.code}"]`, { timeout: 5000 });
    await inside(two, '1', '1');

    // a wrong scan: staff undo it with a reason
    await one.waitForSelector('#undo:not([hidden])');
    await one.fill('#undo-reason', '다른 사람 티켓을 스캔함');
    await one.click('#undo-submit');
    await one.waitForSelector('#result[data-result="reverted"]');
    expect(await one.textContent('#result-detail')).toContain('다른 사람 티켓을 스캔함');
    expect(await one.isHidden('#undo')).toBe(true);

    // the second scanner hears it: the entry is struck through, the undo listed with its reason, the count back
    await two.waitForSelector(`#live li[data-type="revert"][data-code="${t.code}"]`, { timeout: 5000 });
    expect(await two.textContent(`#live li[data-type="revert"][data-code="${t.code}"]`)).toContain('다른 사람 티켓을 스캔함');
    await two.waitForSelector(`#live li[data-type="entry"][data-code="${t.code}"][data-reverted="true"]`);
    await inside(two, '0', '0');
    // the ticket may enter again, on the second scanner
    expect(await type(two, t.code, 'ok')).toContain('C-7');
    await inside(one, '1', '1');
    const audit = (await call(hub.url, 'GET', `/api/checkins/audit?reservation_id=${t.reservation_id}`, undefined, staff)).body.entries;
    expect(audit.map((e: any) => e.result)).toEqual(['ok', 'reverted', 'ok']);
    expect(errors).toEqual([]);
  });

  it('offline, the scanner answers from its list\'s own signed set by the list\'s rules, and uploads on that list', async () => {
    const show = (await post(hub.url, '/api/shows', { name: '오프라인 명단', venue: '야외무대', date: '2026-12-26T19:00:00+09:00' }, staff)).body;
    const vipTicket = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'A-1', amount_paid: 99000, holder: '정하람' }, staff)).body;
    const floor = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'Z-1', amount_paid: 33000 }, staff)).body;
    const vip = (await post(hub.url, `/api/shows/${show.id}/lists`, { name: 'VIP 오프라인', seats: [{ from: 'A-1', to: 'A-9' }] }, staff)).body;
    const p = await scanner('door1', `?show=${show.id}&list=${vip.id}`);
    await p.waitForSelector(`body[data-list="ready"][data-offline-list="${vip.id}"]`, { timeout: 15_000 });
    await p.context().setOffline(true);
    // not on this list: refused by the set itself, no network
    expect(await type(p, floor.code, 'product')).toContain('오프라인 (offline)');
    expect(await p.getAttribute('#result', 'data-offline')).toBe('true');
    expect(await type(p, vipTicket.code, 'ok')).toContain('A-1');
    await p.waitForSelector('body[data-queue="1"]');
    await p.context().setOffline(false);
    await p.click('#sync-now');
    await p.waitForSelector('body[data-queue="0"]', { timeout: 15_000 });
    const door = (await call(hub.url, 'GET', `/api/shows/${show.id}/door`, undefined, staff)).body;
    expect(door).toMatchObject({ inside: 1, lists: [{ id: 'main', inside: 0 }, { id: vip.id, inside: 1 }] });
    const audit = (await call(hub.url, 'GET', `/api/checkins/audit?reservation_id=${vipTicket.reservation_id}`, undefined, staff)).body.entries;
    expect(audit[0]).toMatchObject({ result: 'ok', list_id: vip.id, offline: { id: expect.any(String) } });
    expect(errors).toEqual([]);
    await p.close();
  });
});
