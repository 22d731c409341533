/**
 * Routes that declare `idempotency`: the hub begins the Idempotency-Key, replays a repeated
 * request, refuses a reused or running key, frees the key of a failed attempt, and records the
 * answer in the effect's own atomic update when the handler asks for it (ctx.idempotency.finish).
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { Hub, Reply } from '../../src/hub/index.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { inject } from '../support/inject.js';
import { tempDir } from '../support/process.js';
import { until } from '../support/wait.js';

let hub: Hub;
let store: Store;
const clock = new ManualClock(1_000_000_000_000);
let gate: Promise<void> | undefined;
/** Throw store_unavailable after the effect's write landed (a WAIT shortfall), once. */
let loseNextAnswer = false;

const count = async (key: string) => ((await store.get<number>(key)) ?? 0);

beforeAll(async () => {
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 4096, webDir: tempDir('idempotent-web'), shutdownGraceMs: 200 });
  store = await openLmdbStore({ path: tempDir('idempotent-store') });
  hub.useState(store, clock);
  hub.authenticate(async (token) => (token.startsWith('t-') ? { id: token.slice(2), name: token, roles: [], kind: 'account' } : undefined));
  const body = { schema: z.object({ n: z.number().int(), fail: z.boolean().optional() }) };
  // the effect and its answer in one atomic update, as a service does it
  hub.route({
    method: 'POST',
    path: '/atomic',
    body,
    auth: { optional: true },
    idempotency: { key: 'optional' },
    response: { 201: z.object({ n: z.number(), total: z.number() }) },
    handler: async (ctx) => {
      if (ctx.body.fail) throw new AppError('invalid', 'refused', 'refused on purpose');
      await gate;
      const total = await store.update(['atomic:total'], ([cur]) => {
        const next = ((cur as number | undefined) ?? 0) + ctx.body.n;
        const answer = { n: ctx.body.n, total: next };
        return { writes: [{ op: 'set', key: 'atomic:total', value: next }, ...(ctx.idempotency?.finish(201, answer) ?? [])], result: next };
      });
      if (loseNextAnswer) {
        loseNextAnswer = false;
        throw new AppError('unavailable', 'store_unavailable', 'the write was not confirmed by enough replicas');
      }
      return Reply.json({ n: ctx.body.n, total }, 201);
    },
  });
  // a handler that does not record its answer: the hub records it after the effect
  hub.route({
    method: 'POST',
    path: '/plain',
    body,
    idempotency: { key: 'required' },
    handler: async (ctx) => {
      const n = await store.incr('plain:runs');
      return Reply.text(`run ${n} of ${ctx.body.n}`);
    },
  });
});

afterAll(async () => {
  await hub?.stop();
  await store?.close();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) => inject(hub, 'POST', path, JSON.stringify(body), headers);

describe('a route that declares idempotency', () => {
  it('runs a keyless request each time where the key is optional', async () => {
    const before = await count('atomic:total');
    expect((await post('/atomic', { n: 1 })).status).toBe(201);
    expect((await post('/atomic', { n: 1 })).status).toBe(201);
    expect(await count('atomic:total')).toBe(before + 2);
  });

  it('replays the first answer for the same key and request, without running the effect again', async () => {
    const first = await post('/atomic', { n: 5 }, { 'idempotency-key': 'k-replay' });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const total = await count('atomic:total');
    const again = await post('/atomic', { n: 5 }, { 'idempotency-key': 'k-replay' });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await count('atomic:total')).toBe(total);
  });

  it('refuses the same key with another request (422) and a malformed key (400)', async () => {
    await post('/atomic', { n: 2 }, { 'idempotency-key': 'k-reuse' });
    const other = await post('/atomic', { n: 3 }, { 'idempotency-key': 'k-reuse' });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    const bad = await post('/atomic', { n: 2 }, { 'idempotency-key': 'é' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('idempotency_key_invalid');
  });

  it('keeps keys per caller: the same key of two callers names two requests', async () => {
    const a = await post('/atomic', { n: 7 }, { 'idempotency-key': 'k-shared', authorization: 'Bearer t-ann' });
    const total = await count('atomic:total');
    const b = await post('/atomic', { n: 7 }, { 'idempotency-key': 'k-shared', authorization: 'Bearer t-bob' });
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(b.body.total).toBe(total + 7);
    expect(a.body.total).not.toBe(b.body.total);
  });

  it('frees the key of a refused request, so the corrected request may use it', async () => {
    const refused = await post('/atomic', { n: 4, fail: true }, { 'idempotency-key': 'k-fix' });
    expect(refused.status).toBe(400);
    await until('the freed key', async () => (await post('/atomic', { n: 4 }, { 'idempotency-key': 'k-fix' })).status === 201);
  });

  it('answers 409 while the first request with the key still runs', async () => {
    let open!: () => void;
    gate = new Promise((r) => (open = r));
    const first = post('/atomic', { n: 1 }, { 'idempotency-key': 'k-running' });
    await until('the first attempt holds its key', async () => (await store.get('idem:anon:k-running')) !== undefined);
    const second = await post('/atomic', { n: 1 }, { 'idempotency-key': 'k-running' });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('idempotency_in_progress');
    open();
    gate = undefined;
    expect((await first).status).toBe(201);
    expect((await post('/atomic', { n: 1 }, { 'idempotency-key': 'k-running' })).headers['idempotent-replayed']).toBe('true');
  });

  it('a 503 whose write had landed: the retry replays the answer written with the effect, and the effect stays single', async () => {
    loseNextAnswer = true;
    const before = await count('atomic:total');
    const lost = await post('/atomic', { n: 11 }, { 'idempotency-key': 'k-lost' });
    expect(lost.status).toBe(503);
    expect(await count('atomic:total')).toBe(before + 11);
    const retry = await post('/atomic', { n: 11 }, { 'idempotency-key': 'k-lost' });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toEqual({ n: 11, total: before + 11 });
    expect(await count('atomic:total')).toBe(before + 11);
  });

  it('where the key is required, refuses a request without it; records a handler\'s answer itself, text included', async () => {
    const none = await post('/plain', { n: 1 });
    expect(none.status).toBe(400);
    expect(none.body.error.code).toBe('idempotency_key_missing');
    const first = await post('/plain', { n: 1 }, { 'idempotency-key': 'k-plain' });
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toMatch(/^text\/plain/);
    const again = await post('/plain', { n: 1 }, { 'idempotency-key': 'k-plain' });
    expect(again.text).toBe(first.text);
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await count('plain:runs')).toBe(1);
  });

  it('documents the header in /openapi.json', async () => {
    const doc = hub.api.document() as { paths: Record<string, Record<string, { parameters?: { name: string; in: string; required: boolean }[]; responses: Record<string, unknown> }>> };
    const atomic = doc.paths['/atomic']!.post!;
    expect(atomic.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }));
    expect(Object.keys(atomic.responses)).toEqual(expect.arrayContaining(['409', '422']));
    expect(doc.paths['/plain']!.post!.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', required: true }));
  });
});
