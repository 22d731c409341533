import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { connectTopics } from '../support/ws.js';

// Two real hub processes (dist/src/main.js) sharing one Redis: agents on both race to take the same
// conversation; the store's atomic take lets exactly one hold it, and the holder's answers reach the
// customer listening on the other process.
const redis = await redisOrSkip();
const prefix = uniquePrefix('chat-desk');
const started: HubProcess[] = [];
afterAll(async () => {
  for (const p of started) await p.stop('SIGKILL');
  await deletePrefix(redis.url, prefix);
});

describe.skipIf(!redis.available)('the desk on hub processes sharing Redis', () => {
  let a: HubProcess;
  let b: HubProcess;
  const tokens: { token: string; on: HubProcess; user: string }[] = [];
  beforeAll(async () => {
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, ...AUTH_TEST_ENV };
    [a, b] = await Promise.all([startHubProcess({ ...env, DATA_DIR: tempDir('cd-a') }), startHubProcess({ ...env, DATA_DIR: tempDir('cd-b') })]);
    started.push(a, b);
    for (let i = 0; i < 8; i++) {
      const on = i % 2 ? a : b;
      const user = `race${i}x${process.pid}`;
      tokens.push({ token: await signIn(on.url, ['staff'], user), on, user });
    }
  });

  async function waiting(): Promise<string> {
    const id = (await post(a.url, '/api/chat/start', { subject: '경합' })).body.session as string;
    await post(b.url, '/api/chat', { session: id, choice: '검색' });
    await post(a.url, '/api/chat', { session: id, choice: '상담원 연결' });
    const v = await post(b.url, '/api/chat', { session: id, message: '010-7777-8888' });
    expect(v.body).toMatchObject({ stage: 'handoff', desk: { status: 'waiting' } });
    return id;
  }

  it('eight agents on two processes take one conversation at once: one 200, seven 409 desk_taken naming the holder', async () => {
    for (let round = 0; round < 3; round++) {
      const id = await waiting();
      const answers = await Promise.all(tokens.map((t) => post(t.on.url, `/api/desk/${id}/take`, {}, bearer(t.token))));
      const won = answers.filter((r) => r.status === 200);
      expect(won).toHaveLength(1);
      const lost = answers.filter((r) => r.status === 409);
      expect(lost).toHaveLength(tokens.length - 1);
      const holder = won[0]!.body.agent.id;
      for (const r of lost) expect(r.body.error).toMatchObject({ code: 'desk_taken', details: { agent: { id: holder } } });
      // both processes see the same holder, and one note of the taking in the transcript
      for (const p of [a, b]) {
        const conv = await call(p.url, 'GET', `/api/desk/${id}`, undefined, bearer(tokens[0]!.token));
        expect(conv.body.agent.id).toBe(holder);
        expect(conv.body.transcript.filter((l: { by: string }) => l.by === 'note')).toHaveLength(1);
      }
    }
  });

  it("the holder's answer on one process reaches the customer listening on the other; the hand-back too", async () => {
    const id = await waiting();
    const agent = tokens[1]!; // signed in on a
    expect((await post(a.url, `/api/desk/${id}/take`, {}, bearer(agent.token))).status).toBe(200);
    const customer = await connectTopics(b.url);
    try {
      await customer.subscribe(`chat:${id}`);
      expect((await post(a.url, `/api/desk/${id}/messages`, { text: '다른 프로세스에서 답합니다' }, bearer(agent.token))).status).toBe(201);
      // the note of the taking may still be on its way (published as the take answered): skip it
      let m = await customer.next();
      while (m.data.kind !== 'line' || m.data.line.by !== 'agent') m = await customer.next();
      expect(m.data).toMatchObject({ kind: 'line', line: { by: 'agent', text: '다른 프로세스에서 답합니다' } });
      const back = await post(a.url, `/api/desk/${id}/return`, {}, bearer(agent.token));
      expect(back.body).toMatchObject({ stage: 'need', stageCode: 2 });
      let f = await customer.next();
      while (f.data.kind === 'line') f = await customer.next();
      expect(f.data).toMatchObject({ kind: 'returned', answer: { stage: 'need' } });
    } finally {
      customer.close();
    }
  });
});
