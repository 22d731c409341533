import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTaskLedgerStandin, type TaskLedgerStandinState } from '../../src/peers/task-ledger-standin.js';
import { startValueStandin, type Standin, type ValueStandinState } from '../../src/peers/value-standin.js';
import {
  ledgerEntryHash,
  parsePeerAddress,
  PeerError,
  rewardPeerDeliverers,
  TaskLedgerClient,
  tcpHttpRequest,
  ValueServiceClient,
} from '../../src/reward/peers.js';

let value: Standin<ValueStandinState>;
let ledger: Standin<TaskLedgerStandinState>;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  value = await startValueStandin({ port: 0 });
  ledger = await startTaskLedgerStandin({ port: 0 });
});

afterAll(async () => {
  await Promise.all([value.close(), ledger.close(), ...closers.map((c) => c())]);
});

/** A raw TCP server whose connection handler the test writes (for exact bytes on the wire). */
async function rawServer(onConnection: (socket: Socket) => void): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** A port with nothing listening on it. */
async function deadPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

async function rejection(p: Promise<unknown>): Promise<PeerError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(PeerError);
    return err as PeerError;
  }
  throw new Error('expected a rejection');
}

describe('task ledger client over TCP against the stand-in', () => {
  it('accepts tcp:// and http:// addresses', () => {
    expect(parsePeerAddress('tcp://127.0.0.1:8092')).toEqual({ host: '127.0.0.1', port: 8092 });
    expect(parsePeerAddress('http://localhost:9')).toEqual({ host: 'localhost', port: 9 });
    expect(parsePeerAddress('tcp://[::1]:7')).toEqual({ host: '::1', port: 7 });
    expect(() => parsePeerAddress('https://x:1')).toThrow(/tcp:\/\/ or http:\/\//);
  });

  it('health, tasks, record, verify; the transaction count rises by 1 per /ledger call', async () => {
    const client = new TaskLedgerClient({ url: `tcp://127.0.0.1:${ledger.port}`, timeoutMs: 2000 });
    expect(await client.health()).toMatchObject({ ok: true, service: 'task-ledger-standin' });
    const tasks = (await client.tasks()) as { tasks: Array<{ type: string }>; count: number };
    expect(tasks.tasks.map((t) => t.type)).toContain('work_unit');
    expect(tasks.count).toBe(tasks.tasks.length);

    const before = (await client.ledger()) as { transactions: number; entries: number };
    const entry = { id: 'led-1', task: 'work_unit', member: 'm_1', kc: 27, earned_ru: 800 };
    const first = (await client.record(entry)) as Record<string, unknown>;
    expect(first).toMatchObject({ ok: true, duplicate: false, id: 'led-1', seq: before.entries + 1, hash: ledgerEntryHash(entry) });
    // GET /ledger reports the count including itself; the POST is the next call.
    expect(first.transactions).toBe(before.transactions + 1);
    // The same id again: counted as a call, not appended twice.
    const again = (await client.record(entry)) as Record<string, unknown>;
    expect(again).toMatchObject({ duplicate: true, seq: first.seq, transactions: before.transactions + 2, entries: before.entries + 1 });
    const after = (await client.ledger()) as { transactions: number; entries: number; recent: Array<{ entry: { id: string } }> };
    expect(after.transactions).toBe(before.transactions + 3);
    expect(after.entries).toBe(before.entries + 1);
    expect(after.recent.at(-1)?.entry.id).toBe('led-1');
    expect(ledger.state.transactions).toBe(after.transactions);

    // An entry with a correct hash verifies and is reported as recorded.
    const ok = await client.verify({ ...entry, hash: ledgerEntryHash(entry) });
    expect(ok).toMatchObject({ valid: true, problems: [], known_task: true, recorded: true, matches_recorded: true });
    const tampered = await client.verify({ ...entry, kc: 28, hash: ledgerEntryHash(entry) });
    expect(tampered.valid).toBe(false);
    expect(tampered.problems).toContain('hash does not match the entry');
    const shapeless = await client.verify({ task: '' });
    expect(shapeless.valid).toBe(false);
    expect(shapeless.problems.length).toBe(2);

    // GET /verify takes the entry as query parameters (numbers read as numbers).
    const q = new URLSearchParams({ id: 'led-1', task: 'work_unit', member: 'm_1', kc: '27', earned_ru: '800', hash: ledgerEntryHash(entry) });
    const res = await tcpHttpRequest({ host: '127.0.0.1', port: ledger.port, method: 'GET', path: `/verify?${q}`, timeoutMs: 2000 });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toMatchObject({ valid: true, recorded: true, matches_recorded: true });
  });

  it('a refused entry is a PeerError with the status and the error body', async () => {
    const client = new TaskLedgerClient({ url: `http://127.0.0.1:${ledger.port}`, timeoutMs: 2000 });
    const err = await rejection(client.record({ id: 'bad-hash', task: 'work_unit', hash: '0'.repeat(64) }));
    expect(err.code).toBe('status');
    expect(err.status).toBe(400);
    expect(err.body).toMatchObject({ error: { code: 'invalid_entry', details: { problems: ['hash does not match the entry'] } } });
  });

  it('idempotency key from the header wins over the body id', async () => {
    const client = new TaskLedgerClient({ url: `tcp://127.0.0.1:${ledger.port}`, timeoutMs: 2000 });
    const a = (await client.record({ id: 'hdr-a', task: 'content' }, { idempotencyKey: 'outbox-item-77' })) as { duplicate: boolean };
    const b = (await client.record({ id: 'hdr-b', task: 'content' }, { idempotencyKey: 'outbox-item-77' })) as { duplicate: boolean };
    expect([a.duplicate, b.duplicate]).toEqual([false, true]);
  });

  it('parses chunked answers (with extensions, trailers and split writes) from a real node:http server', async () => {
    const server = createHttpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // no length: node sends chunked
      res.write('{"parts":[');
      setTimeout(() => {
        res.write('"a","b",');
        setTimeout(() => res.end('"c"]}'), 20);
      }, 20);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    const port = (server.address() as AddressInfo).port;
    const res = await tcpHttpRequest({ host: '127.0.0.1', port, method: 'GET', path: '/', timeoutMs: 2000 });
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(JSON.parse(res.body.toString())).toEqual({ parts: ['a', 'b', 'c'] });
  });

  it('parses hand-written chunked bytes, skips 100 Continue, and reads close-delimited bodies', async () => {
    const chunkedPort = await rawServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 100 Continue\r\n\r\n');
        socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Multi: 1\r\nX-Multi: 2\r\n\r\n5;ext=1\r\nhel');
        setTimeout(() => socket.write('lo\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n'), 30);
        // The server keeps the connection open: the client must stop at the last chunk.
      });
    });
    const res = await tcpHttpRequest({ host: '127.0.0.1', port: chunkedPort, method: 'GET', path: '/', timeoutMs: 2000 });
    expect(res.status).toBe(200);
    expect(res.headers['x-multi']).toBe('1, 2');
    expect(res.body.toString()).toBe('hello world');

    const closePort = await rawServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.0 202 Accepted\r\nContent-Type: text/plain\r\n\r\nuntil close'));
    });
    const res2 = await tcpHttpRequest({ host: '127.0.0.1', port: closePort, method: 'POST', path: '/x', body: 'hi', timeoutMs: 2000 });
    expect([res2.status, res2.statusText, res2.body.toString()]).toEqual([202, 'Accepted', 'until close']);

    const truncatedPort = await rawServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort'));
    });
    const err = await rejection(tcpHttpRequest({ host: '127.0.0.1', port: truncatedPort, method: 'GET', path: '/', timeoutMs: 2000 }));
    expect(err.code).toBe('protocol');
  });

  it('writes a well-formed request (method, path, Host, Content-Length, idempotency key, body)', async () => {
    let seen = '';
    const port = await rawServer((socket) => {
      socket.on('data', (d: Buffer) => {
        seen += d.toString();
        if (seen.includes('\r\n\r\n') && seen.endsWith('}')) {
          socket.end('HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}');
        }
      });
    });
    const client = new TaskLedgerClient({ url: `tcp://127.0.0.1:${port}`, timeoutMs: 2000 });
    await client.record({ id: 'wire-1', task: 'module' });
    const [head, body] = seen.split('\r\n\r\n');
    const lines = head!.split('\r\n');
    expect(lines[0]).toBe('POST /ledger HTTP/1.1');
    expect(lines).toContain(`host: 127.0.0.1:${port}`);
    expect(lines).toContain('connection: close');
    expect(lines).toContain('idempotency-key: wire-1');
    expect(lines).toContain(`content-length: ${Buffer.byteLength(body!)}`);
    expect(JSON.parse(body!)).toEqual({ id: 'wire-1', task: 'module' });
  });

  it('times out against a server that accepts but never answers, and fails fast on a dead port', async () => {
    const silentPort = await rawServer(() => undefined);
    const client = new TaskLedgerClient({ url: `tcp://127.0.0.1:${silentPort}`, timeoutMs: 200 });
    // The server never answers: only the client's own time-out can end this call (a client that
    // waited for the answer would hang and the test would fail on its own time-out).
    const t0 = Date.now();
    const err = await rejection(client.health());
    expect(err.code).toBe('timeout');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);

    const dead = new TaskLedgerClient({ url: `tcp://127.0.0.1:${await deadPort()}`, timeoutMs: 2000 });
    const err2 = await rejection(dead.health());
    expect(err2.code).toBe('network');
    expect(err2.message).toMatch(/ECONNREFUSED/);
  });

  it('an abort signal ends the call early', async () => {
    const silentPort = await rawServer(() => undefined);
    const client = new TaskLedgerClient({ url: `tcp://127.0.0.1:${silentPort}`, timeoutMs: 5000 });
    const err = await rejection(client.health({ signal: AbortSignal.timeout(100) }));
    expect(err.code).toBe('aborted');
  });
});

describe('value service client against the stand-in', () => {
  it('posts inflows with an idempotency key: a repeated key adds nothing', async () => {
    const client = new ValueServiceClient({ url: value.url, timeoutMs: 2000 });
    expect(await client.health()).toMatchObject({ ok: true, service: 'value-standin' });
    const before = value.state.inflowTotal;
    const r1 = await client.inflow({ amount: 800, unit: 'RU', source: 'test' }, { idempotencyKey: 'inflow-1' });
    expect(r1).toMatchObject({ ok: true, duplicate: false, inflow_total: before + 800 });
    const r2 = await client.inflow({ amount: 800, unit: 'RU', source: 'test' }, { idempotencyKey: 'inflow-1' });
    expect(r2).toMatchObject({ ok: true, duplicate: true, inflow_total: before + 800 });
    await client.inflow({ amount: 50 }, { idempotencyKey: 'inflow-2' });
    expect(value.state.inflowTotal).toBe(before + 850);
    expect(value.state.byKey.has('inflow-1')).toBe(true);
  });

  it('non-2xx answers throw with the status; slow answers time out; dead peers fail fast', async () => {
    const client = new ValueServiceClient({ url: value.url, timeoutMs: 300 });
    const bad = await rejection(client.inflow({ amount: -1 }, { idempotencyKey: 'neg' }));
    expect([bad.code, bad.status]).toEqual(['status', 400]);
    expect(bad.message).toMatch(/400: invalid_inflow/);

    const flaky = await startValueStandin({ port: 0, failRate: 1 });
    closers.push(() => flaky.close());
    const e503 = await rejection(new ValueServiceClient({ url: flaky.url, timeoutMs: 1000 }).inflow({ amount: 1 }));
    expect(e503.status).toBe(503);
    expect(flaky.state.calls).toBe(0);

    // The slow peer holds its answer until it closes (after the test): a client that waited for it
    // instead of timing out would hang and fail.
    const slow = await startValueStandin({ port: 0, delayMs: 600_000 });
    closers.push(() => slow.close());
    const timeout = await rejection(new ValueServiceClient({ url: slow.url, timeoutMs: 200 }).inflow({ amount: 5 }, { idempotencyKey: 's-1' }));
    expect(timeout.code).toBe('timeout');
    // The slow peer did the work before answering: a retry with the same key must not add twice.
    slow.knobs.delayMs = 0;
    const retry = await new ValueServiceClient({ url: slow.url, timeoutMs: 1000 }).inflow({ amount: 5 }, { idempotencyKey: 's-1' });
    expect(retry).toMatchObject({ duplicate: true, inflow_total: 5 });

    const dead = await rejection(new ValueServiceClient({ url: `http://127.0.0.1:${await deadPort()}`, timeoutMs: 1000 }).health());
    expect(dead.code).toBe('network');
  });
});

describe('stand-in error shapes', () => {
  it('unknown routes are 404, wrong methods 405, malformed JSON 400, all {"error":{"code","message"}}', async () => {
    const cases: Array<[string, RequestInit, number, string]> = [
      [`${value.url}/nope`, {}, 404, 'not_found'],
      [`${value.url}/api/inflow`, {}, 405, 'method_not_allowed'],
      [`${value.url}/api/inflow`, { method: 'POST', body: '{bad', headers: { 'content-type': 'application/json' } }, 400, 'invalid_json'],
      [`${value.url}/api/inflow`, { method: 'POST', body: '[1]', headers: { 'content-type': 'application/json' } }, 400, 'invalid_inflow'],
      [`${ledger.url}/nope`, {}, 404, 'not_found'],
      [`${ledger.url}/tasks`, { method: 'DELETE' }, 405, 'method_not_allowed'],
      [`${ledger.url}/ledger`, { method: 'POST', body: '{"id":', headers: { 'content-type': 'application/json' } }, 400, 'invalid_json'],
      [`${ledger.url}/verify`, { method: 'POST', body: 'nope', headers: { 'content-type': 'application/json' } }, 400, 'invalid_json'],
    ];
    for (const [url, init, status, code] of cases) {
      const res = await fetch(url, init);
      expect(res.status, `${init.method ?? 'GET'} ${url}`).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe(code);
      expect(typeof body.error.message).toBe('string');
    }
  });

  it('the info routes describe exactly the routes of the document', async () => {
    const v = (await (await fetch(`${value.url}/`)).json()) as { routes: string[] };
    expect(v.routes).toEqual(['GET /', 'POST /api/inflow', 'GET /health']);
    const l = (await (await fetch(`${ledger.url}/`)).json()) as { routes: string[] };
    expect(l.routes).toEqual(['GET /', 'GET /health', 'GET /tasks', 'GET /verify', 'POST /verify', 'GET /ledger', 'POST /ledger']);
  });
});

describe('reward peer deliverers', () => {
  it('deliver to the configured peers with the item id as idempotency key', async () => {
    const deliver = rewardPeerDeliverers({
      VALUE_SERVICE_URL: value.url,
      TASK_LEDGER_URL: `tcp://127.0.0.1:${ledger.port}`,
      PEER_TIMEOUT_MS: 2000,
    });
    const signal = new AbortController().signal;
    const before = value.state.inflowTotal;
    await deliver.value!({ id: 'dl-1', dest: 'value', payload: { amount: 7 }, createdAt: 1 }, signal);
    await deliver.value!({ id: 'dl-1', dest: 'value', payload: { amount: 7 }, createdAt: 1 }, signal);
    expect(value.state.inflowTotal).toBe(before + 7);
    await deliver['task-ledger']!({ id: 'dl-2', dest: 'task-ledger', payload: { task: 'service', amount: 3 }, createdAt: 1 }, signal);
    expect(ledger.state.byKey.get('dl-2')?.entry).toEqual({ task: 'service', amount: 3, id: 'dl-2' });
  });

  it('an unconfigured peer throws "peer not configured"', async () => {
    const deliver = rewardPeerDeliverers({ VALUE_SERVICE_URL: undefined, TASK_LEDGER_URL: undefined, PEER_TIMEOUT_MS: 100 });
    const signal = new AbortController().signal;
    const err = await rejection(deliver.value!({ id: 'x', dest: 'value', payload: { amount: 1 }, createdAt: 1 }, signal));
    expect(err.code).toBe('not_configured');
    expect(err.message).toMatch(/peer not configured/);
    await expect(deliver['task-ledger']!({ id: 'y', dest: 'task-ledger', payload: {}, createdAt: 1 }, signal)).rejects.toThrow(
      /peer not configured/,
    );
  });
});
