import { afterAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { refusal } from '../support/refusal.js';

// The Idempotency-Key of the payment relay (src/idempotency.ts): missing 400, 1-255 visible
// ASCII characters (quotes around it dropped), another body 422, the first still running 409 for
// its 30 s lease, the first answer replayed, kept 24 hours, a refusal frees the key. The module is
// loaded afresh in each test, so a change to its constants fails tests.
const load = async () => {
  vi.resetModules();
  return { ...(await import('../../src/idempotency.js')), ...(await import('../../src/errors.js')) };
};

const T0 = Date.UTC(2026, 10, 24, 12, 0, 0);
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

async function setup(runningMs?: number) {
  const { Idempotency } = await load();
  const store = await openLmdbStore({ path: tempDir('pay-idem') });
  stores.push(store);
  const { store: recording, writes } = recordingStore(store);
  const clock = new ManualClock(T0);
  const idem = runningMs === undefined ? new Idempotency(recording, clock, undefined, 'pay:idem') : new Idempotency(recording, clock, runningMs, 'pay:idem');
  return { idem, store, clock, writes };
}

const ticketOf = (r: unknown) => (r as { ticket: { storeKey: string; fingerprint: string; token: string } }).ticket;

describe('the key', () => {
  it('is kept 24 hours and is 1 to 255 visible ASCII characters', async () => {
    const { IDEMPOTENCY_TTL_MS, KEY_RE } = await load();
    expect(IDEMPOTENCY_TTL_MS).toBe(86_400_000);
    for (const k of ['a', '!', '~', 'x'.repeat(255), 'order-42/A:b']) expect(KEY_RE.test(k), k).toBe(true);
    for (const k of ['', 'x'.repeat(256), 'a b', 'a\tb', 'ü', '\x7f', 'a\nb']) expect(KEY_RE.test(k), JSON.stringify(k)).toBe(false);
  });

  it('is required: 400 idempotency_key_missing for none or an empty one', async () => {
    const { idem } = await setup();
    for (const h of [undefined, '']) {
      expect(await refusal(idem.begin('acct', h, 'fp'))).toEqual({ status: 400, code: 'idempotency_key_missing', message: 'this request needs an Idempotency-Key header' });
    }
  });

  it('refuses a key that is not visible ASCII or too long with 400 idempotency_key_invalid; drops surrounding quotes', async () => {
    const { idem } = await setup();
    for (const h of ['a b', 'x'.repeat(256), '""', '"a b"', 'é']) {
      expect(await refusal(idem.begin('acct', h, 'fp'))).toEqual({ status: 400, code: 'idempotency_key_invalid', message: 'an Idempotency-Key is 1 to 255 visible ASCII characters' });
    }
    expect(ticketOf(await idem.begin('acct', '"k-1"', 'fp')).storeKey).toBe('pay:idem:acct:k-1');
    expect(ticketOf(await idem.begin('acct', '"k-2', 'fp')).storeKey).toBe('pay:idem:acct:"k-2');
    expect(ticketOf(await idem.begin('acct', 'k"3"', 'fp')).storeKey).toBe('pay:idem:acct:k"3"');
    expect(ticketOf(await idem.begin('acct', '"k"4', 'fp')).storeKey).toBe('pay:idem:acct:"k"4');
    expect(ticketOf(await idem.begin('acct', 'x'.repeat(255), 'fp')).storeKey).toBe(`pay:idem:acct:${'x'.repeat(255)}`);
  });
});

describe('begin, finish, replay', () => {
  it('marks the key running for 30 s, kept 24 hours, scoped to the caller', async () => {
    const { idem, writes } = await setup();
    const t = ticketOf(await idem.begin('acct-1', 'k', 'fp-a'));
    expect(t).toEqual({ storeKey: 'pay:idem:acct-1:k', fingerprint: 'fp-a', token: expect.stringMatching(new RegExp(`^${T0}-[0-9a-z]+$`)) });
    expect(writes).toEqual([{ op: 'set', key: 'pay:idem:acct-1:k', value: { state: 'running', fp: 'fp-a', until: T0 + 30_000, token: t.token }, ttlMs: 86_400_000 }]);
    // another caller's key of the same name is its own
    expect(ticketOf(await idem.begin('acct-2', 'k', 'fp-b')).storeKey).toBe('pay:idem:acct-2:k');
  });

  it('answers 409 while the first runs, until its lease ends', async () => {
    const { idem, clock } = await setup();
    await idem.begin('acct', 'k', 'fp');
    clock.advance(29_999);
    expect(await refusal(idem.begin('acct', 'k', 'fp'))).toEqual({ status: 409, code: 'idempotency_in_progress', message: 'the first request with this Idempotency-Key is still running' });
    clock.advance(1);
    const again = ticketOf(await idem.begin('acct', 'k', 'fp'));
    expect(again.storeKey).toBe('pay:idem:acct:k');
  });

  it('takes the lease length it is given', async () => {
    const { idem, clock, writes } = await setup(5_000);
    await idem.begin('acct', 'k', 'fp');
    expect(writes[0]).toMatchObject({ value: { until: T0 + 5_000 } });
    clock.advance(4_999);
    expect((await refusal(idem.begin('acct', 'k', 'fp'))).status).toBe(409);
    clock.advance(1);
    await idem.begin('acct', 'k', 'fp');
  });

  it('refuses the key with another body with 422, running or done', async () => {
    const { idem } = await setup();
    const t = ticketOf(await idem.begin('acct', 'k', 'fp-1'));
    const reused = { status: 422, code: 'idempotency_key_reused', message: 'this Idempotency-Key was used with another request body' };
    expect(await refusal(idem.begin('acct', 'k', 'fp-2'))).toEqual(reused);
    expect(t.fingerprint).toBe('fp-1');
    // the refusal changed nothing: the first still runs
    expect((await refusal(idem.begin('acct', 'k', 'fp-1'))).status).toBe(409);
  });

  it('replays the finished answer, written with the effect and kept 24 hours', async () => {
    const { idem, store } = await setup();
    const t = ticketOf(await idem.begin('acct', 'k', 'fp'));
    const answer = { status: 201, body: { id: 'p1' }, headers: { location: '/p/p1' } };
    const w = idem.finishWrites(t, answer);
    expect(w).toEqual([{ op: 'set', key: 'pay:idem:acct:k', value: { state: 'done', fp: 'fp', answer }, ttlMs: 86_400_000 }]);
    await store.update([t.storeKey], () => ({ writes: w, result: undefined }));
    expect(await idem.begin('acct', 'k', 'fp')).toEqual({ replay: answer });
    expect((await refusal(idem.begin('acct', 'k', 'other'))).status).toBe(422);
  });
});

describe('namespaces, finish after the effect, and the finished mark', () => {
  it('keeps keys under `idem` unless told; begin may name another namespace', async () => {
    const { Idempotency } = await load();
    const store = await openLmdbStore({ path: tempDir('idem-ns') });
    stores.push(store);
    const idem = new Idempotency(store, new ManualClock(T0));
    expect(idem.leaseMs).toBe(30_000);
    expect(ticketOf(await idem.begin('u', 'k', 'fp')).storeKey).toBe('idem:u:k');
    expect(ticketOf(await idem.begin('u', 'k', 'fp', 'pay:idem')).storeKey).toBe('pay:idem:u:k');
  });

  it('finish records the answer only while its own run holds the key; finishWrites marks the ticket', async () => {
    const { idem, store, clock } = await setup();
    const { finishedInEffect } = await import('../../src/idempotency.js');
    const t = ticketOf(await idem.begin('acct', 'k-fin', 'fp'));
    expect(finishedInEffect(t)).toBe(false);
    await idem.finish(t, { status: 201, body: { ok: true } });
    expect(await store.get(t.storeKey)).toEqual({ state: 'done', fp: 'fp', answer: { status: 201, body: { ok: true } } });
    // a later run took the key over after the lease: the stale run records nothing
    clock.advance(30_001);
    const stale = ticketOf(await idem.begin('acct', 'k-stale', 'fp'));
    clock.advance(30_001);
    const fresh = ticketOf(await idem.begin('acct', 'k-stale', 'fp'));
    await idem.finish(stale, { status: 200, body: 'stale' });
    expect(await store.get(fresh.storeKey)).toMatchObject({ state: 'running', token: fresh.token });
    idem.finishWrites(fresh, { status: 200, body: 'x' });
    expect(finishedInEffect(fresh)).toBe(true);
    expect(finishedInEffect(stale)).toBe(false);
  });
});

describe('abandon and done', () => {
  it('frees the key only while its own run holds it', async () => {
    const { idem, store, clock } = await setup();
    const t1 = ticketOf(await idem.begin('acct', 'k', 'fp'));
    await idem.abandon(t1);
    expect(await store.get('pay:idem:acct:k')).toBeUndefined();
    const t2 = ticketOf(await idem.begin('acct', 'k', 'fp'));
    clock.advance(30_000);
    const t3 = ticketOf(await idem.begin('acct', 'k', 'fp')); // t2's lease ran out: t3 holds the key
    expect(t3.token).not.toBe(t2.token);
    await idem.abandon(t2);
    expect(await store.get('pay:idem:acct:k')).toMatchObject({ state: 'running', token: t3.token });
    // a finished key is not freed
    await store.update([t3.storeKey], () => ({ writes: idem.finishWrites(t3, { status: 200, body: null }), result: undefined }));
    await idem.abandon(t3);
    expect(await store.get('pay:idem:acct:k')).toMatchObject({ state: 'done' });
    await idem.abandon({ storeKey: 'pay:idem:acct:none', fingerprint: 'x', token: 't' });
    expect(await store.get('pay:idem:acct:none')).toBeUndefined();
  });

  it('done() gives the answer of a finished key only', async () => {
    const { Idempotency } = await load();
    const answer = { status: 200, body: { ok: true } };
    expect(Idempotency.done({ state: 'done', fp: 'f', answer } as unknown as Json)).toEqual(answer);
    expect(Idempotency.done({ state: 'running', answer } as unknown as Json)).toBeUndefined();
    expect(Idempotency.done(undefined)).toBeUndefined();
  });
});

describe('a stored key that is not readable', () => {
  it('is refused as a corrupt record, never taken for a running or finished one', async () => {
    const { idem, store } = await setup();
    const bad: Json[] = [
      { state: 'waiting', fp: 'fp' },
      { fp: 'fp' },
      { state: 'done', fp: 'fp', answer: 'ok' },
      { state: 'done', fp: 'fp', answer: { status: '200' } },
      { state: 'done', fp: 'fp', answer: { body: 1 } },
      { state: 'running', fp: 'fp', until: 'later' },
      { state: 'running', fp: 1 },
    ];
    for (const [i, value] of bad.entries()) {
      await store.set(`pay:idem:acct:bad${i}`, value);
      expect(await refusal(idem.begin('acct', `bad${i}`, 'fp')), JSON.stringify(value)).toMatchObject({
        status: 500,
        code: 'corrupt_record',
        message: expect.stringMatching(/^a stored idempotency key is not readable/),
      });
    }
  });

  it('finish and abandon write nothing over a key that is gone or finished', async () => {
    const { idem, store } = await setup();
    const t = ticketOf(await idem.begin('acct', 'k-gone', 'fp'));
    await store.del(t.storeKey);
    await idem.finish(t, { status: 201, body: 'late' });
    expect(await store.get(t.storeKey)).toBeUndefined();
    const d = ticketOf(await idem.begin('acct', 'k-done', 'fp'));
    await idem.finish(d, { status: 201, body: 'first' });
    await idem.finish(d, { status: 500, body: 'second' });
    expect(await store.get(d.storeKey)).toEqual({ state: 'done', fp: 'fp', answer: { status: 201, body: 'first' } });
  });
});

describe('fingerprint', () => {
  it('is the SHA-256 of method, path and the JSON body, big integers as text', async () => {
    const { fingerprint } = await load();
    const { createHash } = await import('node:crypto');
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    expect(fingerprint('POST', '/pay', { a: 1 })).toBe(sha('POST /pay\n{"a":1}'));
    expect(fingerprint('POST', '/pay', undefined)).toBe(sha('POST /pay\nnull'));
    expect(fingerprint('POST', '/pay', { n: 12345678901234567890n })).toBe(sha('POST /pay\n{"n":"12345678901234567890"}'));
    expect(fingerprint('POST', '/pay', { a: 1 })).not.toBe(fingerprint('POST', '/pay', { a: 2 }));
  });
});
