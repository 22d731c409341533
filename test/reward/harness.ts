import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBus, type Bus, type BusMessage } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { RewardService, type RewardServiceOptions } from '../../src/reward/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { DrawOptions, Store, UpdateFn, Write } from '../../src/store/port.js';

/** A KST wall-clock instant, e.g. kst('2026-05-04 10:00'). */
export const kst = (s: string): number => Date.parse(`${s.replace(' ', 'T')}:00+09:00`);
export const DAY = 86_400_000;

export interface Harness {
  dir: string;
  store: Store;
  clock: ManualClock;
  bus: Bus;
  svc: RewardService;
  events: BusMessage[];
  /** Every write plan the service handed to store.update, in order. */
  plans: Write[][];
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** Records the write plans of every update (the plan that the adapter applied atomically). */
function recording(store: Store, plans: Write[][]): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'update') {
        return <R>(keys: string[], fn: UpdateFn<R>, opts?: DrawOptions) => {
          const recorded: UpdateFn<R> = (cur) => {
            const plan = fn(cur);
            plans.push(plan.writes);
            return plan;
          };
          return opts === undefined ? target.update(keys, recorded) : target.update(keys, recorded, opts);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

export async function harness(
  start = kst('2026-05-04 10:00'),
  extra: Partial<RewardServiceOptions> = {},
): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'maru-reward-'));
  const clock = new ManualClock(start);
  const events: BusMessage[] = [];
  const plans: Write[][] = [];
  const h = {} as Harness;
  const open = async () => {
    const raw = await openLmdbStore({ path: join(dir, 'store') });
    h.store = recording(raw, plans);
    h.bus = createBus(h.store, 'test');
    h.bus.onMessage((m) => events.push(m));
    h.svc = new RewardService({ store: h.store, clock, bus: h.bus, ...extra });
  };
  await open();
  Object.assign(h, {
    dir,
    clock,
    events,
    plans,
    async reopen() {
      await h.bus.close();
      await h.store.close();
      await open();
    },
    async close() {
      await h.bus.close();
      await h.store.close();
      await rm(dir, { recursive: true, force: true });
    },
  });
  return h;
}

/** The error a promise rejects with (fails when it resolves). */
export async function refusal(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

/** Everything a client can observe of the reward state (plus the outbox), to compare before/after. */
export async function snapshot(h: Harness, memberIds: string[] = []) {
  const members = [];
  for (const id of memberIds) {
    members.push(await h.svc.member(id), await h.svc.workSessions(id), await h.svc.rewardLedger({ member: id }));
  }
  return {
    stats: await h.svc.stats(),
    zones: await h.svc.listZones({ limit: 1000 }),
    ledger: await h.svc.rewardLedger({ limit: 1000 }),
    eco: await h.svc.ecosystemLedger({ limit: 1000 }),
    reserve: await h.svc.reservePool(),
    outboxDue: await h.store.indexCount('outbox:due'),
    outboxCreated: await h.store.indexRange('outbox:created'),
    members,
  };
}
