import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, deviceToken, signIn } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

// Offline mode of /scan (docs/ticket.md, "Offline mode"): two door devices take the show's signed
// list, the network is cut, 20 scans are answered from the lists, the network returns, and the
// hub's state and audit are exactly what the doors did, the double admission a conflict. A revoked
// device's list is wiped at its next sync and answers nothing offline.
const hasBrowser = browserAvailable();

interface Scan { ms: number; result: string; offline: string; detail: string; pageMs: number }

/** Types a code into the manual entry and waits for the answer on screen; the time from submit to answer. */
function scan(page: Page, code: string): Promise<Scan> {
  return page.evaluate((code) => {
    const box = document.getElementById('result')!;
    const input = document.getElementById('code') as HTMLInputElement;
    const t0 = performance.now();
    const done = new Promise<number>((resolve, reject) => {
      setTimeout(() => reject(new Error(`no answer on screen for ${code}`)), 5000);
      const mo = new MutationObserver(() => {
        mo.disconnect();
        resolve(performance.now() - t0);
      });
      mo.observe(box, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    input.value = code;
    (document.getElementById('manual') as HTMLFormElement).requestSubmit();
    return done.then((ms) => ({
      ms,
      result: box.dataset.result ?? '',
      offline: box.dataset.offline ?? '',
      detail: document.getElementById('result-detail')!.textContent ?? '',
      pageMs: Number(box.dataset.ms ?? 'NaN'),
    }));
  }, code);
}

/** What the page keeps in IndexedDB: the record names, and whether the AES key is extractable. */
function kept(page: Page) {
  return page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const req = indexedDB.open('maru-scan-offline', 1);
      req.onupgradeneeded = () => req.result.createObjectStore('kv');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    const get = <T,>(k: string) => new Promise<T>((resolve) => {
      const r = db.transaction('kv').objectStore('kv').get(k);
      r.onsuccess = () => resolve(r.result as T);
    });
    const keys = await new Promise<string[]>((resolve) => {
      const r = db.transaction('kv').objectStore('kv').getAllKeys();
      r.onsuccess = () => resolve(r.result.map(String));
    });
    const key = await get<CryptoKey | undefined>('key');
    const list = await get<{ iv: Uint8Array; ct: ArrayBuffer } | undefined>('list');
    db.close();
    return {
      keys: keys.sort(),
      key: key ? { extractable: key.extractable, alg: key.algorithm.name, usages: [...key.usages].sort() } : null,
      listIsCiphertext: !!list && list.iv.length === 12 && list.ct.byteLength > 0 && !new TextDecoder().decode(list.ct).includes('maru.checkin-list'),
    };
  });
}

describe.skipIf(!hasBrowser)('scanning with the network cut', () => {
  let hub: HubProcess;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('scan-offline'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
  });
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    await hub?.stop();
  });

  it('20 offline scans at two doors, settled exactly once when the network returns; a revoked device stops answering', async () => {
    const staff = bearer(await signIn(hub.url, ['staff']));
    const show = (await post(hub.url, '/api/shows', { name: '정전 대비 공연', venue: '야외무대', date: '2026-12-24T19:00:00+09:00' }, staff)).body;
    const t: { code: string; reservation_id: string }[] = [];
    for (let i = 1; i <= 24; i++) t.push((await post(hub.url, '/api/reservations', { show_id: show.id, seat: `S-${i}`, amount_paid: 20000, holder: `관객${i}` }, staff)).body);
    const T = (i: number) => t[i - 1]!.code;
    // before the lists are taken: S-23 is already in, S-24 cancelled
    expect((await post(hub.url, '/api/checkin', { code: T(23) }, staff)).status).toBe(201);
    expect((await post(hub.url, `/api/tickets/${t[23]!.reservation_id}/cancel`, {}, staff)).status).toBe(200);

    const errors: string[] = [];
    const door = async (gate: string, name: string) => {
      const token = await deviceToken(hub.url, gate, name);
      const context = await browser.newContext({ viewport: { width: 390, height: 900 } });
      contexts.push(context);
      await context.addInitScript(
        ([tok, id, showName]) => {
          localStorage.setItem('scan:token', tok!);
          localStorage.setItem('scan:show', id!);
          localStorage.setItem('scan:show-name', showName!);
        },
        [token, show.id, show.name],
      );
      const page = await context.newPage();
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${hub.url}/scan`);
      await page.waitForSelector('body[data-ready="true"][data-auth="device"][data-list="ready"]', { timeout: 15_000 });
      return { token, context, page };
    };
    const east = await door('E', 'door-east');
    const west = await door('W', 'door-west');
    expect(await east.page.textContent('#list-state')).toContain('24');
    // the list is kept encrypted with a key the page cannot export
    const stored = await kept(east.page);
    expect(stored.keys).toEqual(expect.arrayContaining(['key', 'list']));
    expect(stored.key).toEqual({ extractable: false, alg: 'AES-GCM', usages: ['decrypt', 'encrypt'] });
    expect(stored.listIsCiphertext).toBe(true);

    // the network is cut at both doors
    await east.context.setOffline(true);
    await west.context.setOffline(true);
    for (const d of [east, west]) expect(await d.page.evaluate(() => navigator.onLine)).toBe(false);

    const answers: Scan[] = [];
    const expectScan = async (page: Page, code: string, result: string) => {
      const a = await scan(page, code);
      answers.push(a);
      expect(a.result, `${code}: ${a.detail}`).toBe(result);
      expect(a.offline).toBe('true');
      expect(a.detail).toContain(code);
      return a;
    };
    // 10 scans at each door. east: S-1..S-7 in, S-23 (in before the list) amber, S-1 twice (below);
    // west: S-6, S-7 (in at east already, which west cannot know), S-8..S-13 in, S-24 cancelled, an
    // unknown code
    const firstEast = Date.now();
    for (let i = 1; i <= 7; i++) await expectScan(east.page, T(i), 'ok');
    await expectScan(east.page, T(23), 'already_redeemed');
    for (const i of [6, 7, 8, 9, 10, 11, 12, 13]) await expectScan(west.page, T(i), 'ok');
    await expectScan(west.page, T(24), 'canceled');
    await expectScan(west.page, 'TK-22222222', 'invalid');
    // the same code again within 30 s is the same scan (green, not queued twice) ...
    const same = await scan(east.page, T(1));
    expect([same.result, same.detail.includes('same scan')]).toEqual(['ok', true]);
    // ... and after that a second admission, refused from this device's own queue: the 20th scan
    await new Promise((r) => setTimeout(r, Math.max(0, 31_000 - (Date.now() - firstEast))));
    await expectScan(east.page, T(1), 'already_redeemed');
    expect(answers).toHaveLength(19);
    answers.push(same);
    // Under 100 ms from scan to answer: the answer is computed in one task (a hash and a look-up,
    // no network, nothing awaited before the banner), so what is left is the machine's scheduling.
    // On a shared, loaded test machine a renderer can be descheduled for a while: the median of
    // both measures and 90 % of the page's own must be under 100 ms (typically 1-30 ms).
    const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.ceil((p / 100) * xs.length) - 1]!;
    const timing = JSON.stringify(answers.map((x) => [Math.round(x.ms), Math.round(x.pageMs)]));
    console.log(`offline answers, ms [in the page's view, scan to banner]: ${timing}`);
    expect(pct(answers.map((a) => a.ms), 50), timing).toBeLessThan(100);
    expect(pct(answers.map((a) => a.pageMs), 50), timing).toBeLessThan(100);
    expect(pct(answers.map((a) => a.pageMs), 90), timing).toBeLessThan(100);

    // the queues, on the pages
    expect(await east.page.textContent('#queue-count')).toBe('7');
    expect(await east.page.$$eval('#queue li', (li) => li.map((l) => l.getAttribute('data-code')))).toEqual([1, 2, 3, 4, 5, 6, 7].map(T));
    expect(await west.page.textContent('#queue-count')).toBe('8');
    expect(await west.page.$$eval('#queue li', (li) => li.map((l) => l.getAttribute('data-code')))).toEqual([6, 7, 8, 9, 10, 11, 12, 13].map(T));
    // the hub knows nothing yet
    expect((await call(hub.url, 'GET', `/api/shows/${show.id}/counts`, undefined, staff)).body.checked_in).toBe(1);

    // the network returns: east uploads first, then west
    await east.context.setOffline(false);
    await east.page.waitForSelector('body[data-queue="0"]', { timeout: 20_000 });
    await west.context.setOffline(false);
    await west.page.waitForSelector('body[data-queue="0"]', { timeout: 20_000 });
    await west.page.waitForSelector('#sync-result[data-conflicts="2"]', { timeout: 10_000 });
    const westReport = await west.page.textContent('#sync-result');
    expect(westReport).toContain(T(6));
    expect(westReport).toContain(T(7));
    expect(await east.page.getAttribute('#sync-result', 'data-conflicts')).toBe('0');

    // the hub's state: each ticket in once, by the door that settled first
    expect((await call(hub.url, 'GET', `/api/shows/${show.id}/counts`, undefined, staff)).body).toMatchObject({ tickets: 23, checked_in: 14, cancelled: 1 });
    const rows = (await call(hub.url, 'GET', `/api/shows/${show.id}/tickets?limit=100`, undefined, staff)).body.tickets as any[];
    const bySeat = new Map(rows.map((r) => [r.seat, r]));
    for (let i = 1; i <= 24; i++) {
      const r = bySeat.get(`S-${i}`);
      const who = i <= 7 ? 'door-east' : i <= 13 ? 'door-west' : null;
      if (who) expect([i, r.status, r.checked_in_by?.scanner]).toEqual([i, 'checked_in', who]);
      else if (i === 23) expect(r.status).toBe('checked_in');
      else if (i === 24) expect(r.status).toBe('cancelled');
      else expect([i, r.status]).toEqual([i, 'entry_allowed']);
    }

    // the audit: 1 online check-in, 7 + 6 offline check-ins, 2 conflicts (both scans of S-6 and S-7 kept)
    const audit = (await call(hub.url, 'GET', `/api/checkins/audit?show_id=${show.id}&limit=1000`, undefined, staff)).body.entries as any[];
    expect(audit).toHaveLength(16);
    expect(audit.filter((e) => e.result === 'ok')).toHaveLength(14);
    expect(audit.filter((e) => e.result === 'ok' && e.offline).map((e) => e.scanner).sort()).toEqual([...Array(7).fill('door-east'), ...Array(6).fill('door-west')]);
    for (const i of [6, 7]) {
      const ofTicket = audit.filter((e) => e.code === T(i));
      expect(ofTicket.map((e) => [e.result, e.scanner, e.gate])).toEqual([['conflict', 'door-west', 'W'], ['ok', 'door-east', 'E']]);
      for (const e of ofTicket) expect(e.at).toBe(e.offline.scanned_at);
      expect(ofTicket[0].conflict.first_checkin).toMatchObject({ scanner: 'door-east', gate: 'E', offline: true, at: ofTicket[1].at });
    }
    const conflicts = (await call(hub.url, 'GET', `/api/checkin/conflicts?show_id=${show.id}`, undefined, staff)).body.conflicts as any[];
    expect(conflicts.map((c) => [c.code, c.reason, c.scanner, c.first_checkin.scanner]).sort()).toEqual(
      [[T(6), 'already_redeemed', 'door-west', 'door-east'], [T(7), 'already_redeemed', 'door-west', 'door-east']].sort(),
    );
    // the next sync took the new list: east now answers S-9 (in at west) amber, offline too
    await east.page.click('#sync-now');
    await east.page.waitForFunction(() => document.querySelector('#sync-result')?.textContent?.includes('업로드 0'), undefined, { timeout: 10_000 });
    await east.context.setOffline(true);
    expect((await scan(east.page, T(9))).result).toBe('already_redeemed');
    await east.context.setOffline(false);

    // staff revoke the east device: its next sync is refused, the page wipes the list and the key
    const me = (await call(hub.url, 'GET', '/api/auth/me', undefined, bearer(east.token))).body.identity;
    expect((await call(hub.url, 'DELETE', `/api/auth/devices/${me.id}`, undefined, staff)).status).toBe(200);
    await east.page.click('#sync-now');
    await east.page.waitForSelector('body[data-list="wiped"]', { timeout: 10_000 });
    expect((await kept(east.page)).keys).toEqual([]);
    await east.context.setOffline(true);
    const after = await scan(east.page, T(15));
    expect(after.result).not.toBe('ok');
    expect(await east.page.textContent('#queue-count')).toBe('0');
    expect((await call(hub.url, 'GET', `/api/mticket/${T(15)}`)).body.status).toBe('entry_allowed');
    // west, still registered, keeps its list
    expect(await west.page.getAttribute('body', 'data-list')).toBe('ready');
    expect(errors).toEqual([]);
  }, 120_000);
});
