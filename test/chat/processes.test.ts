import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

// Real hub processes (dist/src/main.js) sharing one Redis: a conversation survives the process that
// served it, and referral codes are issued once across processes.
const redis = await redisOrSkip();
const prefix = uniquePrefix('chat-proc');
const started: HubProcess[] = [];
afterAll(async () => {
  for (const p of started) await p.stop('SIGKILL');
  await deletePrefix(redis.url, prefix);
});

describe.skipIf(!redis.available)('conversations on hub processes sharing Redis', () => {
  let a: HubProcess;
  let b: HubProcess;
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix };
  beforeAll(async () => {
    [a, b] = await Promise.all([startHubProcess({ ...env, DATA_DIR: tempDir('cp-a') }), startHubProcess({ ...env, DATA_DIR: tempDir('cp-b') })]);
    started.push(a, b);
  });

  it('a session started on one process continues on another after the first is killed', async () => {
    const s = await post(a.url, '/api/chat/start', { subject: '프로세스' });
    const id = s.body.session;
    expect((await post(a.url, '/api/chat', { session: id, choice: '검색' })).body.stage).toBe('need');
    expect((await post(a.url, '/api/chat', { session: id, choice: '솔루션' })).body.card.code).toBe(40);
    await a.stop('SIGKILL');
    const next = await post(b.url, '/api/chat', { session: id, choice: '신청할게요' });
    expect(next.status).toBe(200);
    expect(next.body).toMatchObject({ stage: 'collect', stageCode: 4 });
    for (const m of ['정다은', '010-2222-3333', 'da@example.kr']) await post(b.url, '/api/chat', { session: id, message: m });
    expect((await post(b.url, '/api/chat', { session: id, choice: '없음' })).body).toMatchObject({ stage: 'collect', stageCode: 4, card: { type: 'summary' } });
    const done = await post(b.url, '/api/chat', { session: id, choice: '확인' });
    expect(done.body).toMatchObject({ stage: 'received', receiptNo: expect.stringMatching(/^R\d{6}-\d{6,}$/) });
    // a restarted process carries on too
    a = await startHubProcess({ ...env, DATA_DIR: tempDir('cp-a2') });
    started.push(a);
    const track = await post(a.url, '/api/chat', { session: id, choice: '진행 상황 보기' });
    expect(track.body).toMatchObject({ stage: 'track', card: { receiptNo: done.body.receiptNo, status: 'pending' } });
  });

  it('concurrent turns on one session over two processes are applied one after the other', async () => {
    const id = (await post(b.url, '/api/chat/start', { subject: '동시' })).body.session;
    // ten identical answers at once. Serialised, they must give exactly this history whatever the
    // order: 1 moves greet -> need; 2, 3 fail the need question; 4 is the third failure (hand-off,
    // asking for a phone); 5, 6 fail the phone question; 7 is the third failure there (back to need);
    // 8, 9 fail; 10 hands off again. Interleaved or lost turns would change the counts.
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => post((i % 2 ? a : b).url, '/api/chat', { session: id, message: '검색' })),
    );
    expect(answers.every((r) => r.status === 200)).toBe(true);
    const stages = answers.map((r) => r.body.stage);
    expect(stages.filter((s) => s === 'need')).toHaveLength(6);
    expect(stages.filter((s) => s === 'handoff')).toHaveLength(4);
    const now = await call(a.url, 'GET', `/api/chat/${id}`);
    expect(now.body.stage).toBe('handoff');
  });

  it('referral codes: the same code for racing requests on both processes, one owner record', async () => {
    const customerId = 900_000 + Math.floor(Math.random() * 99_999);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post((i % 2 ? a : b).url, '/api/referral', { customerId, name: `고객${i}`.replace(/\d/g, '') + '님', phone: `010-4444-${String(1000 + i)}` }),
      ),
    );
    const codes = new Set(answers.map((r) => r.body.code));
    expect(codes).toEqual(new Set([`MARU-${customerId.toString(36).toUpperCase()}`]));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
    const created = answers.findIndex((r) => r.status === 201);
    const info = await call(b.url, 'GET', `/api/referral/${[...codes][0]}`);
    expect(info.body.owner.phone).toBe(`010-****-${1000 + created}`);
  });
});
