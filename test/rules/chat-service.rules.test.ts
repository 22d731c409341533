import { afterAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store, Write } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal } from '../support/refusal.js';

// The chat service's rules (src/chat/service.ts): sessions `cs_` + 22 characters, kept for their
// TTL after the last turn (on the hub clock), started again at greet after the idle time or under
// another machine version; a turn is an offered choice (400 choice_not_offered otherwise) or free
// text classified by keyword; the receipt and the callback a session owes are registered once,
// under a lease, with their remarks, idempotency key, confirmation mail and referral redemption; an
// intake failure is 503 intake_unavailable with the receipt still owed; progress, the upsell answer
// and the referral code go to their services. Intake, mail and referrals are recording stand-ins;
// the store is LMDB in a temp dir. The module is loaded afresh per test.
const load = async () => {
  vi.resetModules();
  return {
    ...(await import('../../src/chat/service.js')),
    ...(await import('../../src/chat/machine.js')),
    AppError: (await import('../../src/errors.js')).AppError,
  };
};
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
const T0 = Date.parse('2026-11-22T01:00:00Z');
const TTL = 3_600_000;
const IDLE = 600_000;

async function setup(
  opts: {
    registerFails?: unknown | ((E: typeof import('../../src/errors.js').AppError) => unknown);
    trackFails?: boolean;
    upsellFails?: boolean;
    redeemFails?: boolean;
    knownCodes?: string[];
    /** The store the service sees, in place of the LMDB store itself. */
    wrap?: (store: Store) => Store;
    /** Runs inside each registration, before it answers. */
    onRegister?: () => Promise<void>;
  } = {},
) {
  const mod = await load();
  const store = await openLmdbStore({ path: tempDir('chat-service-rules') });
  const failure = typeof opts.registerFails === 'function' ? (opts.registerFails as (E: unknown) => unknown)(mod.AppError) : opts.registerFails;
  stores.push(store);
  const clock = new ManualClock(T0);
  const calls: { what: string; args: unknown[] }[] = [];
  let receipts = 0;
  const intake = {
    register: async (input: Record<string, unknown>, also?: (no: string) => Write[]) => {
      const no = `R-${++receipts}`;
      calls.push({ what: 'register', args: [input, also ? also(no) : 'no also'] });
      await opts.onRegister?.();
      if (failure) throw failure;
      return { receiptNo: no, ...(input.type === 'consult' ? {} : { accessKey: `key-${no}` }) };
    },
    track: async (no: string) => {
      calls.push({ what: 'track', args: [no] });
      if (opts.trackFails) throw new Error('intake down');
      return { status: 'under_review', label: '검토 중' };
    },
    countReceipts: async () => receipts,
    recordUpsell: async (no: string, u: unknown) => {
      calls.push({ what: 'recordUpsell', args: [no, u] });
      if (opts.upsellFails) throw new Error('cannot note');
    },
  };
  const mail = { writes: (id: string, m: Json): Write[] => [{ op: 'set', key: `mail:${id}`, value: m }] };
  const referrals = {
    exists: async (code: string) => (opts.knownCodes ?? []).includes(code),
    issue: async (input: unknown) => {
      calls.push({ what: 'issue', args: [input] });
      return { code: 'X', created: true };
    },
    redeem: async (code: string, who: unknown) => {
      calls.push({ what: 'redeem', args: [code, who] });
      if (opts.redeemFails) throw new Error('no such code');
      return { redeemed: true };
    },
  };
  const logs: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
  const log = (level: string) => (obj: Record<string, unknown>, msg: string) => void logs.push({ level, obj, msg });
  const logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  const chat = new mod.ChatService({
    store: opts.wrap ? opts.wrap(store) : store,
    clock,
    intake: intake as never,
    mail,
    referrals: referrals as never,
    logger: logger as never,
    sessionTtlMs: TTL,
    idleRestartMs: IDLE,
  });
  const go = async (session: string, ...steps: (string | { message: string })[]) => {
    let last;
    for (const s of steps) last = await chat.turn(session, typeof s === 'string' ? { choice: s } : s);
    return last!;
  };
  return { ...mod, chat, store, clock, calls, logs, go };
}

const TO_MEMO = ['검색', '렌탈', '신청할게요', { message: '홍길동' }, { message: '010-1234-5678' }];

describe('sessions', () => {
  it('are cs_ and 22 characters, start at greet and answer the choices by label', async () => {
    const { chat, SESSION_ID_RE, MESSAGE_MAX } = await setup();
    expect(MESSAGE_MAX).toBe(500);
    const s = await chat.start('렌탈 문의');
    expect(s.session).toMatch(SESSION_ID_RE);
    expect(SESSION_ID_RE.test(`cs_${'a'.repeat(22)}`)).toBe(true);
    for (const bad of [`cs_${'a'.repeat(21)}`, `cs_${'a'.repeat(23)}`, `xs_${'a'.repeat(22)}`, `cs_${'a'.repeat(21)}!`]) expect(SESSION_ID_RE.test(bad)).toBe(false);
    expect(s).toStrictEqual({
      session: s.session,
      stage: 'greet',
      stageCode: 1,
      bot: '안녕하세요, maru 맞춤 상담이에요. "렌탈 문의" 건으로 찾아 주셔서 감사합니다. 저희를 어떻게 알게 되셨나요?',
      choices: ['검색', 'SNS', '추천', '광고', '지인 소개', '오프라인', '기타', '상담원 연결'],
    });
    expect(await chat.get(s.session)).toStrictEqual(s);
  });

  it('are stored for their TTL, and gone on the hub clock past it', async () => {
    const { chat, store, clock } = await setup();
    const update = vi.spyOn(store, 'update');
    const s = await chat.start('x');
    // the session and its transcript, written in one update, both with the session's TTL
    const plan = (update.mock.calls[0]![1] as (c: unknown[]) => { writes: { op: string; key: string; ttlMs?: number }[] })([]);
    const sets = plan.writes.filter((w) => w.op === 'set');
    expect(sets.map((w) => w.key)).toEqual([`chat:session:${s.session}`, `chat:session:${s.session}:transcript`]);
    for (const w of sets) expect(w.ttlMs).toBe(TTL);
    clock.advance(TTL);
    expect((await chat.get(s.session)).stage).toBe('greet');
    clock.advance(1);
    const gone = { status: 404, code: 'session_not_found', message: 'unknown or expired conversation session; start a new one with POST /api/chat/start' };
    expect(await refusal(chat.get(s.session))).toEqual(gone);
    expect(await refusal(chat.turn(s.session, { choice: '검색' }))).toEqual(gone);
    expect(await refusal(chat.get('cs_unknown'))).toEqual(gone);
  });

  it('take a referral code the referrals know, upper-cased, and refuse one they do not', async () => {
    const { chat, calls, go } = await setup({ knownCodes: ['abc123', 'ABC123'] });
    expect(await refusal(chat.start('x', 'nope'))).toEqual({ status: 404, code: 'referral_not_found', message: 'no customer holds the referral code nope' });
    const s = await chat.start('x', 'abc123');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    expect(calls.find((c) => c.what === 'redeem')).toEqual({ what: 'redeem', args: ['ABC123', { customerId: 1, phone: '010-1234-5678' }] });
  });

  it('start again at greet, with a welcome back, after the idle time; not before', async () => {
    const { chat, clock, go } = await setup();
    const s = await chat.start('x');
    await go(s.session, '검색');
    clock.advance(IDLE);
    expect((await go(s.session, '렌탈')).stage).toBe('recommend');
    clock.advance(IDLE + 1);
    const again = await chat.turn(s.session, { choice: '신청할게요' });
    expect(again.stage).toBe('greet');
    expect(again.bot).toBe('오랜만이에요! 상담을 처음부터 다시 시작할게요.\n안녕하세요, maru 맞춤 상담이에요. "x" 건으로 찾아 주셔서 감사합니다. 저희를 어떻게 알게 되셨나요?');
    // the restart was stored: the next turn continues from greet
    expect((await go(s.session, '검색')).stage).toBe('need');
  });

  it('start again at greet when stored by another machine version, keeping subject and referral', async () => {
    const { chat, store, go, calls, MACHINE_VERSION } = await setup({ knownCodes: ['REF1'] });
    const s = await chat.start('주제', 'REF1');
    await go(s.session, '검색');
    const key = `chat:session:${s.session}`;
    const rec = (await store.get(key)) as Record<string, Json>;
    await store.set(key, { ...rec, v: MACHINE_VERSION + 1 });
    const again = await chat.turn(s.session, { choice: '렌탈' });
    expect(again.stage).toBe('greet');
    expect(again.bot).toContain('"주제"');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    expect(calls.find((c) => c.what === 'redeem')?.args[0]).toBe('REF1');
  });
});

describe('turns', () => {
  it('take only an offered choice', async () => {
    const { chat } = await setup();
    const s = await chat.start('x');
    expect(await refusal(chat.turn(s.session, { choice: '렌탈' }), { details: true })).toEqual({
      status: 400,
      code: 'choice_not_offered',
      message: '"렌탈" is not one of the offered choices',
      details: { choices: ['검색', 'SNS', '추천', '광고', '지인 소개', '오프라인', '기타', '상담원 연결'] },
    });
    expect((await chat.get(s.session)).stage).toBe('greet');
  });

  it('classify free text by keyword, and log the rule that fired', async () => {
    const { chat, logs, go } = await setup();
    const s = await chat.start('x');
    expect((await go(s.session, { message: '네이버 검색으로 왔어요' })).stage).toBe('need');
    expect(logs.filter((l) => l.level === 'debug')).toEqual([
      { level: 'debug', obj: { session: s.session, source: expect.objectContaining({ value: 'search' }), need: undefined, yes: true, handoff: false }, msg: 'chat keyword rule fired' },
    ]);
    expect((await go(s.session, { message: '장비 대여 문의' })).stage).toBe('recommend');
    expect((await go(s.session, { message: '네 좋아요' })).stage).toBe('collect');
    const h = await go(s.session, { message: '홍길동' }, { message: '010-1234-5678' }, { message: '상담원 연결해 주세요' });
    // at collect typed words are field values: the e-mail question refuses it rather than handing off
    expect(h.stage).toBe('collect');
    const s2 = await chat.start('y');
    expect((await go(s2.session, { message: '상담원 연결해 주세요' })).stage).toBe('handoff');
  });

  it('answer the receipt number once there is one', async () => {
    const { chat, go } = await setup();
    const s = await chat.start('x');
    const before = await go(s.session, ...TO_MEMO, '건너뛰기');
    expect('receiptNo' in before).toBe(false);
    const summary = await go(s.session, '없음');
    expect([summary.stage, summary.card?.type, 'receiptNo' in summary]).toEqual(['collect', 'summary', false]);
    const r = await go(s.session, '확인');
    expect([r.stage, r.receiptNo]).toEqual(['received', 'R-1']);
    expect((await chat.get(s.session)).receiptNo).toBe('R-1');
  });
});

describe('the summary', () => {
  it('takes typed words: "네" at the remarks is no remark, a named line with a change asks it again, "네 맞아요" confirms; nothing is registered before', async () => {
    const { chat, go, calls } = await setup();
    const s = await chat.start('x');
    const c = await go(s.session, ...TO_MEMO, '건너뛰기', { message: '네' });
    expect(c.stage).toBe('collect');
    expect(c.card).toEqual({ type: 'summary', name: '홍길동', contact: '010-1234-5678', email: null, product: 'SOL-702 디지털 화재감지기', need: '렌탈', memo: null });
    expect(c.choices).toEqual(['확인', '수정', '상담원 연결']);
    expect(calls.some((x) => x.what === 'register')).toBe(false);
    expect((await go(s.session, { message: '연락처 바꿀게요' })).stage).toBe('collect');
    expect((await go(s.session, { message: '02-123-4567' })).card).toMatchObject({ type: 'summary', contact: '02-123-4567' });
    expect((await go(s.session, { message: '아니요' })).choices).toEqual(['성함', '연락처', '이메일', '요청 사항', '상품', '처음부터', '돌아가기', '상담원 연결']);
    expect((await go(s.session, '돌아가기')).choices).toEqual(['확인', '수정', '상담원 연결']);
    expect(calls.some((x) => x.what === 'register')).toBe(false);
    const r = await go(s.session, { message: '네 맞아요' });
    expect([r.stage, r.receiptNo]).toEqual(['received', 'R-1']);
    const reg = calls.filter((x) => x.what === 'register');
    expect(reg).toHaveLength(1);
    expect(reg[0]!.args[0]).toMatchObject({ contactPhone: '02-123-4567', remarks: '상담 경로: 검색\n필요: 렌탈\n신청 상품: SOL-702 디지털 화재감지기' });
  });

  it('starts over from the change list, keeping the referral code', async () => {
    const { chat, go, calls } = await setup({ knownCodes: ['C1'] });
    const s = await chat.start('x', 'C1');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음', '수정');
    const again = await go(s.session, '처음부터');
    expect(again.stage).toBe('greet');
    expect(again.bot).toContain('추천 코드를 확인했어요 (C1)');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    expect(calls.filter((x) => x.what === 'redeem').map((x) => x.args[0])).toEqual(['C1']);
  });
});

describe('the receipt', () => {
  it('is registered once as a rental application for a rental, with remarks, key and mail', async () => {
    const { chat, go, calls } = await setup();
    const s = await chat.start('x');
    const r = await go(s.session, ...TO_MEMO, { message: 'kim@example.com' }, { message: '오전에 연락 주세요' }, '확인');
    expect(r.card).toEqual({ type: 'receipt', receiptNo: 'R-1', trackUrl: '/api/subscriptions/R-1?key=key-R-1', pageUrl: '/applicant.html#receipt=R-1&key=key-R-1', accessKey: 'key-R-1' });
    expect(calls.filter((c) => c.what === 'register')).toEqual([
      {
        what: 'register',
        args: [
          {
            type: 'rental-ipa',
            contactName: '홍길동',
            contactPhone: '010-1234-5678',
            email: 'kim@example.com',
            remarks: '상담 경로: 검색\n필요: 렌탈\n신청 상품: SOL-702 디지털 화재감지기\n요청 사항: 오전에 연락 주세요',
            idempotencyKey: `chat:${s.session}:receipt`,
          },
          [
            {
              op: 'set',
              key: 'mail:chat:R-1:receipt',
              value: {
                to: 'kim@example.com',
                subject: '[maru] 상담 접수 R-1',
                text: '홍길동님, 상담이 접수되었습니다.\n접수번호: R-1\n신청 상품: SOL-702 디지털 화재감지기\n담당자가 010-1234-5678(으)로 연락드리겠습니다.',
              },
            },
          ],
        ],
      },
    ]);
    // no referral code came with the session: nothing to redeem
    expect(calls.some((c) => c.what === 'redeem')).toBe(false);
    await go(s.session, '진행 상황 보기');
    expect(calls.filter((c) => c.what === 'register')).toHaveLength(1);
  });

  it('is a chat receipt for another need, without e-mail, memo or mail, and numbers customers in turn', async () => {
    const { chat, go, calls } = await setup({ knownCodes: ['C1'] });
    const s = await chat.start('x', 'C1');
    await go(s.session, '검색', { message: '버틀러 서비스' }, '신청할게요', { message: '홍길동' }, { message: '010-1234-5678' }, '건너뛰기', '없음', '확인');
    const reg = calls.find((c) => c.what === 'register')!;
    expect(reg.args).toEqual([
      {
        type: 'chat',
        contactName: '홍길동',
        contactPhone: '010-1234-5678',
        remarks: '상담 경로: 검색\n필요: 버틀러 서비스\n신청 상품: 버틀러 케어 서비스\n추천 코드: C1',
        idempotencyKey: `chat:${s.session}:receipt`,
      },
      [],
    ]);
    const s2 = await chat.start('y', 'C1');
    await go(s2.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    expect(calls.filter((c) => c.what === 'redeem').map((c) => (c.args[1] as { customerId: number }).customerId)).toEqual([1, 2]);
  });

  it('names the need in the customer’s own words beside its category', async () => {
    const { chat, go, calls } = await setup();
    const s = await chat.start('x');
    await go(s.session, '검색', { message: '장비 대여 문의' }, '신청할게요', { message: '홍길동' }, { message: '010-1234-5678' }, '건너뛰기', '없음', '확인');
    expect((calls.find((c) => c.what === 'register')!.args[0] as { remarks: string }).remarks).toBe(
      '상담 경로: 검색\n필요: 렌탈 (장비 대여 문의)\n신청 상품: SOL-702 디지털 화재감지기',
    );
  });

  it('is registered even when the referral code cannot be redeemed (said in the log)', async () => {
    const { chat, go, logs } = await setup({ knownCodes: ['C1'], redeemFails: true });
    const s = await chat.start('x', 'C1');
    const r = await go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    expect(r.receiptNo).toBe('R-1');
    expect(logs.filter((l) => l.level === 'info').map((l) => [l.msg, l.obj.code])).toEqual([['chat: referral not redeemed', 'C1']]);
  });

  it('stays owed when the intake fails: 503 intake_unavailable, said in the log; an intake refusal passes as it is', async () => {
    const { chat, go, logs, store } = await setup({ registerFails: new Error('intake down') });
    const s = await chat.start('x');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음');
    expect(await refusal(chat.turn(s.session, { choice: '확인' }))).toEqual({
      status: 503,
      code: 'intake_unavailable',
      message: 'the receipt could not be registered yet; send the answer again',
    });
    expect(logs.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual(['chat: intake registration failed']);
    expect((await chat.get(s.session)).stage).toBe('received');
    // the lease is let go
    expect(await store.get(`chat:effect:${s.session}`)).toBeUndefined();
    const refused = await setup({ registerFails: (E: typeof import('../../src/errors.js').AppError) => new E('invalid', 'invalid_phone', 'bad phone') });
    const t = await refused.chat.start('x');
    await refused.go(t.session, ...TO_MEMO, '건너뛰기', '없음');
    expect((await refusal(refused.chat.turn(t.session, { choice: '확인' }))).code).toBe('invalid_phone');
  });

  it('is registered by the next turn when still owed, once', async () => {
    const { chat, go, calls, store } = await setup();
    const s = await chat.start('x');
    await go(s.session, ...TO_MEMO, '건너뛰기');
    // the session owes the receipt (as after a failed registration)
    const key = `chat:session:${s.session}`;
    const rec = (await store.get(key)) as { ctx: Record<string, Json>; state: string };
    await store.set(key, { ...rec, state: 'received', ctx: { ...rec.ctx, memo: null, field: null, pending: 'receipt' } } as unknown as Json);
    const r = await chat.turn(s.session, { choice: '진행 상황 보기' });
    expect(calls.filter((c) => c.what === 'register')).toHaveLength(1);
    expect(r.stage).toBe('track');
  });

  it('waits for another process holding the lease, then finds it done or does it itself', async () => {
    const { chat, go, calls, store } = await setup();
    const s = await chat.start('x');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음');
    const lease = `chat:effect:${s.session}`;
    await store.set(lease, 'other-process');
    const answered = chat.turn(s.session, { choice: '확인' });
    await new Promise((r) => setTimeout(r, 120));
    expect(calls.filter((c) => c.what === 'register')).toHaveLength(0);
    await store.del(lease);
    const r = await answered;
    expect([r.stage, r.receiptNo]).toEqual(['received', 'R-1']);
    expect(calls.filter((c) => c.what === 'register')).toHaveLength(1);
    expect(await store.get(lease)).toBeUndefined();
  });
});

describe('after the receipt', () => {
  it('reads the progress before the turn, and carries on without it when tracking fails', async () => {
    const ok = await setup();
    const s = await ok.chat.start('x');
    await ok.go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    const t = await ok.go(s.session, '진행 상황 보기');
    expect(t.card).toEqual({ type: 'progress', receiptNo: 'R-1', status: 'under_review', label: '검토 중' });
    expect(ok.calls.filter((c) => c.what === 'track')).toEqual([{ what: 'track', args: ['R-1'] }]);
    await ok.go(s.session, '새로고침');
    expect(ok.calls.filter((c) => c.what === 'track')).toHaveLength(2);
    // not read at other stages
    await ok.go(s.session, '다음');
    expect(ok.calls.filter((c) => c.what === 'track')).toHaveLength(3);
    await ok.go(s.session, '추가할게요', '추천 코드 받기');
    expect(ok.calls.filter((c) => c.what === 'track')).toHaveLength(3);

    const bad = await setup({ trackFails: true });
    const b = await bad.chat.start('x');
    await bad.go(b.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    const u = await bad.go(b.session, '진행 상황 보기');
    expect(u.card).toEqual({ type: 'progress', receiptNo: 'R-1', status: 'unknown', label: '확인 중' });
    expect(bad.logs.filter((l) => l.level === 'warn')).toEqual([{ level: 'warn', obj: { err: expect.any(Error), receiptNo: 'R-1' }, msg: 'chat: tracking failed' }]);
  });

  it('notes the upsell answer on the receipt, and goes on if that fails', async () => {
    for (const [choice, accepted] of [['추가할게요', true], ['괜찮아요', false]] as const) {
      const { chat, go, calls } = await setup();
      const s = await chat.start('x');
      await go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인', '진행 상황 보기', '다음');
      expect(calls.some((c) => c.what === 'recordUpsell')).toBe(false);
      expect((await go(s.session, choice)).stage).toBe('referral');
      expect(calls.filter((c) => c.what === 'recordUpsell')).toEqual([{ what: 'recordUpsell', args: ['R-1', { code: 31, accepted }] }]);
      await go(s.session, '다음에 할게요');
      expect(calls.filter((c) => c.what === 'recordUpsell')).toHaveLength(1);
    }
    const { chat, go, logs } = await setup({ upsellFails: true });
    const s = await chat.start('x');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인', '진행 상황 보기', '다음');
    expect((await go(s.session, '추가할게요')).stage).toBe('referral');
    expect(logs.filter((l) => l.level === 'warn').map((l) => [l.msg, l.obj.session])).toEqual([['chat: upsell not recorded on the receipt', s.session]]);
  });

  it('issues the customer’s referral code when asked for, with the name and phone', async () => {
    const yes = await setup();
    const s = await yes.chat.start('x');
    await yes.go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인', '진행 상황 보기', '다음', '괜찮아요');
    expect(yes.calls.some((c) => c.what === 'issue')).toBe(false);
    expect((await yes.go(s.session, '추천 코드 받기')).stage).toBe('sharing');
    expect(yes.calls.filter((c) => c.what === 'issue')).toEqual([{ what: 'issue', args: [{ customerId: 1, name: '홍길동', phone: '010-1234-5678' }] }]);
    const no = await setup();
    const n = await no.chat.start('x');
    await no.go(n.session, ...TO_MEMO, '건너뛰기', '없음', '확인', '진행 상황 보기', '다음', '괜찮아요', '다음에 할게요');
    expect(no.calls.some((c) => c.what === 'issue')).toBe(false);
  });
});

describe('the callback request', () => {
  it('is a consult receipt naming the stage and the subject, keyed by the stage', async () => {
    const { chat, go, calls } = await setup();
    const s = await chat.start('주제');
    await go(s.session, '검색', '상담원 연결');
    const r = await go(s.session, { message: '010-5555-6666' });
    expect(r.stage).toBe('handoff');
    expect(r.card).toEqual({ type: 'callback', receiptNo: 'R-1' });
    expect(calls.filter((c) => c.what === 'register')).toEqual([
      {
        what: 'register',
        args: [
          { type: 'consult', contactPhone: '010-5555-6666', remarks: '상담원 연결 요청 (대화 단계: need, 주제: 주제)', idempotencyKey: `chat:${s.session}:callback:need` },
          'no also',
        ],
      },
    ]);
  });

  it('carries the name and e-mail when known', async () => {
    const { chat, go, calls } = await setup();
    const s = await chat.start('주제');
    await go(s.session, ...TO_MEMO, { message: 'kim@example.com' }, '상담원 연결');
    const reg = calls.filter((c) => c.what === 'register');
    expect(reg[0]!.args[0]).toEqual({
      type: 'consult',
      contactName: '홍길동',
      contactPhone: '010-1234-5678',
      email: 'kim@example.com',
      remarks: '상담원 연결 요청 (대화 단계: collect, 주제: 주제)',
      idempotencyKey: `chat:${s.session}:callback:collect`,
    });
  });
});

describe('stored sessions', () => {
  it('a session id is matched whole: nothing before cs_', async () => {
    const { SESSION_ID_RE } = await setup();
    expect(SESSION_ID_RE.test(`xcs_${'a'.repeat(22)}`)).toBe(false);
  });

  it('a stored record without a state name or a time of its last turn is refused as corrupt', async () => {
    const { chat, store } = await setup();
    const s = await chat.start('x');
    const key = `chat:session:${s.session}`;
    const rec = (await store.get(key)) as Record<string, Json>;
    const corrupt = { status: 500, code: 'corrupt_record', message: 'a stored chat session is not readable' };
    await store.set(key, { ...rec, at: String(rec.at) });
    expect(await refusal(chat.get(s.session))).toEqual(corrupt);
    await store.set(key, { ...rec, state: 1 });
    expect(await refusal(chat.get(s.session))).toEqual(corrupt);
    await store.set(key, rec);
    expect((await chat.get(s.session)).stage).toBe('greet');
  });

  it('customers are numbered by the chat:customer:seq counter', async () => {
    const { chat, go, store } = await setup();
    const s = await chat.start('x');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    expect(await store.get('chat:customer:seq')).toBe(1);
  });
});

/** The store as the service sees it, with hooks on the session lease and the session reads. */
function hooked(opts: { leaseRefused?: (store: Store) => Promise<void>; leaseTaken?: (store: Store) => Promise<void>; beforeUpdate?: (store: Store) => Promise<void>; read?: (value: Json | undefined) => Json | undefined }) {
  return (store: Store): Store =>
    new Proxy(store, {
      get(target, prop) {
        if (prop === 'set') {
          return async (key: string, value: Json, o?: { ifAbsent?: boolean }) => {
            const ok = await target.set(key, value, o as never);
            if (key.startsWith('chat:effect:') && o?.ifAbsent) {
              const hook = ok ? opts.leaseTaken : opts.leaseRefused;
              if (ok) opts.leaseTaken = undefined;
              else opts.leaseRefused = undefined;
              await hook?.(target);
            }
            return ok;
          };
        }
        if (prop === 'get' && opts.read) {
          return async (key: string) => {
            const v = await target.get(key);
            return key.startsWith('chat:session:') ? opts.read!(v) : v;
          };
        }
        if (prop === 'update' && opts.beforeUpdate) {
          return async (...args: unknown[]) => {
            const hook = opts.beforeUpdate;
            opts.beforeUpdate = undefined;
            await hook?.(target);
            return (target.update as (...a: unknown[]) => unknown)(...args);
          };
        }
        const v = (target as unknown as Record<string | symbol, unknown>)[prop];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
}

/** A session at the summary, made to owe its receipt (as after a failed registration). */
async function owing(t: Awaited<ReturnType<typeof setup>>) {
  const s = await t.chat.start('x');
  await t.go(s.session, ...TO_MEMO, '건너뛰기', '없음');
  const key = `chat:session:${s.session}`;
  const rec = (await t.store.get(key)) as { ctx: Record<string, Json>; state: string };
  const owed = { ...rec, state: 'received', ctx: { ...rec.ctx, pending: 'receipt' } } as unknown as Json;
  const done = { ...rec, state: 'received', ctx: { ...rec.ctx, receiptNo: 'R-9', customerId: 9 } } as unknown as Json;
  await t.store.set(key, owed);
  return { session: s.session, key, owed, done };
}

describe('the receipt owed, under the lease', () => {
  it('a session found owing inside the turn is settled first, then takes the turn', async () => {
    const hooks: Parameters<typeof hooked>[0] = {};
    const t = await setup({ wrap: hooked(hooks) });
    const s = await t.chat.start('x');
    await t.go(s.session, ...TO_MEMO, '건너뛰기', '없음', '확인');
    const key = `chat:session:${s.session}`;
    // between the turn's read and its update, the session comes to owe a receipt again
    hooks.beforeUpdate = async (store) => {
      const rec = (await store.get(key)) as { ctx: Record<string, Json> };
      await store.set(key, { ...rec, ctx: { ...rec.ctx, pending: 'receipt' } } as unknown as Json);
    };
    const r = await t.chat.turn(s.session, { choice: '진행 상황 보기' });
    expect([r.stage, r.receiptNo]).toEqual(['track', 'R-2']);
    expect(t.calls.filter((c) => c.what === 'register')).toHaveLength(2);
  });

  it('a session still owing after three settlements is 503 session_busy', async () => {
    const hooks: Parameters<typeof hooked>[0] = {};
    const t = await setup({ wrap: hooked(hooks) });
    const { session, owed } = await owing(t);
    // every read finds the receipt owed (another process owing it again each time)
    hooks.read = (v) => (v === undefined ? v : owed);
    expect(await refusal(t.chat.turn(session, { choice: '진행 상황 보기' }))).toEqual({
      status: 503,
      code: 'session_busy',
      message: 'the session is finishing a registration; try again',
    });
    expect(t.calls.filter((c) => c.what === 'register')).toHaveLength(3);
  });

  it('while another process holds the lease: a session gone is 404', async () => {
    const hooks: Parameters<typeof hooked>[0] = {};
    const t = await setup({ wrap: hooked(hooks) });
    const { session, key } = await owing(t);
    await t.store.set(`chat:effect:${session}`, 'other-process');
    hooks.leaseRefused = async (store) => void (await store.del(key));
    expect(await refusal(t.chat.turn(session, { choice: '진행 상황 보기' }))).toMatchObject({ status: 404, code: 'session_not_found' });
    expect(t.calls.filter((c) => c.what === 'register')).toHaveLength(0);
  });

  it('while another process holds the lease: a session it settled takes the turn at once, the lease still held', async () => {
    const hooks: Parameters<typeof hooked>[0] = {};
    const t = await setup({ wrap: hooked(hooks) });
    const { session, key, done } = await owing(t);
    const lease = `chat:effect:${session}`;
    await t.store.set(lease, 'other-process');
    hooks.leaseRefused = async (store) => void (await store.set(key, done));
    const r = await t.chat.turn(session, { choice: '진행 상황 보기' });
    expect([r.stage, r.receiptNo]).toEqual(['track', 'R-9']);
    expect(t.calls.filter((c) => c.what === 'register')).toHaveLength(0);
    expect(await t.store.get(lease)).toBe('other-process');
  });

  it('once the lease is taken: a session gone is 404, a session settled meanwhile is not registered again', async () => {
    const gone: Parameters<typeof hooked>[0] = {};
    const a = await setup({ wrap: hooked(gone) });
    const x = await owing(a);
    gone.leaseTaken = async (store) => void (await store.del(x.key));
    expect(await refusal(a.chat.turn(x.session, { choice: '진행 상황 보기' }))).toMatchObject({ status: 404, code: 'session_not_found' });
    expect(a.calls.filter((c) => c.what === 'register')).toHaveLength(0);
    expect(await a.store.get(`chat:effect:${x.session}`)).toBeUndefined();

    const settled: Parameters<typeof hooked>[0] = {};
    const b = await setup({ wrap: hooked(settled) });
    const y = await owing(b);
    settled.leaseTaken = async (store) => void (await store.set(y.key, y.done));
    const r = await b.chat.turn(y.session, { choice: '진행 상황 보기' });
    expect([r.stage, r.receiptNo]).toEqual(['track', 'R-9']);
    expect(b.calls.filter((c) => c.what === 'register')).toHaveLength(0);
  });

  it('a session gone while its receipt was registered is 404, and the lease is let go', async () => {
    let store: Store | undefined;
    let key = '';
    const t = await setup({ onRegister: async () => void (await store!.del(key)) });
    store = t.store;
    const o = await owing(t);
    key = o.key;
    expect(await refusal(t.chat.turn(o.session, { choice: '진행 상황 보기' }))).toMatchObject({ status: 404, code: 'session_not_found' });
    expect(await t.store.get(`chat:effect:${o.session}`)).toBeUndefined();
  });

  it('waits 400 rounds of 25 ms for another process holding the lease, then answers 503 session_busy', async () => {
    const t = await setup();
    const { session, owed } = await owing(t);
    const lease = `chat:effect:${session}`;
    let tries = 0;
    // the other process never lets go; the store answers at once, so only the 25 ms waits take time
    const quick = new Proxy(t.store, {
      get(target, prop) {
        if (prop === 'set') return async (key: string, value: Json, o?: { ifAbsent?: boolean }) => (key === lease ? (tries++, false) : target.set(key, value, o as never));
        if (prop === 'get') return async (key: string) => (key === `chat:session:${session}` ? owed : target.get(key));
        const v = (target as unknown as Record<string | symbol, unknown>)[prop];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const chat = new t.ChatService({
      store: quick,
      clock: new ManualClock(T0),
      intake: {} as never,
      mail: { writes: () => [] },
      referrals: {} as never,
      logger: { warn: () => undefined, debug: () => undefined, info: () => undefined } as never,
      sessionTtlMs: TTL,
      idleRestartMs: IDLE,
    });
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      let answer: unknown;
      void refusal(chat.turn(session, { choice: '진행 상황 보기' })).then((r) => (answer = r));
      await vi.advanceTimersByTimeAsync(399 * 25);
      expect([tries, answer]).toEqual([400, undefined]);
      await vi.advanceTimersByTimeAsync(25);
      expect(tries).toBe(401);
      await vi.advanceTimersByTimeAsync(0);
      expect(answer).toEqual({ status: 503, code: 'session_busy', message: 'the session is finishing a registration; try again' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not let go of a lease another process took over while it registered', async () => {
    let store: Store | undefined;
    let lease = '';
    const t = await setup({ onRegister: async () => void (await store!.set(lease, 'other-process')) });
    store = t.store;
    const o = await owing(t);
    lease = `chat:effect:${o.session}`;
    const r = await t.chat.turn(o.session, { choice: '진행 상황 보기' });
    expect(r.receiptNo).toBe('R-1');
    expect(await t.store.get(lease)).toBe('other-process');
  });

  it('an intake failure is logged with the error and the session', async () => {
    const { chat, go, logs } = await setup({ registerFails: new Error('intake down') });
    const s = await chat.start('x');
    await go(s.session, ...TO_MEMO, '건너뛰기', '없음');
    await refusal(chat.turn(s.session, { choice: '확인' }));
    expect(logs.filter((l) => l.level === 'warn')).toEqual([{ level: 'warn', obj: { err: new Error('intake down'), session: s.session }, msg: 'chat: intake registration failed' }]);
  });
});

describe('after the receipt, handing off', () => {
  const TO_UPSELL = [...TO_MEMO, '건너뛰기', '없음', '확인', '진행 상황 보기', '다음'];

  it('a hand-off at the upsell notes no upsell answer', async () => {
    const { chat, go, calls } = await setup();
    const s = await chat.start('x');
    await go(s.session, ...TO_UPSELL);
    const h = await go(s.session, '상담원 연결');
    expect(h.stage).toBe('handoff');
    expect(calls.some((c) => c.what === 'recordUpsell')).toBe(false);
  });

  it('back from a hand-off at the referral question, the upsell answer is not noted again', async () => {
    const { chat, go, calls } = await setup();
    const s = await chat.start('x');
    await go(s.session, ...TO_UPSELL, '추가할게요');
    expect(calls.filter((c) => c.what === 'recordUpsell')).toHaveLength(1);
    const h = await go(s.session, '상담원 연결');
    expect(h.stage).toBe('handoff');
    expect(h.choices).toEqual(['이어서 진행', '처음으로']);
    const back = await go(s.session, '이어서 진행');
    expect(back.stage).toBe('referral');
    expect(calls.filter((c) => c.what === 'recordUpsell')).toHaveLength(1);
  });

  it('the referral code is issued once: not again on a hand-off from sharing, nor when declined', async () => {
    const { chat, go, calls } = await setup();
    const s = await chat.start('x');
    await go(s.session, ...TO_UPSELL, '괜찮아요', '추천 코드 받기');
    expect(calls.filter((c) => c.what === 'issue')).toHaveLength(1);
    expect((await go(s.session, '상담원 연결')).stage).toBe('handoff');
    expect(calls.filter((c) => c.what === 'issue')).toHaveLength(1);
    const no = await setup();
    const n = await no.chat.start('x');
    expect((await no.go(n.session, ...TO_UPSELL, '괜찮아요', '다음에 할게요')).stage).toBe('sharing');
    expect(no.calls.some((c) => c.what === 'issue')).toBe(false);
  });
});
