import { Readable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/blobs/fs.js';
import { createBus } from '../../src/bus.js';
import { chatIntake, chatMail } from '../../src/chat/intake-link.js';
import { ReferralService } from '../../src/chat/referral.js';
import { ChatService } from '../../src/chat/service.js';
import { ManualClock } from '../../src/clock.js';
import { parseIntakeInput } from '../../src/intake/input.js';
import { IntakeService, recordKey } from '../../src/intake/service.js';
import { outboxKey, outboxPartition, parseRecord } from '../../src/outbox.js';
import { PartnerAudit } from '../../src/rental/audit.js';
import type { StoredFile } from '../../src/rental/files.js';
import { Review } from '../../src/rental/review.js';
import { RentalService } from '../../src/rental/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf } from '../../src/store/partition.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

/**
 * Intake, rental review and the conversation on the partitioned keyspace (docs/partitions.md): with
 * the partition check on, the store refuses any update that spans aggregates, so every flow below
 * runs each of its updates inside one aggregate (plus partition-local keys of its partition); the
 * lists and counts merged from the partitions read as one, and records of the global layout of
 * before the partitions are still read.
 */
const T0 = Date.parse('2026-11-22T10:00:00+09:00');
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

async function setup() {
  const store = await openLmdbStore({ path: tempDir('intake-partitions'), partitionCheck: true });
  stores.push(store);
  const clock = new ManualClock(T0);
  const blobs = await new FsBlobStore(tempDir('intake-partitions-blobs')).init();
  const intake = new IntakeService({ store, clock });
  const rental = new RentalService({ intake, store, clock, bus: createBus(store, `p-${Math.random()}`), blobs });
  const review = new Review(store, intake);
  const referrals = new ReferralService({ store, clock });
  const chat = new ChatService({
    store,
    clock,
    intake: chatIntake(intake, rental),
    mail: chatMail(() => clock.now()),
    referrals,
    logger: pino({ level: 'silent' }),
    sessionTtlMs: 3_600_000,
    idleRestartMs: 600_000,
  });
  const stage = async (field: string): Promise<StoredFile> => {
    const { key, size } = await blobs.put(Readable.from([Buffer.from(`content of ${field}`)]));
    return { field, filename: `${field}.hwp`, size, mediaType: 'application/x-hwp', blobKey: key };
  };
  return { store, clock, intake, rental, review, referrals, chat, stage };
}

const form = (i: number) =>
  parseIntakeInput({
    type: 'rental-ipa',
    applicantType: 'government',
    organization: `학교 ${i}`,
    department: '행정실',
    contactName: `담당${i}`,
    contactPhone: `010-2000-${String(1000 + i)}`,
    email: `p${i}@school.kr`,
    buildingType: 'office',
  });

describe('intake and rental review on partitions', () => {
  it('registers, lists, counts, tracks, checks, replaces and audits, each update inside one aggregate', async () => {
    const { store, clock, intake, rental, review, stage } = await setup();
    const apps = [];
    for (let i = 0; i < 12; i++) {
      clock.advance(1000);
      const files = i === 0 ? await Promise.all(['bizCard', 'uniqueNumber', 'internalResolution'].map(stage)) : [];
      apps.push(await rental.submit(form(i), files));
    }
    for (let i = 0; i < 3; i++) {
      clock.advance(1000);
      await intake.register({ type: 'consult', contactPhone: `02-123-${4000 + i}` });
    }
    // spread over several partitions, numbered from one counter, listed newest first as one list
    expect(new Set(apps.map((a) => partitionOf(recordKey(String(a.application.id))))).size).toBeGreaterThan(4);
    expect(apps.map((a) => a.application.receiptNo)).toEqual(apps.map((_, i) => `R261122-${String(i + 1).padStart(6, '0')}`));
    expect(await intake.count()).toBe(15);
    expect(await intake.ids('rental-ipa')).toEqual(apps.map((a) => a.application.id).reverse());
    expect((await intake.ids(undefined, { offset: 1, limit: 2 })).length).toBe(2);
    const { application: first, accessKey } = apps[0]!;
    expect(await intake.track(String(first.receiptNo), accessKey)).toMatchObject({ id: first.id, status: 'documents_submitted' });
    const list = await review.list({ page: 2, pageSize: 5 });
    expect(list.items.map((a) => a.id)).toEqual(apps.slice(2, 7).map((a) => a.application.id).reverse());
    expect(list.counters).toMatchObject({ total: 12, pending: 11, documents_submitted: 1 });
    expect((await review.list({ q: '학교 3', page: 1, pageSize: 5 })).items.map((a) => a.id)).toEqual([apps[3]!.application.id]);

    // the partner's decisions: status moves, events, audit and the decision mail beside the record
    const id = String(first.id);
    const partner = { id: 'partner', name: '파트너' };
    await rental.check(id, 'bizCard', { result: 'approved' }, partner, 'ip');
    await rental.check(id, 'uniqueNumber', { result: 'rejected', reason: '흐림' }, partner, 'ip');
    await expect(rental.check(id, 'photo', { result: 'approved' }, partner, 'ip')).rejects.toMatchObject({ code: 'unknown_document_type' });
    const replacement = await stage('uniqueNumber');
    const before = (await rental.application(id)).documents as Record<string, { url: string }>;
    const oldBlob = before.uniqueNumber!.url.split('/').pop()!.split('.')[0]!;
    await rental.replace(id, 'uniqueNumber', accessKey, replacement);
    expect(await rental.references(replacement.blobKey)).toBe(true);
    expect(await rental.references(oldBlob)).toBe(false);
    for (const doc of ['uniqueNumber', 'internalResolution']) await rental.check(id, doc, { result: 'approved' }, partner, 'ip');
    expect((await rental.application(id)).status).toBe('approved');
    const mail = parseRecord(await store.get(outboxKey(`mail:rental:${id}:approved:6`, outboxPartition(recordKey(id)))));
    expect(mail).toMatchObject({ dest: 'mail', payload: { to: 'p0@school.kr' } });
    expect((await rental.events()).map((e) => `${e.from}>${e.to}`)).toEqual([
      'documents_submitted>under_review',
      'under_review>rejected',
      'rejected>documents_submitted',
      'documents_submitted>under_review',
      'under_review>approved',
    ]);
    const audit = (await new PartnerAudit(store, () => clock.now()).entries(20)).map((e) => e.result);
    expect(audit).toEqual(['approved', 'approved', 'refused:unknown_document_type', 'rejected', 'approved']);
    expect(await review.counters()).toMatchObject({ total: 12, approved: 1, pending: 11, documents_submitted: 0 });
  });

  it('reads what the global layout of before holds: records, pointers, indexes and lists', async () => {
    const { store, intake, review, rental } = await setup();
    const { record } = await intake.register({ type: 'chat', contactPhone: '010-3333-4444' });
    // a rental application written before the partitions: its indexes are the global ones
    const old = { ...record, id: 'sub_oldoldoldold', receiptNo: 'R251231-000777', type: 'rental-ipa', applicantType: 'government', createdAt: new Date(T0 - 86_400_000).toISOString() };
    old.ext = {
      product: { code: 'SOL-702', badge: 'ipa', name: '화재감지기' },
      monthlyFee: 1,
      termMonths: 36,
      totalFee: 36,
      documents: { bizCard: null, uniqueNumber: null, internalResolution: null },
      rev: 1,
    };
    await store.set('intake:sub:sub_oldoldoldold', old);
    await store.set('intake:receipt:R251231-000777', old.id);
    await store.index('intake:all', old.id, T0 - 86_400_000);
    await store.index('rental:all', old.id, T0 - 86_400_000);
    await store.index('rental:status:pending', old.id, T0 - 86_400_000);
    await store.push('rental:events', { at: new Date(T0 - 1).toISOString(), id: old.id, receiptNo: old.receiptNo, from: 'pending', to: 'pending', by: 'x' }, 10);
    expect(await intake.count()).toBe(2);
    expect(await intake.ids()).toEqual([record.id, old.id]);
    expect(await intake.byReceipt('R251231-000777')).toMatchObject({ id: old.id });
    expect((await review.list({ page: 1, pageSize: 10 })).items.map((a) => a.id)).toEqual([old.id]);
    expect((await review.counters()).pending).toBe(1);
    expect((await rental.events()).map((e) => e.id)).toEqual([old.id]);
  });
});

describe('the conversation on partitions', () => {
  async function toReceipt(chat: ChatService, clock: ManualClock, referralCode?: string, phone = '010-8080-9090') {
    clock.advance(1000);
    const s = await chat.start('서비스', referralCode);
    for (const choice of ['검색', '솔루션', '신청할게요']) await chat.turn(s.session, { choice });
    for (const message of ['오세영', phone]) await chat.turn(s.session, { message });
    await chat.turn(s.session, { choice: '건너뛰기' });
    await chat.turn(s.session, { choice: '없음' });
    const v = await chat.turn(s.session, { choice: '확인' });
    expect(v).toMatchObject({ stage: 'received' });
    return { session: s.session, receiptNo: v.receiptNo! };
  }

  it('runs sessions to a receipt, counts the funnel and lists the desk across partitions; a referral rewards both sides once', async () => {
    const { store, chat, referrals, intake, clock } = await setup();
    const owner = await referrals.issue({ customerId: 900, name: '추천인', phone: '010-9000-0000' });
    const runs = [];
    for (let i = 0; i < 6; i++) runs.push(await toReceipt(chat, clock, i < 3 ? owner.code : undefined, `010-7000-${1000 + i}`));
    expect(new Set(runs.map((r) => partitionOf(`chat:session:${r.session}`))).size).toBeGreaterThan(2);
    expect(await intake.count()).toBe(6);
    // the funnel's counts are sums over the partitions: six sessions reached every stage to received
    const funnel = await chat.funnel();
    expect(funnel.stages.slice(0, 5).map((s) => s.sessions)).toEqual([6, 6, 6, 6, 6]);
    expect(funnel.stages[5]!.sessions).toBe(0);
    // a hand-off waits at the desk; the recent list is merged, newest first
    clock.advance(1000);
    const h = await chat.start('질문');
    await chat.turn(h.session, { message: '사람이랑 얘기하고 싶어요' });
    const inbox = await chat.inbox();
    expect(inbox.desk.map((e) => e.session)).toEqual([h.session]);
    expect(inbox.recent.map((e) => e.session)).toEqual([h.session, ...runs.map((r) => r.session).reverse()]);
    await chat.take(h.session, { id: 'a1', name: '상담원' });
    await chat.handBack(h.session, { id: 'a1', name: '상담원' });
    expect((await chat.inbox()).desk).toEqual([]);

    // three redemptions of the owner's code: three uses, two rewards each, once
    const info = await referrals.info(owner.code);
    expect(info.uses).toBe(3);
    expect(info.rewards).toHaveLength(6);
    // the claim's outbox item lies in the referred customer's partition and credits nothing twice
    const referred = info.rewards.find((r) => r.side === 'referred')!.customerId;
    const near = `referral:redeemed:${referred}`;
    const item = parseRecord(await store.get(outboxKey(`referral:${referred}`, outboxPartition(near))));
    expect(item).toMatchObject({ dest: 'referral-credit', payload: { owner: 900, referred } });
    await referrals.deliver(item!, new AbortController().signal);
    expect((await referrals.info(owner.code)).uses).toBe(3);
    expect(await referrals.redeem(owner.code, { customerId: referred })).toEqual({ redeemed: false });
  });

  it('a claim whose credit was not applied (a process stopped between the two) is credited by its outbox item, once', async () => {
    const { store, referrals, clock } = await setup();
    const owner = await referrals.issue({ customerId: 42, name: '추천인', phone: '010-4200-0000' });
    // the claim as it was written, with no credit after it
    const near = 'referral:redeemed:77';
    const at = new Date(clock.now()).toISOString();
    const { outboxWrites } = await import('../../src/outbox.js');
    const credit = { code: owner.code, owner: 42, referred: 77, at };
    await store.update([near], () => ({
      writes: [{ op: 'set', key: near, value: { code: owner.code, at } }, ...outboxWrites({ id: 'referral:77', dest: 'referral-credit', payload: credit, createdAt: clock.now() }, near)],
      result: null,
    }));
    expect((await referrals.info(owner.code)).uses).toBe(0);
    const item = parseRecord(await store.get(outboxKey('referral:77', outboxPartition(near))))!;
    await referrals.deliver(item, new AbortController().signal);
    await referrals.deliver(item, new AbortController().signal);
    const info = await referrals.info(owner.code);
    expect(info.uses).toBe(1);
    expect(info.rewards.map((r) => r.side)).toEqual(['referred', 'owner']);
    // rewards of the global layout of before are read too, older than every entry since
    await store.push('referral:rewards:42', { code: owner.code, side: 'owner', customerId: 42, referredCustomerId: 5, at: '2025-01-01T00:00:00.000Z' }, 10);
    expect((await referrals.info(owner.code)).rewards.map((r) => r.referredCustomerId)).toEqual([77, 77, 5]);
  });
});
