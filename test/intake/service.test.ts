import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { normalisePhone } from '../../src/intake/input.js';
import { IntakeService, K, formatReceipt, view } from '../../src/intake/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { openRedisStore } from '../../src/store/redis.js';
import { tempDir } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

const redis = await redisOrSkip();
const stores: Store[] = [];
const prefixes: string[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

const T0 = Date.parse('2026-11-22T10:00:00+09:00');

async function lmdb() {
  const store = await openLmdbStore({ path: tempDir('intake') });
  stores.push(store);
  return store;
}

const error = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, code: err.code, message: err.message, details: err.details as any };
    throw err;
  }
  throw new Error('expected an AppError');
};

describe('intake input', () => {
  it('normalises Korean phone numbers and refuses others', () => {
    expect(normalisePhone('010-1234-5678')).toBe('010-1234-5678');
    expect(normalisePhone('01012345678')).toBe('010-1234-5678');
    expect(normalisePhone('+82 10 1234 5678')).toBe('010-1234-5678');
    expect(normalisePhone('02 123 4567')).toBe('02-123-4567');
    expect(normalisePhone('031-9876-5432')).toBe('031-9876-5432');
    expect(normalisePhone('1588-1234')).toBe('1588-1234');
    expect(normalisePhone('12345')).toBeUndefined();
    expect(normalisePhone('010-1234-567a')).toBeUndefined();
    expect(normalisePhone('099-123-4567')).toBeUndefined();
  });

  it('formats receipt numbers with the KST date and a counter', () => {
    expect(formatReceipt(42, Date.parse('2026-11-22T15:30:00Z'))).toBe('R261123-000042');
    expect(formatReceipt(1_234_567, T0)).toBe('R261122-1234567');
  });
});

describe('IntakeService', () => {
  it('registers with a receipt number and an access key, and tracks with the key only', async () => {
    const store = await lmdb();
    const clock = new ManualClock(T0);
    const intake = new IntakeService({ store, clock });
    const { record, accessKey } = await intake.register({ type: 'chat', contactPhone: '010 1111 2222', contactName: '홍길동', email: 'Hong@Example.kr' });
    expect(record.receiptNo).toBe('R261122-000001');
    expect(record.contactPhone).toBe('010-1111-2222');
    expect(record.email).toBe('hong@example.kr');
    expect(record.status).toBe('pending');
    expect(accessKey).toMatch(/^ak_[\w-]{43}$/);
    expect(JSON.stringify(await store.get(K.record(record.id)))).not.toContain(accessKey);

    const tracked = await intake.track(record.receiptNo, accessKey);
    expect(tracked).toEqual(view(record));
    expect(tracked).not.toHaveProperty('keyHash');

    expect(await error(intake.track(record.receiptNo, `ak_${'A'.repeat(43)}`))).toMatchObject({ status: 403, code: 'invalid_key' });
    expect(await error(intake.track(record.receiptNo, 'nonsense'))).toMatchObject({ status: 403, code: 'invalid_key' });
    expect(await error(intake.track('R261122-999999', accessKey))).toMatchObject({ status: 404, code: 'subscription_not_found' });

    clock.advance(1000);
    const second = await intake.register({ type: 'consult', contactPhone: '02-123-4567' });
    expect(second.record.receiptNo).toBe('R261122-000002');
    expect(await intake.ids()).toEqual([second.record.id, record.id]);
    expect(await intake.ids('chat')).toEqual([record.id]);
  });

  it('finds a record by its receipt number for the service that holds the receipt, and counts every receipt', async () => {
    const intake = new IntakeService({ store: await lmdb(), clock: new ManualClock(T0) });
    expect(await intake.count()).toBe(0);
    const { record } = await intake.register({ type: 'chat', contactPhone: '010-1111-2222' });
    await intake.register({ type: 'consult', contactPhone: '02-123-4567' });
    expect(await intake.count()).toBe(2);
    expect(await intake.byReceipt(record.receiptNo)).toEqual(record);
    expect(await intake.byReceipt('R261122-999999')).toBeUndefined();
    expect(await intake.byReceipt('intake:all')).toBeUndefined();
    expect(await intake.byReceipt('')).toBeUndefined();
  });

  it('keeps line breaks in remarks only', async () => {
    const intake = new IntakeService({ store: await lmdb(), clock: new ManualClock(T0) });
    const { record } = await intake.register({ type: 'consult', contactPhone: '02-123-4567', remarks: '첫 줄\n둘째 줄' });
    expect(record.remarks).toBe('첫 줄\n둘째 줄');
  });

  it.each([
    [{ type: 'chat' }, 'contactPhone'],
    [{ type: 'chat', contactPhone: '12-34' }, 'contactPhone'],
    [{ type: 'chat', contactPhone: '010-1234-5678', email: 'not-an-address' }, 'email'],
    [{ type: 'lease', contactPhone: '010-1234-5678' }, 'type'],
    [{ type: 'chat', contactPhone: '010-1234-5678', surprise: 1 }, 'body'],
    [{ type: 'chat', contactPhone: '010-1234-5678', remarks: 'x'.repeat(2001) }, 'remarks'],
    [{ type: 'chat', contactPhone: '010-1234-5678', organization: '학교\u202e어쩌고' }, 'organization'],
    [{ type: 'chat', contactPhone: '010-1234-5678', contactName: '김\n담당' }, 'contactName'],
    [{ type: 'chat', contactPhone: '010-1234-5678', remarks: 'a\u0000b' }, 'remarks'],
  ])('refuses %j naming %s, storing nothing', async (input, field) => {
    const store = await lmdb();
    const intake = new IntakeService({ store, clock: new ManualClock(T0) });
    const e = await error(intake.register(input));
    expect(e).toMatchObject({ status: 400, code: 'invalid_body' });
    expect(e.details.issues.map((i: { field: string }) => i.field)).toContain(field);
    expect(await store.indexCount(K.all)).toBe(0);
    expect(await store.get(K.seq)).toBeUndefined();
  });

  it.runIf(redis.available)('gives unique receipt numbers to 60 registrations on three Redis connections', async () => {
    const prefix = uniquePrefix('intake');
    prefixes.push(prefix);
    const clock = new ManualClock(T0);
    const services = await Promise.all(
      [0, 1, 2].map(async () => {
        const store = await openRedisStore({ url: redis.url, prefix });
        stores.push(store);
        return new IntakeService({ store, clock });
      }),
    );
    const out = await Promise.all(
      Array.from({ length: 60 }, (_, i) => services[i % 3]!.register({ type: 'chat', contactPhone: '010-1234-5678' })),
    );
    const numbers = new Set(out.map((o) => o.record.receiptNo));
    expect(numbers.size).toBe(60);
    expect([...numbers].sort().at(-1)).toBe('R261122-000060');
    expect(await services[0]!.ids()).toHaveLength(60);
  });
});
