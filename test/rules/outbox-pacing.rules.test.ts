import { afterEach, describe, expect, it, vi } from 'vitest';
import { Outbox, type OutboxOptions } from '../../src/outbox/outbox.js';
import { outboxCreatedKey, outboxDueKey, outboxHeldKey as heldKeyOf, outboxKey as keyOf, outboxWrites, parseRecord, STAT_DELIVERED, type Deliver, type OutboxItem } from '../../src/outbox/records.js';
import { partitionOf } from '../../src/store/partition.js';

// the items live in the partition of the business key they are written beside
const NEAR = 'test:thing:1';
const P = partitionOf(NEAR);
const OUTBOX_DUE = outboxDueKey(P);
const OUTBOX_CREATED = outboxCreatedKey(P);
const outboxKey = (id: string) => keyOf(id, P);
const outboxHeldKey = (dest: string) => heldKeyOf(dest, P);
import type { IndexEntry, Json, RangeOptions, Store, UpdateFn, Write } from '../../src/store/port.js';

// When the outbox's loop looks again (src/outbox/outbox.ts): the poll and its bounds, the next due
// item, a kick during a scan, a full batch, the look-ahead beside a full set of deliveries; how it
// stops (the grace, a stop during a scan, a delivery settling meanwhile); what it says when the
// store fails; how `pending` and `stats` page through the index. Vitest's fake timers drive the
// loop and its clock (Date.now), over an in-memory store whose answers are promises only: every
// step of a scan happens between two timers, and each store call is counted (or made to fail, or
// held on a gate) through a wrapper. (A timer of 0 ms set while fake timers are firing is due 1 ms
// later: "at once" is then 1 ms after.)

const T0 = 1_700_000_000_000;
// a real turn of the event loop, taken before the timers are faked: lets every pending promise run
const realImmediate = setImmediate;
const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => realImmediate(r));
};

const outboxes: Outbox[] = [];
afterEach(async () => {
  while (outboxes.length) {
    let done = false;
    const stopped = outboxes.pop()!.stop().finally(() => (done = true));
    while (!done) await vi.advanceTimersByTimeAsync(100);
    await stopped;
  }
  vi.useRealTimers();
});

/** The Store port in memory, as far as the outbox uses it: every answer a promise, nothing on a timer. */
function memoryStore(): Store {
  const values = new Map<string, Json>();
  const indexes = new Map<string, Map<string, number>>();
  const copy = <T>(v: T): T => (v === undefined ? v : structuredClone(v));
  const apply = (w: Write) => {
    if (w.op === 'set') values.set(w.key, copy(w.value));
    else if (w.op === 'del') values.delete(w.key);
    else if (w.op === 'incr') values.set(w.key, Number(values.get(w.key) ?? 0) + w.by);
    else if (w.op === 'index') {
      if (!indexes.has(w.key)) indexes.set(w.key, new Map());
      indexes.get(w.key)!.set(w.member, Number(w.score));
    } else if (w.op === 'unindex') indexes.get(w.key)?.delete(w.member);
    else throw new Error(`memory store: ${w.op} not supported`);
  };
  const range = (key: string, opts: RangeOptions = {}): IndexEntry[] => {
    const all = [...(indexes.get(key) ?? new Map<string, number>())]
      .map(([member, score]) => ({ member, score }))
      .filter((e) => (opts.min === undefined || e.score >= opts.min) && (opts.max === undefined || e.score <= opts.max))
      .sort((a, b) => a.score - b.score || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
    if (opts.reverse) all.reverse();
    const from = opts.offset ?? 0;
    return all.slice(from, opts.limit === undefined ? undefined : from + opts.limit);
  };
  const store = {
    kind: 'memory',
    get: async (key: string) => copy(values.get(key)),
    getMany: async (keys: string[]) => keys.map((k) => copy(values.get(k))),
    update: async (keys: string[], fn: UpdateFn<unknown>) => {
      const plan = fn(keys.map((k) => copy(values.get(k))));
      for (const w of plan.writes) apply(w);
      return plan.result;
    },
    incr: async (key: string, by = 1) => {
      apply({ op: 'incr', key, by });
      return values.get(key) as number;
    },
    indexRange: async (key: string, opts?: RangeOptions) => range(key, opts),
    indexCount: async (key: string) => indexes.get(key)?.size ?? 0,
  };
  return store as unknown as Store;
}

interface Call {
  method: string;
  args: unknown[];
}

/**
 * The store as the outbox sees it: each call recorded in `calls`; `hooks.before` runs before a call
 * (it may throw: the call fails) and `hooks.after` after it, before its answer is given (it may
 * wait: the caller is held there).
 */
function watched(inner: Store) {
  const calls: Call[] = [];
  const hooks: { before?: (c: Call) => Promise<void> | void; after?: (c: Call) => Promise<void> | void } = {};
  const store = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return async (...args: unknown[]) => {
        const call = { method: String(prop), args };
        calls.push(call);
        await hooks.before?.(call);
        const out = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        await hooks.after?.(call);
        return out;
      };
    },
  });
  return { store, calls, hooks };
}

/** A deliverer that waits for `open(id)`, or for the attempt's abort; `at` holds the instant of each call. */
function gated() {
  const calls: string[] = [];
  const at: number[] = [];
  const gates = new Map<string, () => void>();
  const deliver: Deliver = (item, signal) => {
    calls.push(item.id);
    at.push(Date.now());
    return new Promise<void>((resolve, reject) => {
      gates.set(item.id, resolve);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  };
  return { calls, at, deliver, open: (id: string) => gates.get(id)!() };
}

/** A promise to hold a caller on, and its release. */
function gate() {
  let open!: () => void;
  const shut = new Promise<void>((r) => (open = r));
  return { shut, open };
}

const item = (id: string, dest = 'mail', createdAt = T0): OutboxItem => ({ id, dest, payload: { id }, createdAt });
const isDueQuery = (c: Call) => c.method === 'indexRange' && c.args[0] === OUTBOX_DUE && (c.args[1] as RangeOptions | undefined)?.max !== undefined;
const isLookAhead = (c: Call) => c.method === 'indexRange' && c.args[0] === OUTBOX_DUE && (c.args[1] as RangeOptions | undefined)?.max === undefined;
const heldPeer = Object.assign(async () => undefined, { held: 'PEER_URL is not set' });

function setup(deliver: Record<string, Deliver>, extra: Partial<OutboxOptions> = {}, withLogger = true) {
  vi.useFakeTimers({ now: T0 });
  const mem = memoryStore();
  const { store, calls, hooks } = watched(mem);
  const logs: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
  const logger = {
    warn: (obj: Record<string, unknown>, msg: string) => void logs.push({ level: 'warn', obj, msg }),
    error: (obj: Record<string, unknown>, msg: string) => void logs.push({ level: 'error', obj, msg }),
    debug: (obj: Record<string, unknown>, msg: string) => void logs.push({ level: 'debug', obj, msg }),
  };
  const outbox = new Outbox({
    store,
    clock: { now: () => Date.now() },
    deliver,
    retryMinMs: 100,
    retryMaxMs: 1000,
    random: () => 0.5,
    ...(withLogger ? { logger: logger as never } : {}),
    ...extra,
  });
  outboxes.push(outbox);
  // the instant of each scan (the loop's private pass, one per tick)
  const scans: number[] = [];
  const o = outbox as unknown as { pass: () => Promise<number> };
  const pass = o.pass.bind(outbox);
  o.pass = () => {
    scans.push(Date.now() - T0);
    return pass();
  };
  const enqueue = (...items: OutboxItem[]) => mem.update([], () => ({ writes: items.flatMap((i) => outboxWrites(i, NEAR)), result: undefined }));
  const rec = async (id: string) => parseRecord(await mem.get(outboxKey(id)));
  const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);
  return { mem, store, calls, hooks, logs, outbox, scans, enqueue, rec, advance };
}

/** Removes item `id` (delivered by another process) just before this one reads its claim back, once. */
function removeBeforeClaimRead(hooks: { before?: (c: Call) => void | Promise<void> }, mem: Store, id: string): void {
  hooks.before = async (c) => {
    if (c.method === 'get' && c.args[0] === outboxKey(id)) {
      hooks.before = undefined;
      await mem.update([], () => ({ writes: [{ op: 'del', key: outboxKey(id) }, { op: 'unindex', key: OUTBOX_DUE, member: id }, { op: 'unindex', key: OUTBOX_CREATED, member: id }], result: undefined }));
    }
  };
}

/** Enqueues `next` (with no kick) while the update that claims item `id` runs, once. */
function enqueueWhileClaiming(hooks: { after?: (c: Call) => void | Promise<void> }, enqueue: (...items: OutboxItem[]) => Promise<unknown>, id: string, next: OutboxItem): void {
  hooks.after = async (c) => {
    if (c.method === 'update' && (c.args[0] as string[])[0] === outboxKey(id)) {
      hooks.after = undefined;
      await enqueue(next);
    }
  };
}

describe('the poll', () => {
  it('scans every pollMs while nothing is due: 1000 ms by default', async () => {
    const { outbox, scans, advance } = setup({ mail: async () => undefined });
    outbox.start();
    await advance(0);
    expect(scans).toEqual([0]);
    await advance(999);
    expect(scans).toEqual([0]);
    await advance(1);
    expect(scans).toEqual([0, 1000]);
    await advance(2000);
    expect(scans).toEqual([0, 1000, 2000, 3000]);
  });

  it('is the one given, at least 1 ms', async () => {
    const a = setup({ mail: async () => undefined }, { pollMs: 50 });
    a.outbox.start();
    await a.advance(120);
    expect(a.scans).toEqual([0, 50, 100]);
    await a.outbox.stop();
    outboxes.pop();
    vi.useRealTimers();

    const b = setup({ mail: async () => undefined }, { pollMs: 0 });
    b.outbox.start();
    await b.advance(3);
    expect(b.scans).toEqual([0, 1, 2, 3]);
  });

  it('stays asleep after a scan that found nothing: one scan per poll, each with one look-ahead', async () => {
    const { outbox, calls, advance } = setup({ mail: async () => undefined });
    outbox.start();
    await advance(2500);
    expect(calls.filter(isDueQuery)).toHaveLength(3);
    expect(calls.filter(isLookAhead).map((c) => c.args[1])).toEqual([{ limit: 1 }, { limit: 1 }, { limit: 1 }]);
  });
});

describe('the next scan', () => {
  it('comes when the first item is due, sooner than the poll', async () => {
    const g = gated();
    const { outbox, enqueue, scans, advance } = setup({ mail: g.deliver });
    await enqueue(item('later', 'mail', T0 + 30));
    outbox.start();
    await advance(29);
    expect(scans).toEqual([0]);
    expect(g.calls).toEqual([]);
    await advance(1);
    expect(scans).toEqual([0, 30]);
    expect(g.at).toEqual([T0 + 30]);
  });

  it('comes at the poll when the first item is due after it', async () => {
    const g = gated();
    const { outbox, enqueue, scans, advance } = setup({ mail: g.deliver });
    await enqueue(item('later', 'mail', T0 + 2500));
    outbox.start();
    await advance(2600);
    expect(scans).toEqual([0, 1000, 2000, 2500]);
    expect(g.at).toEqual([T0 + 2500]);
  });

  it('waits for the poll when what is due is not its to take (claimed elsewhere): no spinning', async () => {
    const g = gated();
    const { outbox, mem, scans, advance } = setup({ mail: g.deliver }, { pollMs: 100, concurrency: 1 });
    // the index says due now; the record says another process holds it for 10 s
    await mem.update([], () => ({
      writes: [
        { op: 'set', key: outboxKey('x'), value: { id: 'x', dest: 'mail', payload: null, createdAt: T0, attempts: 1, due: T0 + 10_000, claim: 'elsewhere' } },
        { op: 'index', key: OUTBOX_DUE, member: 'x', score: T0 },
        { op: 'index', key: OUTBOX_CREATED, member: 'x', score: T0 },
      ],
      result: undefined,
    }));
    outbox.start();
    await advance(350);
    expect(scans).toEqual([0, 100, 200, 300]);
    expect(g.calls).toEqual([]);
  });

  it('comes at once after a scan that started a delivery while another item became due', async () => {
    const g = gated();
    const { outbox, enqueue, hooks, advance } = setup({ mail: g.deliver });
    await enqueue(item('a'));
    // b is enqueued (with no kick) while a is being claimed
    enqueueWhileClaiming(hooks, enqueue, 'a', item('b'));
    outbox.start();
    await advance(10);
    expect(g.calls).toEqual(['a', 'b']);
    expect(g.at).toEqual([T0, T0 + 1]);
  });

  it('comes at once after a scan that started a delivery and kept an item for a peer, while another item became due', async () => {
    const g = gated();
    const { outbox, enqueue, hooks, advance } = setup({ mail: g.deliver, peer: heldPeer });
    await enqueue(item('a'), item('p1', 'peer'));
    enqueueWhileClaiming(hooks, enqueue, 'a', item('b'));
    outbox.start();
    await advance(10);
    expect(g.calls).toEqual(['a', 'b']);
    expect(g.at).toEqual([T0, T0 + 1]);
  });

  it('after a kick during a scan comes at once, not at the poll', async () => {
    const g = gated();
    const { outbox, enqueue, calls, hooks, scans, advance } = setup({ mail: g.deliver });
    const held = gate();
    // the scan has read an empty due index and is held there
    hooks.after = (c) => (isDueQuery(c) ? held.shut : undefined);
    outbox.start();
    await advance(0);
    expect(calls.filter(isDueQuery)).toHaveLength(1);
    hooks.after = undefined;
    await enqueue(item('a'));
    outbox.kick();
    held.open();
    await settle();
    await advance(0);
    expect(scans).toEqual([0, 0]);
    expect(g.calls).toEqual(['a']);
    expect(g.at).toEqual([T0]);
  });

  it('a kick while the loop sleeps replaces the sleep: the poll counts again from the kick', async () => {
    const { outbox, scans, advance } = setup({ mail: async () => undefined });
    outbox.start();
    await advance(400);
    outbox.kick();
    await advance(1500);
    expect(scans).toEqual([0, 400, 1400]);
  });

  it('comes at once after a full batch, at the poll after a shorter one', async () => {
    const full = setup({ mail: async () => undefined, peer: heldPeer }, { concurrency: 2 });
    await full.enqueue(item('p1', 'peer'), item('p2', 'peer'));
    full.outbox.start();
    await full.advance(1500);
    expect(await full.mem.indexRange(outboxHeldKey('peer'), {})).toHaveLength(2);
    expect(full.scans).toEqual([0, 1, 1001]);
    await full.outbox.stop();
    outboxes.pop();
    vi.useRealTimers();

    const short = setup({ mail: async () => undefined, peer: heldPeer }, { concurrency: 2 });
    await short.enqueue(item('p1', 'peer'));
    short.outbox.start();
    await short.advance(1500);
    expect(await short.mem.indexRange(outboxHeldKey('peer'), {})).toHaveLength(1);
    expect(short.scans).toEqual([0, 1000]);
  });

  it('with every slot taken, a scan reads no due entries and does not look ahead', async () => {
    const g = gated();
    const { outbox, enqueue, calls, scans, advance } = setup({ mail: g.deliver }, { concurrency: 1 });
    await enqueue(item('a'), item('b', 'mail', T0 + 1));
    outbox.start();
    await advance(0);
    expect(g.calls).toEqual(['a']);
    const before = calls.length;
    await advance(3000);
    expect(scans).toEqual([0, 1000, 2000, 3000]);
    expect(calls.slice(before).filter((c) => c.method === 'indexRange' && c.args[0] === OUTBOX_DUE)).toEqual([]);
    expect(g.calls).toEqual(['a']);
  });

  it('a scan reads the due entries up to now, at most the free slots and those in flight', async () => {
    const g = gated();
    const { outbox, enqueue, calls, advance } = setup({ mail: g.deliver }, { concurrency: 3 });
    await enqueue(item('a'), item('b', 'mail', T0 + 500));
    const updatesOfB = () => calls.filter((c) => c.method === 'update' && (c.args[0] as string[])[0] === outboxKey('b'));
    outbox.start();
    await advance(400);
    // an item not yet due is not touched
    expect(updatesOfB()).toEqual([]);
    await advance(1100);
    expect(calls.filter(isDueQuery).map((c) => c.args[1])).toEqual([
      { max: T0, limit: 3 },
      { max: T0 + 500, limit: 3 },
      { max: T0 + 1500, limit: 3 },
    ]);
    expect(g.calls).toEqual(['a', 'b']);
    expect(updatesOfB()).toHaveLength(1);
  });
});

describe('stopping', () => {
  /** Whether `p` has settled once every pending promise ran (no timer advanced). */
  const settledNow = async (p: Promise<unknown>) => {
    let done = false;
    void p.finally(() => (done = true));
    await settle();
    return done;
  };

  it('with nothing in flight, resolves without waiting for the grace and leaves no timer', async () => {
    const { outbox, scans, advance } = setup({ mail: async () => undefined });
    outbox.start();
    await advance(0);
    expect(vi.getTimerCount()).toBe(1); // the poll
    expect(await settledNow(outbox.stop())).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    await advance(5000);
    expect(scans).toEqual([0]);
  });

  it('with a grace of 0, aborts what is in flight at once', async () => {
    const g = gated();
    const { outbox, enqueue, rec, advance } = setup({ mail: g.deliver }, { stopGraceMs: 0 });
    await enqueue(item('a'));
    outbox.start();
    await advance(0);
    expect(g.calls).toEqual(['a']);
    expect(await settledNow(outbox.stop())).toBe(true);
    expect(outbox.inFlight).toBe(0);
    expect(await rec('a')).toMatchObject({ attempts: 1, lastError: 'outbox stopping', due: T0 + 100 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('waits the grace (1 s by default) for a delivery that does not finish, then aborts it', async () => {
    const g = gated();
    const { outbox, enqueue, rec, advance } = setup({ mail: g.deliver });
    await enqueue(item('a'));
    outbox.start();
    await advance(0);
    let stopped = false;
    const stopping = outbox.stop().then(() => (stopped = true));
    await advance(999);
    expect(stopped).toBe(false);
    expect(outbox.inFlight).toBe(1);
    await advance(1);
    await stopping;
    expect(outbox.inFlight).toBe(0);
    expect(await rec('a')).toMatchObject({ attempts: 1, lastError: 'outbox stopping', due: T0 + 1000 + 100 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a delivery settling within the grace starts no other and leaves no timer', async () => {
    const g = gated();
    const { outbox, enqueue, rec, mem, advance } = setup({ mail: g.deliver }, { concurrency: 1 });
    await enqueue(item('a'), item('b', 'mail', T0 + 1));
    outbox.start();
    await advance(10);
    expect(g.calls).toEqual(['a']);
    const stopping = outbox.stop();
    g.open('a');
    expect(await settledNow(stopping)).toBe(true);
    expect(await mem.get(STAT_DELIVERED)).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
    await advance(5000);
    expect(g.calls).toEqual(['a']);
    expect((await rec('b'))?.attempts).toBe(0);
  });

  it('during a scan: waits for it, claims nothing more, aborts what it started and schedules nothing', async () => {
    const g = gated();
    const { outbox, enqueue, rec, hooks, advance } = setup({ mail: g.deliver }, { stopGraceMs: 0 });
    await enqueue(item('a'), item('b', 'mail', T0 + 1));
    await advance(1);
    const held = gate();
    // the scan is held in the claim of a
    hooks.after = (c) => (c.method === 'update' && (c.args[0] as string[])[0] === outboxKey('a') ? held.shut : undefined);
    outbox.start();
    await advance(0);
    hooks.after = undefined;
    let stopped = false;
    const stopping = outbox.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    held.open();
    await stopping;
    await settle();
    expect(outbox.inFlight).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    // a was claimed before the stop and its attempt aborted; b was not claimed
    expect(await rec('a')).toMatchObject({ attempts: 1, lastError: 'outbox stopping' });
    expect((await rec('b'))?.attempts).toBe(0);
    await advance(5000);
    expect((await rec('b'))?.attempts).toBe(0);
  });

  it('a stopped outbox takes more deliverers and starts again', async () => {
    const got: string[] = [];
    const { outbox, enqueue, advance, mem } = setup({ mail: async () => undefined });
    outbox.start();
    await advance(0);
    await outbox.stop();
    outbox.addDeliverers({ late: async (it) => void got.push(it.id) });
    await enqueue(item('l1', 'late'));
    outbox.start();
    await advance(10);
    expect(got).toEqual(['l1']);
    expect(await mem.get(STAT_DELIVERED)).toBe(1);
  });
});

describe('a failing store', () => {
  it('a failed scan is said, and the loop scans again at the poll', async () => {
    const boom = new Error('store down');
    const g = gated();
    const { outbox, enqueue, hooks, logs, scans, advance } = setup({ mail: g.deliver });
    await enqueue(item('a'));
    hooks.before = (c) => {
      if (isDueQuery(c)) {
        hooks.before = undefined;
        throw boom;
      }
    };
    outbox.start();
    await advance(0);
    expect(logs).toEqual([{ level: 'warn', obj: { err: boom }, msg: 'outbox scan failed' }]);
    expect(g.calls).toEqual([]);
    await advance(1000);
    expect(scans).toEqual([0, 1000]);
    expect(g.calls).toEqual(['a']);
  });

  it('without a logger, a failed scan is passed over the same way', async () => {
    const g = gated();
    const { outbox, enqueue, hooks, advance } = setup({ mail: g.deliver }, {}, false);
    await enqueue(item('a'));
    hooks.before = (c) => {
      if (isDueQuery(c)) {
        hooks.before = undefined;
        throw new Error('store down');
      }
    };
    outbox.start();
    await advance(1000);
    expect(g.calls).toEqual(['a']);
  });

  it('a failed count of the held items at start is said', async () => {
    const boom = new Error('count failed');
    const { outbox, hooks, logs, advance } = setup({ mail: async () => undefined, peer: heldPeer });
    hooks.before = (c) => {
      if (c.method === 'indexCount') {
        hooks.before = undefined;
        throw boom;
      }
    };
    outbox.start();
    await advance(0);
    expect(logs.filter((l) => l.level !== 'debug')).toEqual([{ level: 'warn', obj: { err: boom }, msg: 'outbox hold count failed' }]);
  });

  it('a settlement that cannot be written is said; the item keeps its claim until the lease runs out, and the loop goes on', async () => {
    const boom = new Error('write failed');
    const { outbox, enqueue, hooks, logs, rec, advance, mem } = setup({ mail: async () => undefined }, { leaseMs: 5000 });
    await enqueue(item('a'));
    let claims = 0;
    hooks.before = (c) => {
      if (c.method === 'update' && (c.args[0] as string[])[0] === outboxKey('a') && ++claims > 1) throw boom;
    };
    outbox.start();
    await advance(10);
    expect(logs.filter((l) => l.level !== 'debug')).toEqual([{ level: 'error', obj: { err: boom, id: 'a' }, msg: 'outbox bookkeeping failed; the lease will expire' }]);
    expect(outbox.inFlight).toBe(0);
    expect(await rec('a')).toMatchObject({ attempts: 1, due: T0 + 5000 });
    hooks.before = undefined;
    await enqueue(item('b', 'mail', T0 + 10));
    outbox.kick();
    await advance(10);
    expect(await mem.get(STAT_DELIVERED)).toBe(1);
    expect(await rec('b')).toBeUndefined();
  });

  it('a record gone between its claim and the delivery (delivered elsewhere) is said and not delivered', async () => {
    const g = gated();
    const { outbox, enqueue, hooks, logs, advance, mem } = setup({ mail: g.deliver });
    await enqueue(item('a'));
    // another process re-claimed and delivered the item just before this one reads its claim back
    removeBeforeClaimRead(hooks, mem, 'a');
    outbox.start();
    await advance(10);
    expect(g.calls).toEqual([]);
    expect(outbox.inFlight).toBe(0);
    expect(logs.filter((l) => l.level !== 'debug')).toEqual([{ level: 'warn', obj: { id: 'a', dest: 'mail' }, msg: 'outbox claim lost before delivery; not delivered here' }]);
  });

  it('without a logger, a delivery is settled once, as delivered', async () => {
    const { outbox, enqueue, calls, advance, mem } = setup({ mail: async () => undefined }, {}, false);
    await enqueue(item('a'));
    outbox.start();
    await advance(10);
    expect(await mem.get(STAT_DELIVERED)).toBe(1);
    // the claim and the settlement
    expect(calls.filter((c) => c.method === 'update' && (c.args[0] as string[])[0] === outboxKey('a'))).toHaveLength(2);
  });
});

describe('without a logger', () => {
  it('a failing store rejects no promise that nobody awaits (the process would end on it)', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { outbox, enqueue, hooks, advance, rec } = setup({ mail: async () => undefined, peer: heldPeer }, { leaseMs: 5000 }, false);
      await enqueue(item('a'));
      let claims = 0;
      // the count of held items at start fails, and so does every settlement of a
      hooks.before = (c) => {
        if (c.method === 'indexCount') throw new Error('count failed');
        if (c.method === 'update' && (c.args[0] as string[])[0] === outboxKey('a') && ++claims > 1) throw new Error('write failed');
      };
      outbox.start();
      await advance(10);
      await settle();
      expect(outbox.inFlight).toBe(0);
      expect(await rec('a')).toMatchObject({ attempts: 1, due: T0 + 5000 });
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a claim found gone before the delivery ends the attempt: nothing is settled', async () => {
    const g = gated();
    const { outbox, enqueue, hooks, calls, advance, mem } = setup({ mail: g.deliver }, {}, false);
    await enqueue(item('a'));
    removeBeforeClaimRead(hooks, mem, 'a');
    outbox.start();
    await advance(10);
    expect(g.calls).toEqual([]);
    expect(outbox.inFlight).toBe(0);
    // the claim only
    expect(calls.filter((c) => c.method === 'update' && (c.args[0] as string[])[0] === outboxKey('a'))).toHaveLength(1);
  });
});

describe('a start while a stop waits for a scan', () => {
  it('runs no scan beside the one still running, and scans again once it is over', async () => {
    const { outbox, calls, hooks, scans, advance } = setup({ mail: async () => undefined });
    const held = gate();
    hooks.after = (c) => (isDueQuery(c) ? held.shut : undefined);
    outbox.start();
    await advance(0);
    hooks.after = undefined;
    const stopping = outbox.stop();
    outbox.start();
    await advance(10);
    expect(scans).toEqual([0]);
    expect(calls.filter(isDueQuery)).toHaveLength(1);
    held.open();
    await settle();
    await stopping;
    await advance(1);
    expect(scans).toEqual([0, 10]);
  });
});

describe('paging', () => {
  // each part (the global layout and every partition) is read from its start up to offset + limit
  const walk = (calls: Call[]) => calls.filter((c) => c.method === 'indexRange' && c.args[0] === OUTBOX_CREATED).map((c) => c.args[1]);
  const reads = (calls: Call[]) => calls.filter((c) => c.method === 'getMany').length;

  it('the pending list reads pages of `limit`, or of at least 100 when it keeps one destination', async () => {
    const { outbox, enqueue, calls } = setup({});
    await enqueue(...Array.from({ length: 150 }, (_, i) => item(`a${i}`, 'a', T0 + i)), item('b0', 'b', T0 + 500), item('b1', 'b', T0 + 501));
    const run = async (dest: string | undefined, limit: number) => {
      calls.length = 0;
      const ids = (await outbox.pending(dest, limit)).map((p) => p.id);
      return { ids, pages: walk(calls), reads: reads(calls) };
    };
    expect(await run(undefined, 3)).toEqual({ ids: ['a0', 'a1', 'a2'], pages: [{ limit: 3 }], reads: 1 });
    expect(await run('b', 2)).toEqual({ ids: ['b0', 'b1'], pages: [{ limit: 100 }, { limit: 200 }], reads: 2 });
    expect(await run('b', 200)).toEqual({ ids: ['b0', 'b1'], pages: [{ limit: 200 }], reads: 1 });
    expect(await run(undefined, 200)).toMatchObject({ pages: [{ limit: 200 }], reads: 1 });
  });

  it('the walk ends at an empty page without reading records, or at a short page', async () => {
    const { outbox, enqueue, calls } = setup({});
    await enqueue(...Array.from({ length: 100 }, (_, i) => item(`a${i}`, 'a', T0 + i)));
    expect(await outbox.pending('b')).toEqual([]);
    expect(walk(calls)).toEqual([{ limit: 100 }, { limit: 200 }]);
    expect(reads(calls)).toBe(1);
  });

  it('stats read one entry for the oldest pending item', async () => {
    const { outbox, enqueue, calls } = setup({});
    await enqueue(item('a', 'mail', T0 + 1), item('b', 'mail', T0 + 2));
    expect(await outbox.stats()).toEqual({ pending: 2, held: 0, delivered: 0, failedAttempts: 0, oldestPendingAt: T0 + 1 });
    expect(walk(calls)).toEqual([{ limit: 1 }]);
  });
});
