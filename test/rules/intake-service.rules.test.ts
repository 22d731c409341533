import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store, Write } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { partitionKeyFor } from '../../src/store/partition.js';
import { outboxKey, outboxPartition } from '../../src/outbox.js';
import { refusal } from '../support/refusal.js';

// The intake service's rules (src/intake/service.ts; doc 1, rental intake): a registration takes
// the next receipt number `R` + KST yymmdd + `-` + six digits or more, writes its receipt pointer
// on its own, then the record and two indexes of the record's partition in one update (409
// subscription_exists when the id or the number is taken; a refused record removes its pointer), and gives an access key `ak_` + 43 characters of which only the SHA-256 is kept;
// tracking answers the record to the holder of the key only (404 subscription_not_found, 403
// invalid_key); ids, receipt numbers and keys of another form are never looked up. The module holds
// patterns built at load, so it is loaded afresh in each test.
const load = async () => {
  vi.resetModules();
  return import('../../src/intake/service.js');
};

const T0 = Date.parse('2026-11-22T10:00:00+09:00');
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

async function setup() {
  const mod = await load();
  const store = await openLmdbStore({ path: tempDir('intake-rules') });
  stores.push(store);
  const { store: recording, writes } = recordingStore(store);
  const clock = new ManualClock(T0);
  const intake = new mod.IntakeService({ store: recording, clock });
  return { ...mod, store, clock, intake, writes };
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const APPLICANT = { type: 'chat', contactPhone: '010 1111 2222', contactName: '홍길동', email: 'Hong@Example.kr' };

describe('identifiers', () => {
  it('a record id is sub_ and 12 characters of 0-9a-z, drawn afresh', async () => {
    const { newSubscriptionId, SUBSCRIPTION_ID_RE } = await load();
    const ids = Array.from({ length: 300 }, () => newSubscriptionId());
    for (const id of ids) expect(id).toMatch(/^sub_[0-9a-z]{12}$/);
    expect(new Set(ids).size).toBe(300);
    // every character of the alphabet shows up over 3,600 draws
    expect(new Set(ids.join('').replaceAll('sub_', '')).size).toBe(36);
    expect(SUBSCRIPTION_ID_RE.test('sub_0123456789az')).toBe(true);
    for (const bad of ['sub_0123456789a', 'sub_0123456789abc', 'sub_0123456789aZ', 'xsub_0123456789ab', 'sub_0123456789ab\n', 'SUB_0123456789ab'])
      expect(SUBSCRIPTION_ID_RE.test(bad), bad).toBe(false);
  });

  it('a receipt number is R, six digits, a hyphen and six digits or more', async () => {
    const { RECEIPT_RE } = await load();
    for (const ok of ['R261122-000001', 'R261122-1234567']) expect(RECEIPT_RE.test(ok), ok).toBe(true);
    for (const bad of ['R261122-00001', 'R26112-000001', 'r261122-000001', 'xR261122-000001', 'R261122-000001x', 'R2611222-000001', 'R261122000001'])
      expect(RECEIPT_RE.test(bad), bad).toBe(false);
  });

  it('an access key is ak_ and 43 base64url characters', async () => {
    const { ACCESS_KEY_RE } = await load();
    const k = 'A'.repeat(20) + 'z9_-' + 'b'.repeat(19);
    expect(ACCESS_KEY_RE.test(`ak_${k}`)).toBe(true);
    for (const bad of [`ak_${k.slice(1)}`, `ak_${k}A`, `ak_${k.slice(1)}+`, `ak_${k.slice(1)}/`, `xak_${k}`, `AK_${k}`, `ak_${k}\n`])
      expect(ACCESS_KEY_RE.test(bad), bad).toBe(false);
  });

  it('the receipt date is the KST day, the year in two digits, the counter padded to six', async () => {
    const { formatReceipt } = await load();
    expect(formatReceipt(42, Date.parse('2026-11-22T14:59:59.999Z'))).toBe('R261122-000042');
    expect(formatReceipt(42, Date.parse('2026-11-22T15:00:00Z'))).toBe('R261123-000042');
    expect(formatReceipt(1, Date.parse('2100-01-01T00:00:00+09:00'))).toBe('R000101-000001');
    expect(formatReceipt(7, Date.parse('2031-02-03T12:00:00+09:00'))).toBe('R310203-000007');
    expect(formatReceipt(999_999, T0)).toBe('R261122-999999');
    expect(formatReceipt(1_000_000, T0)).toBe('R261122-1000000');
  });
});

describe('register', () => {
  it('writes the receipt pointer first, then the record and both indexes of its partition in one update, with the key hash only', async () => {
    const { intake, writes, K, store } = await setup();
    const { record, accessKey } = await intake.register(APPLICANT);
    expect(accessKey).toMatch(/^ak_[A-Za-z0-9_-]{43}$/);
    expect(record).toEqual({
      id: expect.stringMatching(/^sub_[0-9a-z]{12}$/),
      receiptNo: 'R261122-000001',
      type: 'chat',
      applicantType: null,
      organization: '',
      department: '',
      contactName: '홍길동',
      contactPhone: '010-1111-2222',
      email: 'hong@example.kr',
      buildingType: null,
      remarks: '',
      status: 'pending',
      createdAt: '2026-11-22T01:00:00.000Z',
      updatedAt: '2026-11-22T01:00:00.000Z',
      keyHash: sha256(accessKey),
      ext: {},
    });
    const near = `intake:sub:${record.id}`;
    expect(writes).toEqual([
      { op: 'set', key: near, value: record },
      { op: 'index', key: partitionKeyFor('intake:all', near), member: record.id, score: T0 },
      { op: 'index', key: partitionKeyFor('intake:type:chat', near), member: record.id, score: T0 },
    ]);
    expect(await store.get('intake:receipt:R261122-000001')).toBe(record.id);
    expect(K.seq).toBe('intake:seq');
  });

  it('takes the caller id, status, type fields and writes, which get the record and the key', async () => {
    const { intake, writes, store } = await setup();
    const seen: [unknown, string][] = [];
    const extra: Write = { op: 'set', key: 'rental:doc:x', value: 1 };
    const { record, accessKey } = await intake.register(
      { type: 'rental-ipa', applicantType: 'government', contactPhone: '02-123-4567', buildingType: ' 학교 ' },
      {
        id: 'sub_aaaaaaaaaaaa',
        status: 'received',
        ext: { product: 'ipa', monthlyFee: 10 },
        writes: (rec, key) => {
          seen.push([rec, key]);
          return [extra];
        },
      },
    );
    expect(record).toMatchObject({ id: 'sub_aaaaaaaaaaaa', applicantType: 'government', buildingType: '학교', status: 'received', ext: { product: 'ipa', monthlyFee: 10 } });
    expect(seen).toEqual([[record, accessKey]]);
    expect(writes.at(-1)).toEqual(extra);
    expect(writes.find((w) => w.op === 'index' && w.key === partitionKeyFor('intake:type:rental-ipa', 'intake:sub:sub_aaaaaaaaaaaa'))).toBeDefined();
    expect(await store.get('rental:doc:x')).toBe(1);
  });

  it('numbers registrations from one counter; the day in the number is the KST day of the clock', async () => {
    const { intake, clock } = await setup();
    expect((await intake.register(APPLICANT)).record.receiptNo).toBe('R261122-000001');
    clock.set(Date.parse('2026-11-23T00:00:00+09:00'));
    expect((await intake.register(APPLICANT)).record.receiptNo).toBe('R261123-000002');
  });

  it('refuses an id not of the form before taking a number', async () => {
    const { intake, store } = await setup();
    await expect(intake.register(APPLICANT, { id: 'sub_short' })).rejects.toThrow(new TypeError('bad subscription id sub_short'));
    expect(await store.get('intake:seq')).toBeUndefined();
  });

  it('409 subscription_exists when the id is taken, or the receipt number alone is', async () => {
    const { intake, store } = await setup();
    await intake.register(APPLICANT, { id: 'sub_aaaaaaaaaaaa' });
    const taken = { status: 409, code: 'subscription_exists', message: 'a record with this id or receipt number already exists' };
    expect(await refusal(intake.register(APPLICANT, { id: 'sub_aaaaaaaaaaaa' }))).toEqual(taken);
    // the next number (3: the refused one used 2) is already pointed at
    await store.set('intake:receipt:R261122-000003', 'sub_zzzzzzzzzzzz');
    expect(await refusal(intake.register(APPLICANT, { id: 'sub_bbbbbbbbbbbb' }))).toEqual(taken);
    expect(await store.get('intake:sub:sub_bbbbbbbbbbbb')).toBeUndefined();
    // the refused record's number (2) is not pointed at
    expect(await store.get('intake:receipt:R261122-000002')).toBeUndefined();
    expect((await intake.register(APPLICANT, { id: 'sub_bbbbbbbbbbbb' })).record.receiptNo).toBe('R261122-000004');
  });

  it('refuses wrong fields with 400 invalid_body, storing nothing', async () => {
    const { intake, store } = await setup();
    expect(await refusal(intake.register({ type: 'chat' }))).toMatchObject({ status: 400, code: 'invalid_body' });
    expect(await store.get('intake:seq')).toBeUndefined();
  });
});

describe('track and keys', () => {
  it('answers the record without the key hash, the type fields beside the common ones', async () => {
    const { intake, view } = await setup();
    const { record, accessKey } = await intake.register(APPLICANT, { ext: { product: 'db', contactName: 'ext wins' } });
    const seen = await intake.track(record.receiptNo, accessKey);
    const { keyHash: _k, ext: _e, ...common } = record;
    expect(seen).toEqual({ ...common, product: 'db', contactName: 'ext wins' });
    expect(view(record)).toEqual(seen);
  });

  it('403 invalid_key for a wrong, malformed, empty or absent key; the right key alone matches', async () => {
    const { intake } = await setup();
    const { record, accessKey } = await intake.register(APPLICANT);
    const bad = { status: 403, code: 'invalid_key', message: 'the access key does not match this subscription' };
    for (const key of [`ak_${'A'.repeat(43)}`, 'nonsense', '', `${accessKey}x`]) expect(await refusal(intake.track(record.receiptNo, key)), key).toEqual(bad);
    expect(intake.keyMatches(record, undefined)).toBe(false);
    expect(intake.keyMatches(record, '')).toBe(false);
    expect(intake.keyMatches(record, accessKey)).toBe(true);
    expect(() => intake.requireKey(record, accessKey)).not.toThrow();
    expect(() => intake.requireKey(record, undefined)).toThrow('the access key does not match this subscription');
  });

  it('a key of another form is refused without being hashed, even if its hash were stored', async () => {
    const { intake } = await setup();
    const { record } = await intake.register(APPLICANT);
    const odd = 'ak_short';
    expect(intake.keyMatches({ ...record, keyHash: sha256(odd) }, odd)).toBe(false);
  });

  it('404 subscription_not_found for an unknown number; a number of another form is not looked up', async () => {
    const { intake, store } = await setup();
    const { record, accessKey } = await intake.register(APPLICANT);
    expect(await refusal(intake.track('R261122-999999', accessKey))).toEqual({
      status: 404,
      code: 'subscription_not_found',
      message: 'no subscription with receipt number R261122-999999',
    });
    await store.set('intake:receipt:odd', record.id);
    expect(await refusal(intake.track('odd', accessKey))).toMatchObject({ status: 404, code: 'subscription_not_found' });
    // a pointer to a missing record
    await store.set('intake:receipt:R261122-000777', 'sub_nnnnnnnnnnnn');
    expect(await refusal(intake.track('R261122-000777', accessKey))).toMatchObject({ status: 404, code: 'subscription_not_found' });
  });

  it('get and require look up ids of the form only', async () => {
    const { intake, store } = await setup();
    const { record } = await intake.register(APPLICANT);
    expect(await intake.get(record.id)).toEqual(record);
    expect(await intake.require(record.id)).toEqual(record);
    await store.set('intake:sub:odd', record as unknown as Json);
    expect(await intake.get('odd')).toBeUndefined();
    expect(await refusal(intake.require('odd'))).toEqual({ status: 404, code: 'subscription_not_found', message: 'no subscription odd' });
    expect(await intake.get('sub_nnnnnnnnnnnn')).toBeUndefined();
  });
});

describe('stored records', () => {
  it('a record without a string id or receipt number, or a receipt pointer that is not a string, is refused as corrupt', async () => {
    const { intake, store } = await setup();
    const { record, accessKey } = await intake.register(APPLICANT);
    const key = `intake:sub:${record.id}`;
    const corrupt = { status: 500, code: 'corrupt_record', message: 'a stored intake record is not readable' };
    await store.set(key, { ...record, id: 1 } as unknown as Json);
    expect(await refusal(intake.require(record.id))).toEqual(corrupt);
    await store.set(key, { ...record, receiptNo: null } as unknown as Json);
    expect(await refusal(intake.require(record.id))).toEqual(corrupt);
    await store.set(key, record as unknown as Json);
    expect(await intake.require(record.id)).toEqual(record);
    await store.set(`intake:receipt:${record.receiptNo}`, 7);
    expect(await refusal(intake.track(record.receiptNo, accessKey))).toEqual({
      status: 500,
      code: 'corrupt_record',
      message: 'a stored receipt pointer is not readable',
    });
  });
});

describe('resendMail', () => {
  const compose = (rec: { email: string | null; receiptNo: string }) => ({ to: rec.email!, subject: `접수 ${rec.receiptNo}`, text: 'again' });

  it('counts the resends and queues the mail in the same update', async () => {
    const { intake, writes } = await setup();
    const { record, accessKey } = await intake.register(APPLICANT);
    writes.length = 0;
    const first = await intake.resendMail(record.receiptNo, accessKey, compose);
    expect(first).toEqual({ record, resend: 1 });
    expect(writes[0]).toEqual({ op: 'set', key: `intake:sub:${record.id}:resend`, value: 1 });
    expect(writes[1]).toMatchObject({ op: 'set', key: outboxKey(`mail:intake:${record.id}:resend:1`, outboxPartition(`intake:sub:${record.id}`)) });
    expect(writes.filter((w) => w.op === 'index').map((w) => (w as { member: string }).member)).toEqual([
      `mail:intake:${record.id}:resend:1`,
      `mail:intake:${record.id}:resend:1`,
    ]);
    expect(JSON.stringify(writes[1])).toContain('"to":"hong@example.kr"');
    writes.length = 0;
    expect((await intake.resendMail(record.receiptNo, accessKey, compose)).resend).toBe(2);
    expect(writes[0]).toEqual({ op: 'set', key: `intake:sub:${record.id}:resend`, value: 2 });
  });

  it('a resend count of the global layout of before goes on from there', async () => {
    const { intake, store } = await setup();
    const { record, accessKey } = await intake.register(APPLICANT);
    await store.set(`intake:resend:${record.id}`, 4);
    expect((await intake.resendMail(record.receiptNo, accessKey, compose)).resend).toBe(5);
    expect((await intake.resendMail(record.receiptNo, accessKey, compose)).resend).toBe(6);
  });

  it('409 no_email without an address; 403 for a wrong key', async () => {
    const { intake } = await setup();
    const { record, accessKey } = await intake.register({ type: 'consult', contactPhone: '02-123-4567' });
    expect(await refusal(intake.resendMail(record.receiptNo, accessKey, compose))).toEqual({
      status: 409,
      code: 'no_email',
      message: 'this receipt has no e-mail address to send to',
    });
    expect(await refusal(intake.resendMail(record.receiptNo, 'nonsense', compose))).toMatchObject({ status: 403, code: 'invalid_key' });
  });
});

describe('modify', () => {
  it('writes the record returned, then the writes returned, and answers the result', async () => {
    const { intake, writes, store } = await setup();
    const { record } = await intake.register(APPLICANT);
    writes.length = 0;
    const extra: Write = { op: 'set', key: 'x', value: 1 };
    const r = await intake.modify(record.id, (rec) => ({ record: { ...rec, status: 'approved' }, writes: [extra], result: 'ok' }));
    expect(r).toBe('ok');
    expect(writes).toEqual([{ op: 'set', key: `intake:sub:${record.id}`, value: { ...record, status: 'approved' } }, extra]);
    expect(await store.get(`intake:sub:${record.id}`)).toMatchObject({ status: 'approved' });
  });

  it('keeps the record when none is returned', async () => {
    const { intake, writes } = await setup();
    const { record } = await intake.register(APPLICANT);
    writes.length = 0;
    const seen: unknown[] = [];
    expect(await intake.modify(record.id, (rec) => (seen.push(rec), { result: 3 }))).toBe(3);
    expect(seen).toEqual([record]);
    expect(writes).toEqual([]);
  });

  it('404 for an id not of the form and for an absent record', async () => {
    const { intake, store } = await setup();
    const { record } = await intake.register(APPLICANT);
    await store.set('intake:sub:odd', record as unknown as Json);
    const fn = () => ({ result: 1 });
    expect(await refusal(intake.modify('odd', fn))).toEqual({ status: 404, code: 'subscription_not_found', message: 'no subscription odd' });
    expect(await refusal(intake.modify('sub_nnnnnnnnnnnn', fn))).toEqual({
      status: 404,
      code: 'subscription_not_found',
      message: 'no subscription sub_nnnnnnnnnnnn',
    });
  });
});

describe('ids', () => {
  it('newest first, of one type or all, with offset and limit', async () => {
    const { intake, clock } = await setup();
    const a = (await intake.register(APPLICANT)).record.id;
    clock.advance(1000);
    const b = (await intake.register({ type: 'consult', contactPhone: '02-123-4567' })).record.id;
    clock.advance(1000);
    const c = (await intake.register(APPLICANT)).record.id;
    expect(await intake.ids()).toEqual([c, b, a]);
    expect(await intake.ids('chat')).toEqual([c, a]);
    expect(await intake.ids('consult')).toEqual([b]);
    expect(await intake.ids(undefined, { offset: 1, limit: 1 })).toEqual([b]);
  });
});
