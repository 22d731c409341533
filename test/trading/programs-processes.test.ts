import { EventSource } from 'eventsource';
import { describe, expect, it } from 'vitest';
import { get, until } from '../support/http.js';
import { tempDir, type HubProcess } from '../support/process.js';
import { redisProcesses } from '../support/redis-processes.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { tcpProxy } from '../support/proxy.js';

/**
 * Live programs across real hub processes (dist/src/main.js; `npm run build` first): the stream on
 * Redis seen from another process, one process per program (the lease) with takeover when its
 * process dies, and resume after a restart on LMDB. Candles close every second (PROGRAM_SPEED=60).
 */
const CLOCK_START = '2026-11-18T12:01:00Z';
const ENV = { CLOCK_START, PROGRAM_SPEED: '60', PROGRAM_LEASE_MS: '1500', TRADING_WORKERS: '1', ...AUTH_TEST_ENV };
const BAR = 1000;
const { redis, prefix: freshPrefix, start: startProcess } = await redisProcesses();

async function start(env: Record<string, string>): Promise<HubProcess> {
  return startProcess({ ...ENV, ...env }, 30_000);
}
/** The trader token of the current test (accounts live in the store every process shares). */
let token = '';
const post = async (base: string, path: string, body: unknown) => {
  const r = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
};
const status = async (base: string, id: string) => (await get('', `${base}/api/program/status/${id}`, bearer(token))).body.program;
const create = async (base: string, name: string, settings: Record<string, unknown> = {}) =>
  (await post(base, '/api/program/create', { name, strategy: 'ema_cross', symbol: 'CL', params: { fast: 2, slow: 3 }, settings })).body.program.id as string;

/** A stock EventSource on the program stream as the current test's trader (token as access_token). */
function stream(url: string) {
  const got: { event: string; id: string; data: any }[] = [];
  const es = new EventSource(`${url}${url.includes('?') ? '&' : '?'}access_token=${token}`);
  for (const name of ['signal', 'trade', 'status', 'tick', 'reset']) {
    es.addEventListener(name, (e) => got.push({ event: name, id: e.lastEventId, data: JSON.parse(e.data) }));
  }
  const opened = new Promise<void>((r) => es.addEventListener('open', () => r(), { once: true }));
  return { es, got, opened };
}


describe.skipIf(!redis.available)('live programs on Redis, two processes', () => {
  it('a subscriber on one process sees the programs of the other; each program runs on exactly one process', async () => {
    const prefix = freshPrefix('programs');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('programs-redis') };
    const [a, b] = await Promise.all([start(env), start(env)]);
    token = await signIn(a.url, ['trader']);
    const s = stream(`${b.url}/api/program/stream`);
    await s.opened;
    const ids = [await create(a.url, 'a1'), await create(a.url, 'a2'), await create(b.url, 'b1'), await create(b.url, 'b2')];
    await post(a.url, '/api/program/start', { id: ids[0] });
    await post(a.url, '/api/program/start', { id: ids[1] });
    await post(b.url, '/api/program/start', { id: ids[2] });
    await post(b.url, '/api/program/start', { id: ids[3] });

    // status events of programs started on A reach the subscriber on B
    await until('four running statuses', () => s.got.filter((e) => e.event === 'status' && e.data.state === 'running').length === 4);
    const owners = await Promise.all(ids.map(async (id) => (await status(a.url, id)).owner as string));
    expect(owners[0]).toBe(owners[1]);
    expect(owners[2]).toBe(owners[3]);
    expect(owners[0]).not.toBe(owners[2]);

    // ticks from both processes; in each 3-second slot every program appears exactly once
    await until('two tick slots with all four programs', () => {
      const slots = new Map<number, string[]>();
      for (const e of s.got) if (e.event === 'tick') slots.set(e.data.t, [...(slots.get(e.data.t) ?? []), ...e.data.programs.map((p: { program: string }) => p.program)]);
      return [...slots.values()].filter((p) => p.length === 4).length >= 2;
    });
    const slots = new Map<number, string[]>();
    for (const e of s.got) if (e.event === 'tick') slots.set(e.data.t, [...(slots.get(e.data.t) ?? []), ...e.data.programs.map((p: { program: string }) => p.program)]);
    for (const programs of slots.values()) expect(new Set(programs).size).toBe(programs.length);
    // signals of A's programs reach B's subscriber
    await until("a signal of A's programs", () => s.got.some((e) => e.event === 'signal' && (e.data.program === ids[0] || e.data.program === ids[1])));

    // A dies: after its leases expire, B drives A's programs too
    await a.stop('SIGKILL');
    await until('B owns all four', async () => {
      const now = await Promise.all(ids.map(async (id) => (await status(b.url, id)).owner));
      return now.every((o) => o === owners[2]);
    });
    const before = s.got.length;
    await until('a tick of B with all four', () =>
      s.got.slice(before).some((e) => e.event === 'tick' && e.data.programs.length === 4),
    );
    s.es.close();
  }, 60_000);
});

describe.skipIf(!redis.available)('a program through a failover (Redis, kill -9)', () => {
  it('counts exactly the bars that closed while it ran, emits each signal once, and keeps the open position', async () => {
    const prefix = freshPrefix('programs-failover');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('programs-failover') };
    const [a, b] = await Promise.all([start(env), start(env)]);
    token = await signIn(a.url, ['trader']);
    const s = stream(`${b.url}/api/program/stream`);
    await s.opened;
    // always in the market once it entered: a reversal closes and reopens, no stop or target
    const id = await create(a.url, 'f', { stop_loss_atr: 0, take_profit_atr: 0 });
    const started = (await post(a.url, '/api/program/start', { id })).body.program;
    expect(started.from_bar).toBe(Math.floor(started.updated_at / BAR) - 1);
    const ownerA = (await status(a.url, id)).owner as string;
    await until('an open position on A', async () => (await status(b.url, id)).stats.open_positions === 1, 30_000);

    await a.stop('SIGKILL');
    const atCrash = (await status(b.url, id)).stats;
    expect(atCrash.open_positions).toBe(1);
    await until('B drives it', async () => {
      const o = (await status(b.url, id)).owner;
      return o !== null && o !== ownerA;
    });
    // the first trade of B closes the position A left open
    const tradesOfB = () => s.got.filter((e) => e.event === 'trade' && e.data.program === id && e.data.bar > atCrash.last_bar);
    await until('a trade of B', () => tradesOfB().length > 0, 30_000);
    expect(tradesOfB()[0]!.data).toMatchObject({ kind: 'exit', side: atCrash.position === 'long' ? 'sell' : 'buy' });

    // pause and resume on B; every bar that closed while it ran, once
    const paused = (await post(b.url, '/api/program/pause', { id })).body.program;
    const firstRun = Math.floor(paused.updated_at / BAR) - 1 - started.from_bar;
    await until('the bars up to the pause', async () => (await status(b.url, id)).stats.last_bar === Math.floor(paused.updated_at / BAR) - 1);
    expect((await status(b.url, id)).stats.bars).toBe(firstRun);
    const resumed = (await post(b.url, '/api/program/start', { id })).body.program;
    expect(resumed.from_bar).toBe(Math.floor(resumed.updated_at / BAR) - 1);
    await until('bars after the resume', async () => (await status(b.url, id)).stats.bars >= firstRun + 3);
    const stopped = (await post(b.url, '/api/program/stop', { id })).body.program;
    const last = Math.floor(stopped.updated_at / BAR) - 1;
    await until('the bars up to the stop', async () => (await status(b.url, id)).stats.last_bar === last);
    const final = await status(b.url, id);
    expect(final.stats.bars).toBe(firstRun + last - resumed.from_bar);

    // signals: one per (program, bar), their ids (the program's n-th signal) and stream ids unique,
    // the store's list complete
    const received = s.got.filter((e) => e.event === 'signal' && e.data.program === id);
    const signals = received.map((e) => e.data);
    expect(new Set(signals.map((x) => x.id)).size).toBe(signals.length);
    expect(new Set(received.map((e) => e.id)).size).toBe(signals.length);
    expect(new Set(signals.map((x) => x.bar)).size).toBe(signals.length);
    const stored = (await get('', `${b.url}/api/program/logs/${id}?limit=500`, bearer(token))).body;
    expect(new Set(stored.signals.map((x: { bar: number }) => x.bar)).size).toBe(stored.signals.length);
    expect(stored.signals).toHaveLength(final.stats.signals);
    const bars = stored.signals.map((x: { bar: number }) => x.bar);
    expect(bars.every((k: number) => (k > started.from_bar && k <= paused.from_bar + firstRun) || (k > resumed.from_bar && k <= last))).toBe(true);
    expect(stored.logs.some((l: { code: string; message: string }) => l.code === 'claimed' && l.message.includes('restored'))).toBe(true);
    s.es.close();
  }, 90_000);
});

describe('live programs resume after a restart (LMDB)', () => {
  it('a running program keeps its statistics and runs again on the next process', async () => {
    const dir = tempDir('programs-restart');
    const first = await start({ DATA_DIR: dir });
    token = await signIn(first.url, ['trader']);
    const id = await create(first.url, 'r');
    await post(first.url, '/api/program/start', { id });
    const s1 = stream(`${first.url}/api/program/stream?program=${id}`);
    await until('a tick', () => s1.got.some((e) => e.event === 'tick'));
    s1.es.close();
    const bars1 = (await status(first.url, id)).stats.bars as number;
    expect(bars1).toBeGreaterThan(0);
    expect(await first.stop()).toBe(0);

    const second = await start({ DATA_DIR: dir });
    const st = await status(second.url, id);
    expect(st.state).toBe('running');
    expect(st.stats.bars).toBeGreaterThanOrEqual(bars1);
    const s2 = stream(`${second.url}/api/program/stream?program=${id}`);
    await until('a tick after the restart', () => s2.got.some((e) => e.event === 'tick'));
    await until('more bars', async () => (await status(second.url, id)).stats.bars > bars1);
    // claimed by the first process, then by the second (which may claim it again itself when a
    // machine under load let its lease lapse: the same owner)
    const logs = (await get('', `${second.url}/api/program/logs/${id}`, bearer(token))).body.logs as { code: string; message: string }[];
    const owners = logs.filter((l) => l.code === 'claimed').map((l) => /^driven by (\S+) /.exec(l.message)![1]);
    expect(owners.length).toBeGreaterThanOrEqual(2);
    expect(new Set(owners).size).toBe(2);
    expect(owners[0]).not.toBe(owners.at(-1));
    s2.es.close();
  }, 40_000);
});

describe.skipIf(!redis.available)('the program stream across a hub restart (Redis)', () => {
  it('a stock EventSource resumes after its hub restarts and gets exactly the events it missed', async () => {
    const prefix = freshPrefix('programs-sse-restart');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('programs-sse-restart') };
    const [hub, other] = await Promise.all([start(env), start(env)]);
    token = await signIn(other.url, ['trader']);
    const events = (s: ReturnType<typeof stream>) => s.got.filter((e) => e.event !== 'tick');
    const offset = (id: string) => Number(/^\w+-(\d+)$/.exec(id)![1]);
    // the client under test, on the hub that restarts (its address stays: a relay in front of it); a
    // reference on the other process throughout
    const address = await tcpProxy(hub.url);
    const client = stream(`${address.url}/api/program/stream`);
    const reference = stream(`${other.url}/api/program/stream`);
    await Promise.all([client.opened, reference.opened]);

    const p = await create(other.url, 'before');
    await post(other.url, '/api/program/start', { id: p });
    await post(other.url, '/api/program/pause', { id: p });
    await until('the pause at the client', () => events(client).some((e) => e.data.state === 'paused'));
    const lastSeen = events(client).at(-1)!.id;

    await hub.stop('SIGKILL');
    address.cut();
    // while the client's hub is down: a run with signals, a stop, a program created and deleted
    await post(other.url, '/api/program/start', { id: p });
    await until('a signal meanwhile', () => events(reference).some((e) => e.event === 'signal' && offset(e.id) > offset(lastSeen)), 30_000);
    await post(other.url, '/api/program/stop', { id: p });
    const q = await create(other.url, 'meanwhile');
    await post(other.url, '/api/program/start', { id: q });
    await post(other.url, '/api/program/delete', { id: q });
    await until('the delete at the reference', () => events(reference).some((e) => e.data.program === q && e.data.state === 'deleted'));
    const missed = events(reference).filter((e) => offset(e.id) > offset(lastSeen));
    expect(missed.length).toBeGreaterThan(4);
    expect(events(client).at(-1)!.id).toBe(lastSeen);

    // the hub again, at the same address: the EventSource reconnects by itself with Last-Event-ID
    const again = await start(env);
    address.retarget(again.url);
    address.restore();
    await until('the client caught up', () => events(client).some((e) => e.data.program === q && e.data.state === 'deleted'), 20_000);
    // and continues live
    await post(again.url, '/api/program/delete', { id: p });
    for (const s of [client, reference]) await until('the live delete', () => events(s).some((e) => e.data.program === p && e.data.state === 'deleted'));
    expect(client.got.some((e) => e.event === 'reset')).toBe(false);
    // exactly the reference's events: none missed, none twice, same ids and data
    expect(events(client).map((e) => [e.id, e.data])).toEqual(events(reference).map((e) => [e.id, e.data]));
    const after = events(client).filter((e) => offset(e.id) > offset(lastSeen));
    expect(after.slice(0, missed.length).map((e) => e.id)).toEqual(missed.map((e) => e.id));
    client.es.close();
    reference.es.close();
    await address.close();
  }, 60_000);
});
