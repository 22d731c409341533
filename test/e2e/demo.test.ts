import { afterAll, describe, expect, it } from 'vitest';
import { bearer, login } from '../support/auth.js';
import { get, until } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

/**
 * DEMO=1 seeds a show with bookings, reward members with credited work, documents with history and
 * running trading programs through the services, prints where to look and how to sign in; a second
 * start seeds nothing twice; a plain start seeds nothing at all.
 */
describe('DEMO=1 start', () => {
  const dir = tempDir('demo');
  const env = { DATA_DIR: dir, DEMO: '1', PROGRAM_CANDLE_MS: '1000', PROGRAM_SPEED: '20' };
  let hub: HubProcess | undefined;
  afterAll(async () => {
    await hub?.stop();
  });

  const seeded = async (h: HubProcess) => {
    // the banner follows the "listening" line
    await until('the demo banner', () => h.output().includes('sign-in '), 5000);
    const password = /password for this run: (\S+)/.exec(h.output())?.[1];
    expect(password, h.output()).toBeTruthy();
    const demo = (await get(h.url, '/api/demo')).body;
    return { password: password!, demo };
  };

  it('serves the seeded show, members, documents and a running program, and prints the URLs and sign-in', async () => {
    hub = await startHubProcess(env, 30_000);
    const { password, demo } = await seeded(hub);
    const out = hub.output();
    expect(out).toContain(`${hub.url}/pages`);
    expect(out).toMatch(new RegExp(`${hub.url}/mticket/TK-`));
    expect(out).toContain('demo-staff, demo-editor, demo-trader');

    // the show with its bookings: the tickets open, one already checked in, with holders
    expect(demo.tickets.length).toBe(5);
    const tickets = await Promise.all(demo.tickets.map((t: { code: string }) => get(hub!.url, `/api/mticket/${t.code}`)));
    expect(tickets.every((t) => t.status === 200 && t.body.show_id === demo.show_id)).toBe(true);
    expect(tickets.filter((t) => t.body.status === 'checked_in').length).toBe(1);
    expect(tickets[0]!.body.holder).toBe('김마루');
    expect((await get(hub.url, `/api/shows/${demo.show_id}`)).body.name).toBe('마루 데모 콘서트');
    expect((await get(hub.url, demo.tickets[0].page_url)).status).toBe(200);

    // reward members with credited work
    const stats = (await get(hub.url, '/stats')).body;
    expect(stats.members).toBe(3);
    expect(stats.total_ru).toBeGreaterThan(0);

    // documents with history
    const history = (await get(hub.url, '/api/md/history/welcome')).body;
    expect(history.versions.length).toBe(3);
    expect((await get(hub.url, '/api/md/history/door-checklist')).body.versions.length).toBe(2);

    // the demo accounts sign in with the printed password; the trader's programs run on the market
    const trader = bearer(await login(hub.url, 'demo-trader', password));
    await login(hub.url, 'demo-staff', password);
    await login(hub.url, 'demo-editor', password);
    const list = await until('the demo programs to process bars', async () => {
      const r = (await get(hub!.url, '/api/program/list', trader)).body;
      return r.programs.length === 2 && r.programs.every((p: any) => p.state === 'running' && p.stats.bars > 0) ? r : undefined;
    }, 20_000, 100);
    expect(list.programs.map((p: any) => p.symbol).sort()).toEqual(['ES', 'GC']);

    // the demo page is listed in /pages
    const pages = (await get(hub.url, '/pages', { accept: 'application/json' })).body.pages as { path: string }[];
    expect(pages.map((p) => p.path)).toContain('/demo');
    expect((await get(hub.url, '/demo')).status).toBe(200);
  }, 60_000);

  it('a second start on the same data seeds nothing twice, and the new password works', async () => {
    const before = (await get(hub!.url, '/api/demo')).body;
    await hub!.stop();
    hub = await startHubProcess(env, 30_000);
    const { password, demo } = await seeded(hub);
    expect(demo).toEqual(before);
    expect((await get(hub.url, '/stats')).body.members).toBe(3);
    expect((await get(hub.url, '/api/md/history/welcome')).body.versions.length).toBe(3);
    const trader = bearer(await login(hub.url, 'demo-trader', password));
    expect((await get(hub.url, '/api/program/list', trader)).body.programs.length).toBe(2);
  }, 60_000);
});

describe('a plain start', () => {
  let hub: HubProcess | undefined;
  afterAll(async () => {
    await hub?.stop();
  });

  it('seeds nothing: no demo page, no demo accounts, no members, no documents', async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('nodemo') });
    expect(hub.output()).not.toContain('password for this run');
    expect((await get(hub.url, '/api/demo')).status).toBe(404);
    expect((await get(hub.url, '/demo')).status).toBe(404);
    const pages = (await get(hub.url, '/pages', { accept: 'application/json' })).body.pages as { path: string }[];
    expect(pages.map((p) => p.path)).not.toContain('/demo');
    expect((await get(hub.url, '/stats')).body.members).toBe(0);
    expect((await get(hub.url, '/api/md/docs')).body.docs).toEqual([]);
    expect((await fetch(`${hub.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'demo-trader', password: 'x'.repeat(12) }) })).status).toBe(401);
  }, 30_000);
});
