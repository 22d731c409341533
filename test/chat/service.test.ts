import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatIntake, chatMail } from '../../src/chat/intake-link.js';
import { MACHINE_VERSION } from '../../src/chat/machine.js';
import { ReferralService } from '../../src/chat/referral.js';
import { ChatService, type ChatIntake } from '../../src/chat/service.js';
import { ManualClock } from '../../src/clock.js';
import { IntakeService } from '../../src/intake/service.js';
import { FsBlobStore } from '../../src/blobs/fs.js';
import { createBus } from '../../src/bus.js';
import { Review } from '../../src/rental/review.js';
import { RentalService } from '../../src/rental/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

let store: Store;
const clock = new ManualClock(Date.parse('2026-11-22T01:00:00Z'));
beforeAll(async () => {
  store = await openLmdbStore({ path: tempDir('chat-service') });
});
afterAll(() => store.close());

/** The conversation's intake link over real intake and rental services on the test's store. */
function links() {
  const intake = new IntakeService({ store, clock });
  const rental = new RentalService({ intake, store, clock, bus: createBus(store, `chat-${Math.random()}`), blobs: new FsBlobStore(tempDir('chat-blobs')) });
  return { intake, rental, link: chatIntake(intake, rental) };
}

function chat(intake: ChatIntake) {
  return new ChatService({
    store,
    clock,
    intake,
    mail: chatMail(() => clock.now()),
    referrals: new ReferralService({ store, clock }),
    logger: pino({ level: 'silent' }),
    sessionTtlMs: 3_600_000,
    idleRestartMs: 600_000,
  });
}

async function toMemo(c: ChatService) {
  const s = await c.start('서비스');
  for (const choice of ['검색', '렌탈', '신청할게요']) await c.turn(s.session, { choice });
  for (const message of ['오세영', '010-8080-9090']) await c.turn(s.session, { message });
  await c.turn(s.session, { choice: '건너뛰기' });
  return s.session;
}

describe('ChatService', () => {
  it('registers a receipt once per attempt id: the same idempotency key answers the first record', async () => {
    const link = links().link;
    const before = await link.countReceipts();
    const input = { type: 'chat' as const, contactName: '하나', contactPhone: '010-1111-0000', idempotencyKey: 'chat:test:receipt' };
    const a = await link.register(input);
    const b = await link.register(input);
    expect(b.receiptNo).toBe(a.receiptNo);
    expect(await link.countReceipts()).toBe(before + 1);
  });

  it('an intake failure answers 503 and leaves the receipt owed; the next turn registers it once', async () => {
    const real = links().link;
    let fail = true;
    let calls = 0;
    const flaky: ChatIntake = {
      ...real,
      register: async (input, also) => {
        calls++;
        if (fail) throw new Error('intake down');
        return real.register(input, also);
      },
    };
    const c = chat(flaky);
    const id = await toMemo(c);
    const before = await real.countReceipts();
    expect(await c.turn(id, { choice: '없음' })).toMatchObject({ stage: 'collect', stageCode: 4, card: { type: 'summary' } });
    await expect(c.turn(id, { choice: '확인' })).rejects.toMatchObject({ status: 503, code: 'intake_unavailable' });
    expect((await c.get(id)).stage).toBe('received');
    expect((await c.get(id)).receiptNo).toBeUndefined();
    fail = false;
    // any answer settles what is owed first, then applies the answer
    const v = await c.turn(id, { choice: '진행 상황 보기' });
    expect(v.stage).toBe('track');
    expect(v.receiptNo).toMatch(/^R\d{6}-\d{6,}$/);
    expect(calls).toBe(2);
    expect(await real.countReceipts()).toBe(before + 1);
  });

  it('a rental application made in the conversation is a rental record the partner lists, filtered by its source', async () => {
    const { intake, link: l } = links();
    const review = new Review(store, intake);
    const c = chat(l);
    const id = await toMemo(c);
    await c.turn(id, { choice: '없음' });
    const v = await c.turn(id, { choice: '확인' });
    expect(v.stage).toBe('received');
    const receiptNo = v.receiptNo!;
    const fromChat = await review.list({ source: 'chat', page: 1, pageSize: 100 });
    const item = fromChat.items.find((i) => i.receiptNo === receiptNo);
    expect(item).toMatchObject({ type: 'rental-ipa', applicantType: 'government', source: 'chat', status: 'pending', contactName: '오세영', contactPhone: '010-8080-9090' });
    expect(item!.product).toMatchObject({ code: 'SOL-702' });
    expect(fromChat.items.every((i) => i.source === 'chat')).toBe(true);
    // the unfiltered list has it too; the form's filter does not
    expect((await review.list({ page: 1, pageSize: 100 })).items.some((i) => i.receiptNo === receiptNo)).toBe(true);
    expect((await review.list({ source: 'form', page: 1, pageSize: 100 })).items.some((i) => i.receiptNo === receiptNo)).toBe(false);
    // progress in the conversation reads the same record
    expect((await c.turn(id, { choice: '진행 상황 보기' })).stage).toBe('track');
    expect((await c.get(id)).receiptNo).toBe(receiptNo);
  });

  it('a session stored by another machine version starts again at greet', async () => {
    const c = chat(links().link);
    const s = await c.start('버전');
    await c.turn(s.session, { choice: '검색' });
    const key = `chat:session:${s.session}`;
    const rec = (await store.get(key)) as { [k: string]: Json };
    await store.set(key, { ...rec, v: MACHINE_VERSION + 1 });
    const v = await c.turn(s.session, { choice: '렌탈' });
    expect(v).toMatchObject({ stage: 'greet', stageCode: 1 });
    expect(((await store.get(key)) as { v: number }).v).toBe(MACHINE_VERSION);
  });
});
