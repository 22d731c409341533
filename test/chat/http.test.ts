import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, login, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { call, post, until } from '../support/http.js';
import { tempDir } from '../support/process.js';

const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-11-22T10:00:00+09:00');

let maru: Maru;
let base: string;
const clock = new ManualClock(T0);
beforeAll(async () => {
  maru = await startMaru(
    loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: tempDir('chat-http'),
      LOG_LEVEL: 'silent',
      CHAT_IDLE_RESTART: '600',
      CHAT_SESSION_TTL: '3600',
      CHAT_TURNS_PER_MINUTE: '100000',
      CHAT_SESSIONS_PER_CLIENT: '100000',
      CHAT_LOOKUPS_PER_MINUTE: '100000',
      ...AUTH_TEST_ENV,
    }),
    { clock, logger: silent },
  );
  base = maru.url;
});
afterAll(() => maru.stop());

const turn = async (session: string, a: { choice?: string; message?: string }) => {
  const r = await post(base, '/api/chat', { session, ...a });
  expect(r.status, r.text).toBe(200);
  return r.body;
};

const CATEGORIES = [
  { pick: '렌탈', code: 31, source: '검색' },
  { pick: '솔루션', code: 40, source: 'SNS' },
  { pick: '버틀러 서비스', code: 45, source: '지인 소개' },
  { pick: '하드웨어', code: 20, source: '오프라인' },
];

describe('the journey from greet to sharing', () => {
  it.each(CATEGORIES)('$pick -> product $code, receipt registered, referral code shared', async ({ pick, code, source }) => {
    const before = (await call(base, 'GET', '/api/shareholder')).body.cumulativeReceipts;
    const s = await post(base, '/api/chat/start', { subject: `${pick} 상담` });
    expect(s.status).toBe(201);
    expect(s.body).toMatchObject({ stage: 'greet', stageCode: 1 });
    expect(s.body.session).toMatch(/^cs_[A-Za-z0-9_-]{22}$/);
    expect(s.body.choices).toContain('상담원 연결');
    const id = s.body.session;

    let v = await turn(id, { choice: source });
    expect(v).toMatchObject({ stage: 'need', stageCode: 2 });
    v = await turn(id, { choice: pick });
    expect(v).toMatchObject({ stage: 'recommend', stageCode: 3, card: { type: 'product', code } });
    v = await turn(id, { choice: '신청할게요' });
    expect(v).toMatchObject({ stage: 'collect', stageCode: 4 });
    v = await turn(id, { message: '홍길동' });
    expect(v.stage).toBe('collect');
    v = await turn(id, { message: '010 1234 5678' });
    v = await turn(id, { message: 'hong@example.kr' });
    expect(v.choices).toContain('없음');
    v = await turn(id, { message: '오전에 연락 부탁드려요' });
    // the summary first: nothing is registered before it is confirmed
    expect(v).toMatchObject({ stage: 'collect', stageCode: 4, card: { type: 'summary', name: '홍길동', contact: '010-1234-5678', email: 'hong@example.kr', memo: '오전에 연락 부탁드려요' } });
    expect(v.receiptNo).toBeUndefined();
    expect((await call(base, 'GET', '/api/shareholder')).body.cumulativeReceipts).toBe(before);
    v = await turn(id, { choice: '확인' });
    expect(v).toMatchObject({ stage: 'received', stageCode: 5, card: { type: 'receipt' } });
    expect(v.receiptNo).toMatch(/^R\d{6}-\d{6,}$/);
    expect(v.card.receiptNo).toBe(v.receiptNo);
    const receiptNo = v.receiptNo;
    const trackUrl = v.card.trackUrl;
    v = await turn(id, { choice: '진행 상황 보기' });
    expect(v).toMatchObject({ stage: 'track', stageCode: 6, card: { type: 'progress', receiptNo, status: 'pending', label: '접수 완료' } });
    v = await turn(id, { choice: '다음' });
    expect(v).toMatchObject({ stage: 'upsell', stageCode: 7, card: { type: 'upsell', code } });
    v = await turn(id, { choice: '추가할게요' });
    expect(v).toMatchObject({ stage: 'referral', stageCode: 8 });
    // the receipt is an intake record (a rental application the partner reviews for the rental,
    // type chat for the others), and it notes the accepted upsell
    const record = await call(base, 'GET', trackUrl);
    expect(record.body).toMatchObject({ receiptNo, type: code === 31 ? 'rental-ipa' : 'chat', contactName: '홍길동', contactPhone: '010-1234-5678', email: 'hong@example.kr', upsell: { code, accepted: true } });
    v = await turn(id, { choice: '추천 코드 받기' });
    expect(v).toMatchObject({ stage: 'sharing', stageCode: 9, card: { type: 'share' } });
    const refCode = v.card.referralCode;
    expect(refCode).toMatch(/^MARU-[0-9A-Z]+$/);
    expect(v.card.url).toBe(`/chat?ref=${refCode}`);
    expect(v.receiptNo).toBe(receiptNo);

    const info = await call(base, 'GET', `/api/referral/${refCode}`);
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({ code: refCode, owner: { name: '홍*동', phone: '010-****-5678' }, uses: 0, rewards: [] });
    expect((await call(base, 'GET', '/api/shareholder')).body.cumulativeReceipts).toBe(before + 1);

    // sharing ends; 처음으로 starts over at greet
    v = await turn(id, { choice: '처음으로' });
    expect(v).toMatchObject({ stage: 'greet', stageCode: 1 });
    expect(v.receiptNo).toBeUndefined();
  });

  it('free text walks the same way (decomposed jamo too)', async () => {
    const id = (await post(base, '/api/chat/start', { subject: '문의' })).body.session;
    expect((await turn(id, { message: '네이버 검색' })).stage).toBe('need');
    const v = await turn(id, { message: '렌탈을 하고 싶어요'.normalize('NFD') });
    expect(v).toMatchObject({ stage: 'recommend', card: { code: 31 } });
    expect((await turn(id, { message: '네 신청할게요' })).stage).toBe('collect');
  });
});

describe('retries and a person', () => {
  it('a failed answer gets a clearer hint; the third hands off to a person, who is registered as a callback', async () => {
    const id = (await post(base, '/api/chat/start', { subject: '문의' })).body.session;
    const first = await turn(id, { message: '안녕하세요' });
    expect(first.stage).toBe('greet');
    expect(first.bot).toContain('잘 모르겠어요');
    const second = await turn(id, { message: '음' });
    expect(second.stage).toBe('greet');
    expect(second.bot).toContain('상담원 연결');
    expect(second.bot).not.toBe(first.bot);
    const third = await turn(id, { message: '???' });
    expect(third).toMatchObject({ stage: 'handoff', stageCode: 0 });
    expect(third.choices).toEqual(['돌아가기']);
    const bad = await turn(id, { message: '몰라요' });
    expect(bad.bot).toContain('010-1234-5678');
    const done = await turn(id, { message: '010-9876-5432' });
    expect(done).toMatchObject({ stage: 'handoff', card: { type: 'callback' } });
    expect(done.card.receiptNo).toMatch(/^R\d{6}-\d{6,}$/);
    const back = await turn(id, { choice: '이어서 진행' });
    expect(back).toMatchObject({ stage: 'greet', stageCode: 1 });
  });

  it('the person choice is offered on every journey stage; with a known contact it registers at once', async () => {
    const id = (await post(base, '/api/chat/start', { subject: '문의' })).body.session;
    await turn(id, { choice: '광고' });
    await turn(id, { choice: '하드웨어' });
    await turn(id, { choice: '신청할게요' });
    await turn(id, { message: '김민수' });
    let v = await turn(id, { message: '01055556666' });
    expect(v.choices).toContain('상담원 연결');
    // typed words are field values while collecting: an e-mail field refuses them, no hand-off
    v = await turn(id, { message: '상담원 바꿔주세요' });
    expect(v.stage).toBe('collect');
    v = await turn(id, { choice: '상담원 연결' });
    expect(v).toMatchObject({ stage: 'handoff', card: { type: 'callback' } });
    expect(v.bot).toContain('010-5555-6666');
    v = await turn(id, { choice: '이어서 진행' });
    expect(v.stage).toBe('collect');
    expect(v.bot).toContain('이메일');
  });

  it('an idle session starts again at greet', async () => {
    const id = (await post(base, '/api/chat/start', { subject: '문의' })).body.session;
    await turn(id, { choice: '검색' });
    clock.advance(601_000);
    const v = await turn(id, { choice: '렌탈' });
    expect(v).toMatchObject({ stage: 'greet', stageCode: 1 });
    expect(v.bot).toContain('다시 시작');
    expect((await turn(id, { choice: '검색' })).stage).toBe('need');
  });

  it('an expired session is 404', async () => {
    const id = (await post(base, '/api/chat/start', { subject: '문의' })).body.session;
    clock.advance(3_601_000);
    const r = await post(base, '/api/chat', { session: id, choice: '검색' });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('session_not_found');
  });
});

describe('concurrent turns on one session', () => {
  it('are applied one after the other: none lost, none interleaved', async () => {
    const id = (await post(base, '/api/chat/start', { subject: '문의' })).body.session;
    await turn(id, { choice: '검색' });
    await turn(id, { choice: '렌탈' });
    await turn(id, { choice: '신청할게요' });
    // four answers at once: name, phone, e-mail, memo, in whatever order the store applies them
    const answers = await Promise.all(
      ['이영희', '이영희', '이영희', '이영희'].map((m) => post(base, '/api/chat', { session: id, message: m })),
    );
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(4);
    // the first fills the name; the others are failed phone answers counted one by one (the third hands off)
    const stages = ok.map((a) => `${a.body.stage}`).sort();
    expect(stages).toEqual(['collect', 'collect', 'collect', 'handoff']);
    const now = await call(base, 'GET', `/api/chat/${id}`);
    expect(now.body.stage).toBe('handoff');
  });
});

describe('bad input', () => {
  it('is refused with the error shape and changes nothing', async () => {
    const id = (await post(base, '/api/chat/start', { subject: '문의' })).body.session;
    const cases: [string, string, unknown, number, string][] = [
      ['POST', '/api/chat/start', {}, 400, 'invalid_body'],
      ['POST', '/api/chat/start', { subject: '' }, 400, 'invalid_body'],
      ['POST', '/api/chat/start', { subject: 'x'.repeat(101) }, 400, 'invalid_body'],
      ['POST', '/api/chat/start', { subject: 'x', referralCode: 'NOPE-1' }, 400, 'invalid_body'],
      ['POST', '/api/chat/start', { subject: 'x', referralCode: 'MARU-ZZZZZ' }, 404, 'referral_not_found'],
      ['POST', '/api/chat', { session: id }, 400, 'invalid_body'],
      ['POST', '/api/chat', { session: id, choice: '검색', message: '검색' }, 400, 'invalid_body'],
      ['POST', '/api/chat', { session: id, message: 'x'.repeat(501) }, 400, 'invalid_body'],
      ['POST', '/api/chat', { session: 'nope', choice: '검색' }, 400, 'invalid_body'],
      ['POST', '/api/chat', { session: 'cs_AAAAAAAAAAAAAAAAAAAAAA', choice: '검색' }, 404, 'session_not_found'],
      ['POST', '/api/chat', '{oops', 400, 'invalid_json'],
      ['GET', '/api/chat/cs_AAAAAAAAAAAAAAAAAAAAAA', undefined, 404, 'session_not_found'],
      ['POST', '/api/referral', { customerId: 'abc', name: '홍길동', phone: '010-1234-5678' }, 400, 'invalid_body'],
      ['POST', '/api/referral', { customerId: -3, name: '홍길동', phone: '010-1234-5678' }, 400, 'invalid_body'],
      ['POST', '/api/referral', { customerId: 1.5, name: '홍길동', phone: '010-1234-5678' }, 400, 'invalid_body'],
      ['POST', '/api/referral', { customerId: 7, name: '', phone: '010-1234-5678' }, 400, 'invalid_body'],
      ['POST', '/api/referral', { customerId: 7, name: '홍길동', phone: '12' }, 400, 'invalid_body'],
      ['GET', '/api/referral/MARU', undefined, 400, 'invalid_params'],
      ['GET', '/api/referral/ABC-12', undefined, 400, 'invalid_params'],
      ['GET', '/api/referral/MARU-0A', undefined, 400, 'invalid_params'],
      ['GET', '/api/referral/MARU-ZZZZZZ', undefined, 404, 'referral_not_found'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await call(base, method, path, body);
      expect({ path, body, status: r.status, code: r.body?.error?.code }).toEqual({ path, body, status, code });
      expect(typeof r.body.error.message).toBe('string');
    }
    const notOffered = await post(base, '/api/chat', { session: id, choice: '렌탈' });
    expect(notOffered.status).toBe(400);
    expect(notOffered.body.error.code).toBe('choice_not_offered');
    expect(notOffered.body.error.details.choices).toEqual(['검색', 'SNS', '추천', '광고', '지인 소개', '오프라인', '기타', '상담원 연결']);
    // nothing changed
    expect((await call(base, 'GET', `/api/chat/${id}`)).body).toMatchObject({ stage: 'greet', bot: expect.not.stringContaining('모르겠') });
  });
});

describe('referrals', () => {
  it('the same customer gets the same code; rewards go to both sides once per referred customer; no self-referral', async () => {
    const a = await post(base, '/api/referral', { customerId: 1234567, name: '박지성', phone: '010-1111-2222' });
    expect(a.status).toBe(201);
    expect(a.body).toEqual({ code: 'MARU-QGLJ' });
    const again = await post(base, '/api/referral', { customerId: '1234567', name: '다른이름', phone: '010-3333-4444' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ code: 'MARU-QGLJ' });

    // a conversation that starts with the code and registers: one reward each side
    const walk = async (phone: string) => {
      const id = (await post(base, '/api/chat/start', { subject: '추천', referralCode: 'maru-qglj' })).body.session;
      for (const c of ['추천', '렌탈', '신청할게요']) await turn(id, { choice: c });
      for (const m of ['최민', phone]) await turn(id, { message: m });
      await turn(id, { choice: '건너뛰기' });
      await turn(id, { choice: '없음' });
      return turn(id, { choice: '확인' });
    };
    const r = await walk('010-7777-8888');
    expect(r.stage).toBe('received');
    let info = (await call(base, 'GET', '/api/referral/MARU-QGLJ')).body;
    expect(info.uses).toBe(1);
    expect(info.owner).toMatchObject({ customerId: 1234567, name: '박*성', phone: '010-****-2222' });
    expect(info.rewards.map((x: { side: string }) => x.side).sort()).toEqual(['owner', 'referred']);
    expect(info.rewards.find((x: { side: string }) => x.side === 'owner').customerId).toBe(1234567);

    // the owner's own phone: no reward (self-referral); the registration itself still stands
    const self = await walk('010-1111-2222');
    expect(self.receiptNo).toMatch(/^R/);
    info = (await call(base, 'GET', '/api/referral/MARU-QGLJ')).body;
    expect(info.uses).toBe(1);
    expect(info.rewards).toHaveLength(2);
  });

  it('shareholder view lists ten related services and the entry points', async () => {
    const r = await call(base, 'GET', '/api/shareholder');
    expect(r.status).toBe(200);
    expect(r.body.services).toHaveLength(10);
    expect(new Set(r.body.services.map((s: { id: string }) => s.id)).size).toBe(10);
    expect(r.body.entryPoints.length).toBeGreaterThan(0);
    expect(typeof r.body.cumulativeReceipts).toBe('number');
  });
});

describe('receipt mail and the preserved intake routes', () => {
  it('mails the confirmation through the outbox; tracking and mail resend work with the access key', async () => {
    const admin = bearer(await login(base, 'admin', TEST_ADMIN_PASSWORD));
    const id = (await post(base, '/api/chat/start', { subject: '메일' })).body.session;
    for (const c of ['검색', '솔루션', '신청할게요']) await turn(id, { choice: c });
    for (const m of ['윤서연', '010-6060-7070', 'seoyeon@example.kr']) await turn(id, { message: m });
    await turn(id, { choice: '없음' });
    const v = await turn(id, { choice: '확인' });
    const receiptNo: string = v.receiptNo;
    expect(v.card.trackUrl).toMatch(new RegExp(`^/api/subscriptions/${receiptNo}\\?key=ak_`));
    const mails = () => call(base, 'GET', '/api/mail?limit=50', undefined, admin).then((r) => r.body.mails as { to: string; subject: string; text: string }[]);
    const first = await until('the confirmation mail', async () => (await mails()).find((m) => m.subject.includes(receiptNo)));
    expect(first).toMatchObject({ to: 'seoyeon@example.kr' });
    expect(first.text).toContain('업무 자동화 솔루션');

    const tracked = await call(base, 'GET', v.card.trackUrl);
    expect(tracked.status).toBe(200);
    expect(tracked.body).toMatchObject({ receiptNo, type: 'chat', contactName: '윤서연', contactPhone: '010-6060-7070', status: 'pending' });

    const key = new URL(v.card.trackUrl, base).searchParams.get('key')!;
    const resend = await call(base, 'POST', `/api/subscriptions/${receiptNo}/mail?key=${key}`);
    expect(resend.status).toBe(202);
    expect(resend.body).toEqual({ receiptNo, to: 's***@example.kr', resend: 1 });
    await until('the resent mail', async () => (await mails()).filter((m) => m.subject.includes(receiptNo)).length === 2);

    const bad: [string, number, string][] = [
      [`/api/subscriptions/${receiptNo}/mail?key=ak_${'x'.repeat(43)}`, 403, 'invalid_key'],
      [`/api/subscriptions/${receiptNo}/mail`, 400, 'invalid_query'],
      [`/api/subscriptions/R000000-999999/mail?key=${key}`, 404, 'subscription_not_found'],
      [`/api/subscriptions/nope/mail?key=${key}`, 400, 'invalid_params'],
    ];
    for (const [path, status, code] of bad) {
      const r = await call(base, 'POST', path);
      expect({ path, status: r.status, code: r.body.error?.code }).toEqual({ path, status, code });
    }
    // bounded: three resends per receipt and hour
    expect((await call(base, 'POST', `/api/subscriptions/${receiptNo}/mail?key=${key}`)).status).toBe(202);
    const limited = await call(base, 'POST', `/api/subscriptions/${receiptNo}/mail?key=${key}`);
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
  });
});
