import { rmSync } from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../src/bus.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { availableOf, readAccount, transferKeys, ledgerUpdate, userAccount } from '../../src/payment/ledger.js';
import { createPayment } from '../../src/payment/relay.js';
import { startPaymentStandins, newWebhookSecret, type PaymentStandins } from '../../src/payment/standins.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { Outbox } from '../../src/outbox.js';
import type { Store } from '../../src/store/port.js';
import { livePrograms } from '../../src/trading/program-port.js';
import { PROGRAM_EVENTS_TOPIC, ProgramService } from '../../src/trading/programs.js';
import { until } from '../support/http.js';
import { tempDir } from '../support/process.js';

/**
 * A bought challenge runs as a live trading program (ProgramService through its public methods), and
 * the program's events on the Bus drive the challenge: an exit fill past the profit target passes it,
 * a stop by the daily loss limit fails it (learning credit paid).
 */
describe('challenges bound to live trading programs', () => {
  let peers: PaymentStandins;
  let store: Store;
  let bus: Bus;
  let programs: ProgramService;
  let payment: Awaited<ReturnType<typeof createPayment>>;
  let unfollow: (() => void) | undefined;
  const dir = tempDir('pay-programs');

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: newWebhookSecret() });
    store = await openLmdbStore({ path: dir });
    bus = createBus(store, 'test');
    await bus.start();
    programs = new ProgramService({ store, clock: systemClock, bus, barMs: 60_000, leaseMs: 15_000 });
    await programs.start();
    payment = await createPayment(loadConfig({ DATA_DIR: dir, PRICE_PROVIDER_URLS: peers.prices.map((p) => p.url).join(',') }), {
      store, clock: systemClock, bus, logger: pino({ level: 'silent' }), programs: livePrograms(programs),
    });
    // as the composition root does on every process (src/payment/module.ts)
    unfollow = payment.program!.follow();
    for (const u of ['pia', 'quinn', 'rory', 'sam', 'tae']) {
      const t = { id: `fund-${u}`, debit: 'bank', credit: userAccount(u, 'wallet'), amount: 500n * 10n ** 6n, code: 'test' };
      await ledgerUpdate(store, Date.now, transferKeys([t]), (tx) => (tx.transfer(t), { result: undefined }));
    }
  });
  afterAll(async () => {
    unfollow?.();
    await payment.stop();
    await programs.close();
    await bus.close();
    await store.close();
    await peers.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts a program bound to the account size; its fills pass and its daily-loss stop fails', async () => {
    const a = await payment.service.buy('pia', 'starter_10k', {}, payment.program);
    const ca = await payment.service.challenge((a as { challenge: string }).challenge);
    expect(ca.program).toMatch(/./);
    const prog = await programs.get(ca.program!);
    expect(prog.state).toBe('running');
    expect(prog.settings.capital).toBe(10_000);
    expect(prog.settings.daily_loss_limit).toBe(500);

    const base = { t: Date.now(), bar: 1, side: 'sell', price: 5000, contracts: 1, day_pnl: 0 };
    await bus.publish(PROGRAM_EVENTS_TOPIC, { id: 900001, type: 'trade', program: ca.program!, kind: 'exit', pnl: 850, realized_pnl: 850, ...base });
    await until('passed by the profit target', async () => (await payment.service.challenge(ca.id)).state === 'passed');

    const b = await payment.service.buy('quinn', 'starter_10k', {}, payment.program);
    const cb = await payment.service.challenge((b as { challenge: string }).challenge);
    await bus.publish(PROGRAM_EVENTS_TOPIC, { id: 900002, type: 'status', program: cb.program!, t: Date.now(), state: 'stopped', previous: 'running', reason: 'daily_loss_limit' });
    await until('failed by the daily loss limit', async () => (await payment.service.challenge(cb.id)).state === 'failed');
    expect(availableOf(await readAccount(store, userAccount('quinn', 'credit')))).toBe(30n * 10n ** 6n);
    // the same event again (another process also saw it on the Bus) changes nothing
    const again = await payment.lifecycle.event(cb.id, { type: 'violation', event_id: 'p900002', rule: 'daily_loss', ts: Date.now() });
    expect(again.applied).toBe(false);
    expect((await payment.service.challenge(cb.id)).violations).toHaveLength(1);
  });

  it('a process started after the purchase applies the program\'s events too, and each event lands once', async () => {
    const bought = await payment.service.buy('rory', 'starter_10k', {}, payment.program);
    const c = await payment.service.challenge((bought as { challenge: string }).challenge);
    // a second relay on the same store and Bus, built after the purchase: another process, or this one restarted
    const other = createPayment(loadConfig({ DATA_DIR: dir }), { store, clock: systemClock, bus, logger: pino({ level: 'silent' }), programs: livePrograms(programs) });
    const unfollowOther = other.program!.follow();
    try {
      await bus.publish(PROGRAM_EVENTS_TOPIC, { id: 900003, type: 'status', program: c.program!, t: Date.now(), state: 'stopped', previous: 'running', reason: 'daily_loss_limit' });
      await until('failed by the daily loss limit', async () => (await payment.service.challenge(c.id)).state === 'failed');
      await new Promise((r) => setTimeout(r, 200));
      expect((await payment.service.challenge(c.id)).violations).toHaveLength(1);
      expect(availableOf(await readAccount(store, userAccount('rory', 'credit')))).toBe(30n * 10n ** 6n);
    } finally {
      unfollowOther();
    }
  });

  it('names the program in the purchase\'s own update: a purchase refused there leaves no program', async () => {
    await payment.service.buy('sam', 'starter_10k', {}, payment.program);
    const before = (await programs.list()).map((p) => p.id).sort();
    // the second purchase of a running kind is refused inside the update, after its program was planned
    await expect(payment.service.buy('sam', 'starter_10k', {}, payment.program)).rejects.toMatchObject({ code: 'challenge_active' });
    expect((await programs.list()).map((p) => p.id).sort()).toEqual(before);
  });

  it('a program not made right after its purchase (the process died, the market was down) is made by the outbox, once, and started', async () => {
    const port = payment.program!;
    const failing = { plan: port.plan.bind(port), ensure: () => Promise.reject(new Error('the market is down')) };
    const bought = await payment.service.buy('tae', 'starter_10k', {}, failing);
    expect(bought).toMatchObject({ ok: true });
    const c = await payment.service.challenge((bought as { challenge: string }).challenge);
    expect(c.program).toMatch(/^p_[0-9a-f]{16}$/);
    await expect(programs.get(c.program!)).rejects.toMatchObject({ code: 'program_not_found' });
    // the purchase's outbox item, delivered by an outbox with the relay's deliverers (twice at once: two processes)
    const outboxes = [0, 1].map(() => new Outbox({ store, clock: systemClock, deliver: payment.deliverers, retryMinMs: 50, retryMaxMs: 200, pollMs: 50 }));
    for (const o of outboxes) o.start();
    try {
      await until('the program made and started by the outbox', async () => (await programs.get(c.program!).catch(() => undefined))?.state === 'running');
    } finally {
      for (const o of outboxes) await o.stop();
    }
    const prog = await programs.get(c.program!);
    expect(prog.name).toBe(`challenge ${c.id}`);
    expect(prog.settings.capital).toBe(10_000);
    expect((await programs.list()).filter((p) => p.id === c.program)).toHaveLength(1);
    // delivered again (a retry): nothing changes
    await port.ensure(c.program!, { name: 'x', strategy: 'ema_cross', symbol: 'ES', params: {}, capital: 1, daily_loss_limit: 1 });
    expect(await programs.get(c.program!)).toMatchObject({ state: 'running', name: `challenge ${c.id}` });
  });
});
