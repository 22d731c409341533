import { connect } from 'node:net';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { concurrency } from '../../src/hub/concurrency.js';
import { Hub } from '../../src/hub/index.js';
import { tempDir } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** Handlers that wait until the test lets them go (or fail, when told so). */
function gates() {
  const open: { go: () => void; fail: () => void }[] = [];
  let started = 0;
  const wait = () =>
    new Promise<void>((resolve, reject) => {
      started++;
      open.push({ go: resolve, fail: () => reject(new Error('handler failed')) });
    });
  return { open, wait, started: () => started };
}

function hubWith(guard: ReturnType<typeof concurrency>, wait: () => Promise<void>) {
  const hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: tempDir('conc-web'), shutdownGraceMs: 100 });
  hub.route({ method: 'GET', path: '/slow', guards: [guard], handler: async () => (await wait(), { ok: true }) });
  cleanup.push(() => hub.stop());
  return hub;
}

describe('hub.concurrency', () => {
  it('refuses bad declarations at start-up', () => {
    const hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: tempDir('conc-web'), shutdownGraceMs: 100 });
    cleanup.push(() => hub.stop());
    expect(() => hub.concurrency('x', { max: 0, per: 'route' })).toThrow(/max/);
    expect(() => hub.concurrency('x', { max: 1.5, per: 'route' })).toThrow(/max/);
    expect(() => hub.concurrency('x', { max: 1, per: 'user' as never })).toThrow(/per/);
    expect(() => hub.concurrency('x', { max: 1, per: 'route', queue: -1 })).toThrow(/queue/);
    expect(() => hub.concurrency('x', { max: 1, per: 'route', retryAfterS: 0 })).toThrow(/retryAfterS/);
  });

  it('a route cap: max run, queue wait in order, the rest 503 busy with Retry-After; slots come back on success and on error', async () => {
    const g = gates();
    const guard = concurrency('slow', { max: 2, per: 'route', queue: 1 });
    const hub = hubWith(guard, g.wait);
    const a = hub.inject('GET', '/slow');
    const b = hub.inject('GET', '/slow');
    const c = hub.inject('GET', '/slow');
    await waitFor(() => g.started() === 2);
    const refused = await hub.inject('GET', '/slow');
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect((refused.body as { error: { code: string; details: unknown } }).error).toMatchObject({ code: 'busy', details: { limit: 2, retry_after_s: 1 } });
    g.open[0]!.fail(); // an error gives the slot back too: the waiting one starts
    expect((await a).status).toBe(500);
    await waitFor(() => g.started() === 3);
    expect(guard.inFlight()).toBe(2);
    g.open[1]!.go();
    g.open[2]!.go();
    expect((await b).status).toBe(200);
    expect((await c).status).toBe(200);
    expect(guard.inFlight()).toBe(0);
  });

  it('per address or identity: 429 too_many_in_flight for that client only', async () => {
    const g = gates();
    const guard = concurrency('slow', { max: 1, per: 'identity' });
    const hub = hubWith(guard, g.wait);
    const a = hub.inject('GET', '/slow');
    await waitFor(() => g.started() === 1);
    const refused = await hub.inject('GET', '/slow');
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect((refused.body as { error: { code: string } }).error.code).toBe('too_many_in_flight');
    // another address (no identity: counted by address) is not held back
    const other = hub.inject('GET', '/slow', { remoteAddress: '10.0.0.9' });
    await waitFor(() => g.started() === 2);
    g.open[0]!.go();
    g.open[1]!.go();
    expect((await a).status).toBe(200);
    expect((await other).status).toBe(200);
    expect(guard.inFlight('ip:127.0.0.1')).toBe(0);
  });

  it('a client that goes away gives its slot back, and leaves the queue while waiting', async () => {
    const g = gates();
    const guard = concurrency('slow', { max: 1, per: 'route', queue: 1 });
    const hub = hubWith(guard, g.wait);
    const port = await hub.listen('127.0.0.1', 0);
    const raw = () => {
      const s = connect(port, '127.0.0.1');
      s.write('GET /slow HTTP/1.1\r\nhost: x\r\n\r\n');
      s.on('error', () => undefined);
      return s;
    };
    const first = raw();
    await waitFor(() => g.started() === 1);
    const second = raw(); // waits for the slot
    await new Promise((r) => setTimeout(r, 50));
    second.destroy(); // leaves the queue
    await new Promise((r) => setTimeout(r, 50));
    first.destroy(); // its handler is still running, but the request is over for the hub
    await waitFor(() => guard.inFlight() === 0);
    expect(g.started()).toBe(1);
    const third = fetch(`http://127.0.0.1:${port}/slow`);
    await waitFor(() => g.started() === 2);
    g.open[1]!.go();
    expect((await third).status).toBe(200);
    g.open[0]!.go();
  });
});
