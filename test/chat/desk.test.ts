import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { HOLD_IDLE_MS, TRANSCRIPT_MAX, weekOf } from '../../src/chat/desk.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { call, get, post } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { connectTopics, type TopicClient } from '../support/ws.js';

// The desk over a started hub on LMDB: staff take a conversation handed off to a person, answer it
// live in the customer's chat and hand it back to the guide at the stage it left.
const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-11-25T10:00:00+09:00'); // a Wednesday, Korean time

let maru: Maru;
let base: string;
let agentA: string;
let agentB: string;
let partner: string;
const clock = new ManualClock(T0);
beforeAll(async () => {
  maru = await startMaru(
    loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: tempDir('chat-desk'),
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
  [agentA, agentB, partner] = [await signIn(base, ['staff'], 'desk-a'), await signIn(base, ['staff'], 'desk-b'), await signIn(base, ['editor'], 'desk-editor')];
});
afterAll(() => maru.stop());

const turn = async (session: string, a: { choice?: string; message?: string }) => {
  const r = await post(base, '/api/chat', { session, ...a });
  expect(r.status, r.text).toBe(200);
  return r.body;
};

/** A conversation at the need stage whose customer asked for a person (phone given): waiting at the desk. */
async function handedOff(): Promise<string> {
  const id = (await post(base, '/api/chat/start', { subject: '데스크' })).body.session as string;
  await turn(id, { choice: '검색' });
  const asked = await turn(id, { choice: '상담원 연결' });
  expect(asked).toMatchObject({ stage: 'handoff', stageCode: 0, desk: { status: 'waiting' } });
  const v = await turn(id, { message: '010-5555-6666' });
  expect(v).toMatchObject({ stage: 'handoff', card: { type: 'callback' }, desk: { status: 'waiting' } });
  return id;
}

const as = (token: string) => bearer(token);

describe('taking, answering and handing back', () => {
  let watcher: TopicClient;
  afterAll(() => watcher?.close());

  it('a waiting conversation is listed, taken by one agent, answered live, and handed back at its stage', async () => {
    const id = await handedOff();
    const inbox = await get(base, '/api/desk', as(agentA));
    expect(inbox.status).toBe(200);
    const row = inbox.body.desk.find((e: { session: string }) => e.session === id);
    expect(row).toMatchObject({ status: 'waiting', reason: 'asked', stage: 'handoff', stageCode: 0, returnTo: 'need', subject: '데스크' });
    expect(inbox.body.recent.map((e: { session: string }) => e.session)).toContain(id);

    // the customer's page listens on the conversation's topic
    watcher = await connectTopics(base);
    await watcher.subscribe(`chat:${id}`);

    const taken = await post(base, `/api/desk/${id}/take`, {}, as(agentA));
    expect(taken.status, taken.text).toBe(200);
    expect(taken.body).toMatchObject({ status: 'held', agent: { id: 'desk-a' } });
    const note = await watcher.next();
    expect(note).toMatchObject({ type: 'message', topic: `chat:${id}`, data: { kind: 'line', line: { by: 'note' } } });
    const deskFrame = await watcher.next();
    expect(deskFrame.data).toMatchObject({ kind: 'desk', answer: { desk: { status: 'answering' }, choices: [] } });
    // the customer's page, reloaded, says a person answers
    expect((await get(base, `/api/chat/${id}`)).body).toMatchObject({ stage: 'handoff', desk: { status: 'answering' }, choices: [] });

    // the same agent taking it again changes nothing; another agent is refused
    expect((await post(base, `/api/desk/${id}/take`, {}, as(agentA))).status).toBe(200);
    const other = await post(base, `/api/desk/${id}/take`, {}, as(agentB));
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: 'desk_taken', details: { agent: { id: 'desk-a' } } });

    const said = await post(base, `/api/desk/${id}/messages`, { text: '  안녕하세요, 상담원입니다. 무엇을 도와드릴까요?  ' }, as(agentA));
    expect(said.status, said.text).toBe(201);
    expect(said.body).toMatchObject({ by: 'agent', text: '안녕하세요, 상담원입니다. 무엇을 도와드릴까요?', stageCode: 0 });
    const live = await watcher.next();
    expect(live.data).toMatchObject({ kind: 'line', line: { by: 'agent', text: '안녕하세요, 상담원입니다. 무엇을 도와드릴까요?' } });

    // while a person answers, the customer's words are for them: the guide does not take them
    const reply = await turn(id, { message: '렌탈 요금이 궁금해요' });
    expect(reply).toMatchObject({ stage: 'handoff', desk: { status: 'answering' }, choices: [] });
    expect((await watcher.next()).data).toMatchObject({ kind: 'line', line: { by: 'customer', text: '렌탈 요금이 궁금해요' } });
    const choice = await post(base, '/api/chat', { session: id, choice: '이어서 진행' });
    expect(choice.status).toBe(400);
    expect(choice.body.error.code).toBe('choice_not_offered');

    const conv = await get(base, `/api/desk/${id}`, as(agentB));
    expect(conv.status).toBe(200);
    expect(conv.body).toMatchObject({ status: 'held', values: { subject: '데스크', source: '검색', contact: '010-5555-6666' }, transcriptMax: TRANSCRIPT_MAX });
    const said_ = conv.body.transcript.map((l: { by: string; text: string }) => `${l.by}:${l.text}`);
    expect(said_).toContain('customer:상담원 연결');
    expect(said_).toContain('agent:안녕하세요, 상담원입니다. 무엇을 도와드릴까요?');
    expect(said_).toContain('customer:렌탈 요금이 궁금해요');
    expect(said_.at(-1)).toBe('customer:렌탈 요금이 궁금해요');

    // only the holder hands it back; the conversation returns to need, the stage it left
    const wrong = await post(base, `/api/desk/${id}/return`, {}, as(agentB));
    expect(wrong.status).toBe(409);
    expect(wrong.body.error).toMatchObject({ code: 'not_holder', details: { holder: { id: 'desk-a' } } });
    const back = await post(base, `/api/desk/${id}/return`, {}, as(agentA));
    expect(back.status, back.text).toBe(200);
    expect(back.body).toMatchObject({ stage: 'need', stageCode: 2 });
    expect(back.body.desk).toBeUndefined();
    expect(back.body.choices).toContain('렌탈');
    let f = await watcher.next();
    while (f.data.kind === 'line') f = await watcher.next();
    expect(f.data).toMatchObject({ kind: 'returned', answer: { stage: 'need', stageCode: 2 } });
    // the guide answers again, and the desk no longer lists it
    expect(await turn(id, { choice: '렌탈' })).toMatchObject({ stage: 'recommend', card: { code: 31 } });
    expect((await get(base, '/api/desk', as(agentA))).body.desk.map((e: { session: string }) => e.session)).not.toContain(id);
    expect((await get(base, `/api/desk/${id}`, as(agentA))).body.status).toBe('none');
  });

  it('the third failed answer puts the conversation at the desk as misunderstood', async () => {
    const id = (await post(base, '/api/chat/start', { subject: '오해' })).body.session as string;
    for (const m of ['zzz', 'qqq']) expect((await turn(id, { message: m })).stage).toBe('greet');
    expect(await turn(id, { message: 'xxx' })).toMatchObject({ stage: 'handoff', desk: { status: 'waiting' } });
    const row = (await get(base, '/api/desk', as(agentA))).body.desk.find((e: { session: string }) => e.session === id);
    expect(row).toMatchObject({ status: 'waiting', reason: 'misunderstood', returnTo: 'greet' });
    // the customer goes back to the guide alone: no longer waiting
    expect(await turn(id, { choice: '돌아가기' })).toMatchObject({ stage: 'greet' });
    expect((await get(base, '/api/desk', as(agentA))).body.desk.map((e: { session: string }) => e.session)).not.toContain(id);
    const take = await post(base, `/api/desk/${id}/take`, {}, as(agentA));
    expect(take.status).toBe(409);
    expect(take.body.error.code).toBe('not_waiting');
  });

  it('a holder silent for ten minutes gives the conversation up to the next person who takes it', async () => {
    const id = await handedOff();
    expect((await post(base, `/api/desk/${id}/take`, {}, as(agentA))).status).toBe(200);
    clock.advance(HOLD_IDLE_MS - 60_000);
    expect((await post(base, `/api/desk/${id}/messages`, { text: '잠시만 기다려 주세요' }, as(agentA))).status).toBe(201);
    // the answer counts as activity: ten minutes after the take, not after the answer
    clock.advance(120_000);
    expect((await post(base, `/api/desk/${id}/take`, {}, as(agentB))).body.error.code).toBe('desk_taken');
    clock.advance(HOLD_IDLE_MS - 120_000);
    expect((await post(base, `/api/desk/${id}/take`, {}, as(agentB))).body.error.code).toBe('desk_taken');
    clock.advance(1);
    const taken = await post(base, `/api/desk/${id}/take`, {}, as(agentB));
    expect(taken.status, taken.text).toBe(200);
    expect(taken.body.agent.id).toBe('desk-b');
    const conv = (await get(base, `/api/desk/${id}`, as(agentB))).body;
    expect(conv.transcript.at(-1)).toMatchObject({ by: 'note', text: '상담원 desk-b님이 이어받았어요.' });
    expect((await post(base, `/api/desk/${id}/messages`, { text: '제가 이어서 답할게요' }, as(agentA))).body.error.code).toBe('not_holder');
    expect((await post(base, `/api/desk/${id}/messages`, { text: '제가 이어서 답할게요' }, as(agentB))).status).toBe(201);
  });

  it('the operator passes the staff check', async () => {
    const admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    expect((await get(base, '/api/desk', as(admin))).status).toBe(200);
  });
});

describe('bad input and credentials change nothing', () => {
  const routes = (id: string) => [
    ['GET', '/api/desk', undefined],
    ['GET', '/api/desk/funnel', undefined],
    ['GET', `/api/desk/${id}`, undefined],
    ['POST', `/api/desk/${id}/take`, {}],
    ['POST', `/api/desk/${id}/messages`, { text: '안녕하세요' }],
    ['POST', `/api/desk/${id}/return`, {}],
  ] as const;

  it('no token: 401; an unknown token: 401; an account without staff: 403', async () => {
    const id = await handedOff();
    for (const [method, path, body] of routes(id)) {
      const none = await call(base, method, path, body);
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(none.body.error.code).toBe('unauthorized');
      const bad = await call(base, method, path, body, bearer('mt_' + 'x'.repeat(43)));
      expect(bad.status).toBe(401);
      expect(bad.body.error.code).toBe('invalid_token');
      const editor = await call(base, method, path, body, as(partner));
      expect(editor.status).toBe(403);
      expect(editor.body.error.code).toBe('forbidden');
    }
    // still waiting, nobody holds it
    expect((await get(base, `/api/desk/${id}`, as(agentA))).body).toMatchObject({ status: 'waiting' });
    expect((await get(base, `/api/chat/${id}`)).body.desk).toEqual({ status: 'waiting' });
  });

  it('a malformed or unknown session: 400 and 404', async () => {
    for (const [method, path, body] of routes('nope').slice(2)) {
      const r = await call(base, method, path, body, as(agentA));
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.body.error.code).toBe('invalid_params');
    }
    const unknown = 'cs_' + 'A'.repeat(22);
    for (const [method, path, body] of routes(unknown).slice(2)) {
      const r = await call(base, method, path, body, as(agentA));
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error.code).toBe('session_not_found');
    }
  });

  it('answering or handing back a conversation one does not hold: 409 not_holder, nothing written', async () => {
    const id = await handedOff();
    const before = (await get(base, `/api/desk/${id}`, as(agentA))).body.transcript.length;
    for (const path of [`/api/desk/${id}/messages`, `/api/desk/${id}/return`]) {
      const r = await post(base, path, path.endsWith('messages') ? { text: '제가 답할게요' } : {}, as(agentA));
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({ code: 'not_holder', details: { holder: null } });
    }
    expect((await post(base, `/api/desk/${id}/take`, {}, as(agentB))).status).toBe(200);
    const r = await post(base, `/api/desk/${id}/messages`, { text: '제가 답할게요' }, as(agentA));
    expect(r.status).toBe(409);
    expect(r.body.error.details.holder.id).toBe('desk-b');
    const conv = (await get(base, `/api/desk/${id}`, as(agentA))).body;
    // only the taking's note was added
    expect(conv.transcript.length).toBe(before + 1);
    expect(conv.transcript.some((l: { text: string }) => l.text === '제가 답할게요')).toBe(false);
    expect(conv.agent.id).toBe('desk-b');
  });

  it('an empty, blank, oversized or malformed message: 400, nothing written', async () => {
    const id = await handedOff();
    await post(base, `/api/desk/${id}/take`, {}, as(agentA));
    const before = (await get(base, `/api/desk/${id}`, as(agentA))).body.transcript;
    for (const body of [{ text: '' }, { text: '   ' }, { text: '가'.repeat(501) }, {}, { text: 5 }, { text: 'hi', extra: 1 }, '[]', 'not json']) {
      const r = await call(base, 'POST', `/api/desk/${id}/messages`, body, as(agentA));
      expect(r.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body.error.code).toMatch(/^invalid_|^malformed/);
    }
    expect((await post(base, `/api/desk/${id}/messages`, { text: '가'.repeat(500) }, as(agentA))).status).toBe(201);
    const after = (await get(base, `/api/desk/${id}`, as(agentA))).body.transcript;
    expect(after.length).toBe(before.length + 1);
  });

  it('the desk topic is for staff; a conversation topic exists while its session does', async () => {
    const ws = await connectTopics(base);
    try {
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'desk' }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'unauthorized', topic: 'desk' });
      await ws.auth(partner);
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'desk' }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'forbidden', topic: 'desk' });
      await ws.auth(agentA);
      await ws.subscribe('desk');
      ws.ws.send(JSON.stringify({ type: 'subscribe', topic: `chat:cs_${'B'.repeat(22)}` }));
      expect(await ws.next()).toMatchObject({ type: 'error', code: 'unknown_topic' });
    } finally {
      ws.close();
    }
  });
});

describe('the transcript and the funnel', () => {
  it("the customer's page reads its own transcript by the session id: a person's answers survive a reload", async () => {
    const id = await handedOff();
    await post(base, `/api/desk/${id}/take`, {}, as(agentA));
    await post(base, `/api/desk/${id}/messages`, { text: '다시 불러와도 보여요' }, as(agentA));
    const r = await get(base, `/api/chat/${id}/transcript`);
    expect(r.status).toBe(200);
    expect(r.body.transcriptMax).toBe(TRANSCRIPT_MAX);
    expect(r.body.transcript.map((l: { by: string; text: string }) => l.by)).toEqual(['bot', 'customer', 'bot', 'customer', 'bot', 'customer', 'bot', 'note', 'agent']);
    expect(r.body.transcript.at(-1)).toMatchObject({ by: 'agent', agent: 'desk-a', text: '다시 불러와도 보여요', stageCode: 0 });
    expect(r.body.transcript[0]).toMatchObject({ by: 'bot', stageCode: 1 });
    const bad = await get(base, '/api/chat/nope/transcript');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_params');
    const gone = await get(base, `/api/chat/cs_${'C'.repeat(22)}/transcript`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('session_not_found');
  });

  it(`keeps the last ${TRANSCRIPT_MAX} lines`, async () => {
    const id = await handedOff();
    await post(base, `/api/desk/${id}/take`, {}, as(agentA));
    for (let i = 0; i < TRANSCRIPT_MAX + 5; i++) await post(base, `/api/desk/${id}/messages`, { text: `답변 ${i}` }, as(agentA));
    const t = (await get(base, `/api/desk/${id}`, as(agentA))).body.transcript;
    expect(t).toHaveLength(TRANSCRIPT_MAX);
    expect(t.at(-1).text).toBe(`답변 ${TRANSCRIPT_MAX + 4}`);
    // 205 answers: the first five are gone, with every line before them
    expect(t[0].text).toBe('답변 5');
  });

  it('counts each session once per stage it reached, in the week it started (Korean time)', async () => {
    const before = (await get(base, '/api/desk/funnel', as(agentA))).body;
    expect(before.week).toBe('2026-W48');
    expect(before.from).toBe('2026-11-22T15:00:00.000Z'); // Monday 00:00 KST
    const count = (f: { stages: { stage: string; sessions: number }[] }, s: string) => f.stages.find((x) => x.stage === s)!.sessions;
    const id = (await post(base, '/api/chat/start', { subject: '깔때기' })).body.session;
    await turn(id, { choice: '검색' });
    await turn(id, { choice: '솔루션' });
    await turn(id, { choice: '다른 상품 볼래요' }); // back to need: counted once
    await turn(id, { choice: '솔루션' });
    const after = (await get(base, '/api/desk/funnel', as(agentA))).body;
    expect(after.stages.map((s: { stage: string }) => s.stage)).toEqual(['greet', 'need', 'recommend', 'collect', 'received', 'track', 'upsell', 'referral', 'sharing']);
    expect(count(after, 'greet') - count(before, 'greet')).toBe(1);
    expect(count(after, 'need') - count(before, 'need')).toBe(1);
    expect(count(after, 'recommend') - count(before, 'recommend')).toBe(1);
    expect(count(after, 'collect') - count(before, 'collect')).toBe(0);
  });

  it('weeks are ISO weeks in Korean time', () => {
    expect(weekOf(Date.parse('2026-11-22T23:59:59+09:00')).week).toBe('2026-W47'); // Sunday
    expect(weekOf(Date.parse('2026-11-23T00:00:00+09:00')).week).toBe('2026-W48'); // Monday
    expect(weekOf(Date.parse('2027-01-01T12:00:00+09:00')).week).toBe('2026-W53');
    expect(weekOf(Date.parse('2024-12-30T12:00:00+09:00')).week).toBe('2025-W01');
  });
});
