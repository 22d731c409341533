import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createActor } from 'xstate';
import type { ChatEvent } from '../../src/chat/machine.js';

// The guided conversation (doc1 "Conversation stages": the stages run in the order listed), driven
// through XState's public actor API: each stage's move, the retry limit on both sides, hand-offs.
// The machine is built when its module loads: each test loads it afresh, so a change that breaks
// building it fails the tests instead of the file's collection.
let M: typeof import('../../src/chat/machine.js');
beforeEach(async () => {
  vi.resetModules();
  M = await import('../../src/chat/machine.js');
});

function actor(referredBy?: string) {
  const a = createActor(M.chatMachine, { input: { subject: 'web:1', ...(referredBy ? { referredBy } : {}) } });
  a.start();
  return a;
}
type Actor = ReturnType<typeof actor>;
const send = (a: Actor, e: Partial<Extract<ChatEvent, { type: 'ANSWER' }>> | ChatEvent) => {
  a.send(('type' in e ? e : { type: 'ANSWER', ...e }) as ChatEvent);
  return a.getSnapshot();
};
const at = (a: Actor) => a.getSnapshot().value;
const ctx = (a: Actor) => a.getSnapshot().context;

/** Walks to `collect` with the name question asked. */
function toCollect(): Actor {
  const a = actor();
  send(a, { source: 'search', text: '검색' });
  send(a, { need: 'rental', text: '렌탈 상담' });
  send(a, { yes: true });
  return a;
}

describe('conversation stages', () => {
  it('ten stages in the document order, codes from 1; hand-off states are code 0', () => {
    // the interface document's nine stages, codes 1..9 in its order; the summary to confirm is a step of collect
    expect(M.STAGES).toEqual(['greet', 'need', 'recommend', 'collect', 'received', 'track', 'upsell', 'referral', 'sharing']);
    M.STAGES.forEach((s, i) => expect(M.stageCode(s)).toBe(i + 1));
    expect([M.wireStage('confirm'), M.stageCode('confirm')]).toEqual(['collect', 4]);
    expect(M.wireStage('handoffContact')).toBe('handoff');
    expect(M.stageCode('handoff')).toBe(0);
    expect(M.stageCode('handoffContact')).toBe(0);
    expect(M.MACHINE_VERSION).toBe(1);
    expect(M.FIELDS).toEqual(['name', 'contact', 'email', 'memo']);
  });

  it('the whole journey, in order, with the receipt owed once the summary is confirmed', () => {
    const a = actor('REF123');
    expect(at(a)).toBe('greet');
    expect(ctx(a)).toEqual({ subject: 'web:1', retries: 0, referredBy: 'REF123' });
    send(a, { source: 'sns', text: '인스타' });
    expect(at(a)).toBe('need');
    expect(ctx(a)).toMatchObject({ source: 'sns', buffer: '인스타', retries: 0 });
    send(a, { need: 'solution' });
    expect(at(a)).toBe('recommend');
    expect(ctx(a)).toMatchObject({ category: 'solution', need: 'solution', upsellCode: 40 });
    send(a, { yes: false });
    expect(at(a)).toBe('need');
    expect(ctx(a).category).toBeUndefined();
    expect(ctx(a).upsellCode).toBeUndefined();
    send(a, { need: 'hardware', text: '노트북 필요' });
    expect(ctx(a)).toMatchObject({ category: 'hardware', need: '노트북 필요', upsellCode: 20, buffer: '노트북 필요' });
    send(a, { yes: true });
    expect(at(a)).toBe('collect');
    expect(ctx(a).field).toBe('name');
    send(a, { text: ' 홍  길동 ' });
    expect(ctx(a)).toMatchObject({ name: '홍 길동', field: 'contact' });
    send(a, { text: '010-1234-5678' });
    expect(ctx(a)).toMatchObject({ contact: '010-1234-5678', field: 'email' });
    send(a, { skip: true });
    expect(ctx(a)).toMatchObject({ email: null, field: 'memo' });
    expect(at(a)).toBe('collect');
    send(a, { text: '  오후에 연락 주세요 ' });
    expect(at(a)).toBe('confirm');
    expect(ctx(a)).toMatchObject({ memo: '오후에 연락 주세요', field: undefined, review: true });
    expect(ctx(a).pending).toBeUndefined();
    send(a, { yes: true });
    expect(at(a)).toBe('received');
    expect(ctx(a)).toMatchObject({ pending: 'receipt', review: undefined });
    // no move before the receipt is registered
    send(a, { yes: true });
    expect(at(a)).toBe('received');
    expect(ctx(a).error).toBe('yes_or_no');
    send(a, { type: 'REGISTERED', receiptNo: 'R1', customerId: 7, accessKey: 'k' });
    expect(ctx(a)).toMatchObject({ receiptNo: 'R1', customerId: 7, accessKey: 'k', pending: undefined });
    send(a, { type: 'REGISTERED', receiptNo: 'R2', customerId: 8 });
    expect(ctx(a).receiptNo).toBe('R1');
    send(a, { yes: true, progress: { status: 'received', label: '접수' } });
    expect(at(a)).toBe('track');
    expect(ctx(a)).toMatchObject({ progress: { status: 'received', label: '접수' }, retries: 0, error: undefined });
    send(a, { refresh: true, progress: { status: 'review', label: '검토' } });
    expect(at(a)).toBe('track');
    expect(ctx(a).progress).toEqual({ status: 'review', label: '검토' });
    send(a, { yes: false });
    expect(at(a)).toBe('upsell');
    send(a, { yes: false });
    expect(at(a)).toBe('referral');
    expect(ctx(a).upsellAccepted).toBe(false);
    send(a, { yes: true });
    expect(at(a)).toBe('sharing');
    expect(ctx(a).referral).toBe(true);
    send(a, { text: 'hello' });
    expect(at(a)).toBe('sharing');
    expect(ctx(a).error).toBe('restart_only');
    send(a, { restart: true });
    expect(at(a)).toBe('greet');
    expect(ctx(a)).toMatchObject({ subject: 'web:1', retries: 0, receiptNo: undefined, name: undefined, referredBy: undefined });
  });

  it('a memo is 1 to 500 characters; email and memo may be skipped, name and contact may not', () => {
    const a = toCollect();
    send(a, { skip: true });
    expect(ctx(a)).toMatchObject({ field: 'name', error: 'invalid_field', retries: 1 });
    send(a, { text: '김철수' });
    send(a, { skip: true });
    expect(ctx(a).field).toBe('contact');
    send(a, { text: '02-123-4567' });
    send(a, { text: 'not an email' });
    expect(ctx(a)).toMatchObject({ field: 'email', retries: 1 });
    send(a, { text: 'A@Example.COM' });
    expect(ctx(a)).toMatchObject({ email: 'A@example.com', field: 'memo', retries: 0 });
    send(a, { text: 'x'.repeat(501) });
    expect(at(a)).toBe('collect');
    send(a, { text: '   ' });
    expect(at(a)).toBe('collect');
    send(a, { text: 'x'.repeat(500) });
    expect(at(a)).toBe('confirm');
    expect(ctx(a).memo).toHaveLength(500);
    const b = toCollect();
    send(b, { text: '김철수' });
    send(b, { text: '010-1234-5678' });
    send(b, { text: 'a@b.kr' });
    send(b, { skip: true });
    expect(at(b)).toBe('confirm');
    expect(ctx(b).memo).toBeNull();
    const c = toCollect();
    send(c, { text: '김철수' });
    send(c, { text: '010-1234-5678' });
    send(c, { text: 'a@b.kr' });
    send(c, { text: 'x' });
    expect(ctx(c).memo).toBe('x');
  });

  it('two failed answers are asked again; the third hands off to a person', () => {
    expect(M.MAX_RETRIES).toBe(3);
    const a = actor();
    send(a, { text: '???' });
    expect([at(a), ctx(a).retries, ctx(a).error]).toEqual(['greet', 1, 'unknown_source']);
    send(a, { text: '???' });
    expect([at(a), ctx(a).retries]).toEqual(['greet', 2]);
    send(a, { text: '???' });
    expect(at(a)).toBe('handoffContact');
    expect(ctx(a)).toMatchObject({ retries: 0, error: 'too_many_tries', returnTo: 'greet' });
    // a good answer in between starts the count again
    const b = actor();
    send(b, { text: '?' });
    send(b, { text: '?' });
    send(b, { source: 'other' });
    send(b, { text: '?' });
    send(b, { text: '?' });
    expect([at(b), ctx(b).retries, ctx(b).error]).toEqual(['need', 2, 'unknown_need']);
    send(b, { text: '?' });
    expect(at(b)).toBe('handoffContact');
  });

  it('the contact question of the hand-off: a phone number owes the callback, a third failure goes back', () => {
    const a = actor();
    send(a, { source: 'search' });
    send(a, { handoff: true, text: '사람 연결' });
    expect(at(a)).toBe('handoffContact');
    expect(ctx(a).returnTo).toBe('need');
    send(a, { text: 'no phone' });
    expect(ctx(a)).toMatchObject({ retries: 1, error: 'invalid_phone' });
    send(a, { text: 'no phone' });
    expect(at(a)).toBe('handoffContact');
    send(a, { text: 'no phone' });
    expect(at(a)).toBe('need');
    expect(ctx(a)).toMatchObject({ returnTo: undefined, retries: 0 });

    const b = actor();
    send(b, { handoff: true });
    send(b, { text: '010-9999-8888' });
    expect(at(b)).toBe('handoff');
    expect(ctx(b)).toMatchObject({ contact: '010-9999-8888', pending: 'callback' });
    send(b, { type: 'CALLBACK_REGISTERED', receiptNo: 'C1' });
    expect(ctx(b)).toMatchObject({ callbackNo: 'C1', pending: undefined });
    send(b, { text: 'hm' });
    expect(ctx(b).error).toBe('resume_or_restart');
    send(b, { resume: true });
    expect(at(b)).toBe('greet');
    // a second request after a registered callback only shows it again
    send(b, { handoff: true });
    expect(at(b)).toBe('handoff');
    expect(ctx(b).pending).toBeUndefined();
    send(b, { restart: true });
    expect(at(b)).toBe('greet');
    expect(ctx(b).callbackNo).toBeUndefined();

    const c = actor();
    send(c, { handoff: true });
    send(c, { resume: true });
    expect(at(c)).toBe('greet');
  });

  it('with a known contact a request for a person owes the callback at once; while collecting only the choice hands off', () => {
    const a = toCollect();
    send(a, { text: '김철수' });
    send(a, { text: '010-1234-5678' });
    send(a, { handoff: true, text: '전화주세요' });
    expect(at(a)).toBe('collect');
    send(a, { handoff: true });
    expect(at(a)).toBe('handoff');
    expect(ctx(a)).toMatchObject({ pending: 'callback', returnTo: 'collect' });
    send(a, { type: 'CALLBACK_REGISTERED', receiptNo: 'C9' });
    send(a, { resume: true });
    expect(at(a)).toBe('collect');
    expect(ctx(a).field).toBe('email');
    // a callback is only taken when one is owed
    const b = actor();
    send(b, { type: 'CALLBACK_REGISTERED', receiptNo: 'X' });
    expect(ctx(b).callbackNo).toBeUndefined();
    send(b, { handoff: true });
    send(b, { type: 'CALLBACK_REGISTERED', receiptNo: 'X' });
    expect(ctx(b).callbackNo).toBeUndefined();
  });

  it('every stage offers the hand-off and the way back to itself', () => {
    const steps: Partial<Extract<ChatEvent, { type: 'ANSWER' }>>[] = [
      { source: 'search' },
      { need: 'rental' },
      { yes: true },
      { text: '김철수' },
      { text: '010-1234-5678' },
      { skip: true },
      { skip: true },
      { yes: true },
    ];
    const a = actor();
    const check = (stage: string) => {
      expect(at(a)).toBe(stage);
      send(a, { handoff: true });
      expect(at(a)).not.toBe(stage);
      expect(ctx(a).returnTo).toBe(stage);
      send(a, { resume: true });
      expect(at(a)).toBe(stage);
    };
    check('greet');
    for (const e of steps.slice(0, 3)) send(a, e);
    for (const e of steps.slice(3, 7)) send(a, e);
    check('confirm');
    send(a, steps[7]!);
    // the service registers the owed receipt before the next answer
    send(a, { type: 'REGISTERED', receiptNo: 'R1', customerId: 1 });
    check('received');
    send(a, { yes: true });
    check('track');
    send(a, { yes: true });
    check('upsell');
    send(a, { yes: true });
    expect(ctx(a).upsellAccepted).toBe(true);
    check('referral');
    send(a, { yes: false });
    check('sharing');
    const b = actor();
    send(b, { source: 'search' });
    check2(b, 'need');
    send(b, { need: 'rental' });
    check2(b, 'recommend');
    function check2(x: Actor, stage: string) {
      send(x, { handoff: true });
      expect(ctx(x).returnTo).toBe(stage);
      send(x, { resume: true });
      expect(at(x)).toBe(stage);
    }
  });

  it('the third failure at later stages hands off too, with the stage kept', () => {
    for (const [answers, stage] of [
      [[{ source: 'search' }, { need: 'rental' }], 'recommend'],
      [[{ source: 'search' }, { need: 'rental' }, { yes: true }], 'collect'],
      [[{ source: 'search' }, { need: 'rental' }, { yes: true }, { text: '김철수' }, { text: '010-1234-5678' }, { skip: true }, { skip: true }], 'confirm'],
    ] as const) {
      const a = actor();
      for (const e of answers) send(a, e);
      send(a, { text: '' });
      send(a, { text: '' });
      expect(at(a)).toBe(stage);
      send(a, { text: '' });
      expect(ctx(a)).toMatchObject({ returnTo: stage, error: 'too_many_tries' });
    }
  });

  it('recommend, track, upsell and referral take only yes or no', () => {
    const a = actor();
    send(a, { source: 'search' });
    send(a, { need: 'butler' });
    send(a, { text: 'maybe' });
    expect([at(a), ctx(a).error]).toEqual(['recommend', 'yes_or_no']);
    send(a, { yes: true });
    expect(at(a)).toBe('collect');
  });
});

/** Walks to the summary (confirm) with every field answered; a rental, e-mail and memo skipped. */
function toConfirm(referredBy?: string): Actor {
  const a = actor(referredBy);
  for (const e of [{ source: 'search' as const }, { need: 'rental' as const }, { yes: true }, { text: '김철수' }, { text: '010-1234-5678' }, { skip: true }, { skip: true }]) send(a, e);
  return a;
}

describe('the summary before registration (confirm)', () => {
  it('a bare yes or "nothing" at the remarks question is no remark; a remark containing such a word is kept', () => {
    for (const text of ['네', '예', ' 네. ', '네요', '응', 'ㅇㅇ', '넵', '좋아요', 'yes', 'OK', '없어요', '없습니다', '특별히 없습니다', '아니요', '괜찮아요', '-']) {
      const a = toCollect();
      for (const e of [{ text: '김철수' }, { text: '010-1234-5678' }, { skip: true }, { text }]) send(a, e);
      expect([at(a), ctx(a).memo], text).toEqual(['confirm', null]);
      expect(ctx(a).pending, text).toBeUndefined();
    }
    for (const text of ['네 오전에 연락 주세요', '설치 진행 전에 전화 주세요', '없는 번호로 연락 주지 마세요', '확인 후 연락 부탁드립니다']) {
      const a = toCollect();
      for (const e of [{ text: '김철수' }, { text: '010-1234-5678' }, { skip: true }, { text, yes: true }]) send(a, e);
      expect([at(a), ctx(a).memo], text).toEqual(['confirm', text]);
    }
  });

  it('only a confirmation owes the receipt; a no or a change opens the list of what can be changed', () => {
    const a = toConfirm();
    expect(ctx(a).pending).toBeUndefined();
    send(a, { text: '음' });
    expect([at(a), ctx(a).error, ctx(a).pending]).toEqual(['confirm', 'confirm_or_change', undefined]);
    send(a, { yes: false });
    expect([at(a), ctx(a).editing]).toEqual(['confirm', true]);
    // while the list is open a yes registers nothing
    send(a, { yes: true });
    expect([at(a), ctx(a).pending, ctx(a).error]).toEqual(['confirm', undefined, 'confirm_or_change']);
    send(a, { resume: true });
    expect([at(a), ctx(a).editing]).toEqual(['confirm', undefined]);
    send(a, { change: true });
    expect(ctx(a).editing).toBe(true);
    send(a, { resume: true });
    send(a, { yes: true });
    expect(at(a)).toBe('received');
    expect(ctx(a)).toMatchObject({ pending: 'receipt', review: undefined, editing: undefined });
  });

  it('a changed line is asked again and goes back to the summary, the other answers kept', () => {
    const a = toConfirm();
    send(a, { change: true });
    send(a, { edit: 'contact' });
    expect([at(a), ctx(a).field, ctx(a).editing]).toEqual(['collect', 'contact', undefined]);
    send(a, { text: 'not a phone' });
    expect([at(a), ctx(a).error]).toEqual(['collect', 'invalid_field']);
    send(a, { text: '02-555-0101' });
    expect(at(a)).toBe('confirm');
    expect(ctx(a)).toMatchObject({ contact: '02-555-0101', name: '김철수', email: null, memo: null, field: undefined, review: true });
    // named with a change in one answer ("이메일 수정할게요"); a line named without one is no change
    send(a, { edit: 'email', yes: true });
    expect(at(a)).toBe('received');
    const b = toConfirm();
    send(b, { edit: 'email', change: true });
    expect([at(b), ctx(b).field]).toEqual(['collect', 'email']);
    send(b, { text: 'kim@example.kr' });
    expect(at(b)).toBe('confirm');
    expect(ctx(b).email).toBe('kim@example.kr');
    send(b, { edit: 'memo', yes: false });
    send(b, { text: '네' });
    expect([at(b), ctx(b).memo]).toEqual(['confirm', null]);
    send(b, { edit: 'name', change: true });
    send(b, { skip: true });
    expect([at(b), ctx(b).error]).toEqual(['collect', 'invalid_field']);
  });

  it('the product is chosen again through need and recommend, then back to the summary', () => {
    const a = toConfirm();
    send(a, { change: true });
    send(a, { edit: 'product' });
    expect(at(a)).toBe('need');
    expect(ctx(a)).toMatchObject({ category: undefined, upsellCode: undefined, review: true, name: '김철수' });
    send(a, { need: 'butler' });
    send(a, { yes: false });
    expect(at(a)).toBe('need');
    send(a, { need: 'solution', text: '업무 자동화' });
    send(a, { yes: true });
    expect(at(a)).toBe('confirm');
    expect(ctx(a)).toMatchObject({ category: 'solution', upsellCode: 40, need: '업무 자동화', contact: '010-1234-5678' });
  });

  it('starting over forgets the answers but keeps the referral code no receipt has counted yet', () => {
    const a = toConfirm('MARU-7');
    send(a, { change: true });
    send(a, { restart: true });
    expect(at(a)).toBe('greet');
    expect(ctx(a)).toEqual({ subject: 'web:1', retries: 0, referredBy: 'MARU-7' });
    const b = toConfirm('MARU-7');
    send(b, { yes: true });
    send(b, { type: 'REGISTERED', receiptNo: 'R1', customerId: 3 });
    send(b, { handoff: true });
    send(b, { type: 'CALLBACK_REGISTERED', receiptNo: 'C1' });
    send(b, { restart: true });
    expect(ctx(b).referredBy).toBeUndefined();
  });

  it('a person from the summary, and back to it; a line being changed comes back to the summary after the hand-off', () => {
    const a = toConfirm();
    send(a, { handoff: true });
    expect([at(a), ctx(a).returnTo, ctx(a).pending]).toEqual(['handoff', 'confirm', 'callback']);
    send(a, { type: 'CALLBACK_REGISTERED', receiptNo: 'C1' });
    send(a, { resume: true });
    expect(at(a)).toBe('confirm');
    send(a, { change: true });
    send(a, { edit: 'name' });
    send(a, { handoff: true });
    send(a, { resume: true });
    expect([at(a), ctx(a).field]).toEqual(['collect', 'name']);
    send(a, { text: '김영희' });
    expect([at(a), ctx(a).name]).toEqual(['confirm', '김영희']);
  });
});

describe('each guard on both sides', () => {
  it('received, track, upsell and referral ask again on anything but yes or no; a yes or no moves on with the count cleared', () => {
    const a = toConfirm();
    send(a, { yes: true });
    send(a, { type: 'REGISTERED', receiptNo: 'R1', customerId: 1 });
    for (const [stage, answer, next] of [
      ['received', { yes: false, progress: { status: 'received', label: '접수' } }, 'track'],
      ['track', { yes: true }, 'upsell'],
      ['upsell', { yes: false }, 'referral'],
      ['referral', { yes: false }, 'sharing'],
    ] as const) {
      expect(at(a)).toBe(stage);
      send(a, { text: '글쎄요' });
      expect([at(a), ctx(a).error, ctx(a).retries], stage).toEqual([stage, 'yes_or_no', 1]);
      send(a, answer);
      expect([at(a), ctx(a).error, ctx(a).retries], stage).toEqual([next, undefined, 0]);
    }
    expect(ctx(a)).toMatchObject({ progress: { status: 'received', label: '접수' }, upsellAccepted: false, referral: false });
  });

  it('a product chosen again from the summary goes back to it with the count cleared', () => {
    const a = toConfirm();
    send(a, { change: true });
    send(a, { edit: 'product' });
    send(a, { need: 'butler' });
    send(a, { text: '음' });
    expect([at(a), ctx(a).error, ctx(a).retries]).toEqual(['recommend', 'yes_or_no', 1]);
    send(a, { yes: true });
    expect([at(a), ctx(a).error, ctx(a).retries, ctx(a).category]).toEqual(['confirm', undefined, 0, 'butler']);
  });

  it('the summary: a resume closes only an open list; a change or a no opens only a closed one', () => {
    const a = toConfirm();
    send(a, { resume: true });
    expect([at(a), ctx(a).editing, ctx(a).error, ctx(a).retries]).toEqual(['confirm', undefined, 'confirm_or_change', 1]);
    send(a, { change: true });
    expect([at(a), ctx(a).editing, ctx(a).error, ctx(a).retries]).toEqual(['confirm', true, undefined, 0]);
    send(a, { change: true });
    expect([at(a), ctx(a).editing, ctx(a).error, ctx(a).retries]).toEqual(['confirm', true, 'confirm_or_change', 1]);
    send(a, { yes: false });
    expect([at(a), ctx(a).editing, ctx(a).error, ctx(a).retries]).toEqual(['confirm', true, 'confirm_or_change', 2]);
    send(a, { resume: true });
    expect([at(a), ctx(a).editing, ctx(a).error, ctx(a).retries]).toEqual(['confirm', undefined, undefined, 0]);
    send(a, { yes: false });
    expect([at(a), ctx(a).editing, ctx(a).retries]).toEqual(['confirm', true, 0]);
  });

  it('a line named on the closed summary is changed only with a change or a no, the product line too', () => {
    for (const edit of ['product', 'memo'] as const) {
      const bare = toConfirm();
      send(bare, { edit });
      expect([at(bare), ctx(bare).error, ctx(bare).retries], edit).toEqual(['confirm', 'confirm_or_change', 1]);
      const yes = toConfirm();
      send(yes, { edit, yes: true });
      expect([at(yes), ctx(yes).pending], edit).toEqual(['received', 'receipt']);
    }
    for (const e of [{ change: true }, { yes: false }]) {
      const p = toConfirm();
      send(p, { edit: 'product', ...e });
      expect([at(p), ctx(p).category, ctx(p).upsellCode, ctx(p).field, ctx(p).editing, ctx(p).review]).toEqual(['need', undefined, undefined, undefined, undefined, true]);
      const m = toConfirm();
      send(m, { edit: 'memo', ...e });
      expect([at(m), ctx(m).field, ctx(m).editing, ctx(m).category]).toEqual(['collect', 'memo', undefined, 'rental']);
    }
  });

  it('with a callback registered: a second one is not taken, and the third failure hands off with its reason and the stage kept', () => {
    const a = toConfirm();
    send(a, { handoff: true });
    send(a, { type: 'CALLBACK_REGISTERED', receiptNo: 'C1' });
    expect([at(a), ctx(a).callbackNo, ctx(a).pending]).toEqual(['handoff', 'C1', undefined]);
    send(a, { type: 'CALLBACK_REGISTERED', receiptNo: 'C2' });
    expect(ctx(a).callbackNo).toBe('C1');
    send(a, { resume: true });
    send(a, { text: '?' });
    send(a, { text: '?' });
    expect([at(a), ctx(a).retries]).toEqual(['confirm', 2]);
    send(a, { text: '?' });
    expect([at(a), ctx(a).returnTo, ctx(a).error, ctx(a).retries, ctx(a).pending]).toEqual(['handoff', 'confirm', 'too_many_tries', 0, undefined]);
    send(a, { type: 'CALLBACK_REGISTERED', receiptNo: 'C3' });
    expect(ctx(a).callbackNo).toBe('C1');
    send(a, { resume: true });
    expect([at(a), ctx(a).returnTo, ctx(a).error]).toEqual(['confirm', undefined, undefined]);
    // asked for again by choice: shown again, no reason given
    send(a, { handoff: true });
    expect([at(a), ctx(a).returnTo, ctx(a).error, ctx(a).pending]).toEqual(['handoff', 'confirm', undefined, undefined]);
  });
});
