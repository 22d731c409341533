/**
 * bench/chat: conversation turns per second and latency percentiles with 1,000 live sessions, on LMDB
 * and on Redis, and the bytes one stored session takes. Prints one JSON object.
 *
 *   npm run build && node dist/bench/chat.js [--sessions 1000] [--concurrency 32] [--seconds 8]
 *
 * A turn is ChatService.turn (the session read, then one atomic store update running XState's pure
 * transition on the restored snapshot and writing the next one). `sessions` sessions are started,
 * then `concurrency` turns stay in flight, each on a random session, for `seconds`. Answers follow
 * the journey without registering (greet -> need -> recommend -> back to need ...), alternating
 * button choices and typed Korean text, which goes through the keyword classifier. Bytes per
 * session: the stored JSON (state, context, machine version, time) at greet, in the middle of
 * collect and at sharing after a registration. Redis comes from REDIS_URL (default
 * redis://127.0.0.1:6379); when it does not answer its figures are null.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { chatIntake, chatMail } from '../src/chat/intake-link.js';
import { ReferralService } from '../src/chat/referral.js';
import { ChatService, type TurnAnswer } from '../src/chat/service.js';
import { systemClock } from '../src/clock.js';
import { IntakeService } from '../src/intake/service.js';
import { openLmdbStore } from '../src/store/lmdb.js';
import type { Store } from '../src/store/port.js';
import { openRedisStore } from '../src/store/redis.js';
import { dropRedisPrefix } from './redis-prefix.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '8' },
  },
});
const SESSIONS = Number(values.sessions);
const CONCURRENCY = Number(values.concurrency);
const SECONDS = Number(values.seconds);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const ms = (x: number) => +x.toFixed(3);
const summary = (lat: number[]) => {
  const s = [...lat].sort((a, b) => a - b);
  return { p50_ms: ms(pct(s, 50)), p99_ms: ms(pct(s, 99)), max_ms: ms(s[s.length - 1] ?? 0) };
};

const TYPED: Record<string, string[]> = {
  greet: ['네이버에서 검색했어요', '인스타 보고 왔어요', '지인 소개로 왔습니다'],
  need: ['렌탈 문의드려요', '업무 자동화 솔루션', '버틀러 서비스 알아봐요', '하드웨어 장비 구매'],
  recommend: ['아니요 다른 거 볼래요'],
};
const CHOICE: Record<string, string[]> = {
  greet: ['검색', 'SNS', '지인 소개', '광고'],
  need: ['렌탈', '솔루션', '버틀러 서비스', '하드웨어'],
  recommend: ['다른 상품 볼래요'],
};

function service(store: Store) {
  const intake = new IntakeService({ store, clock: systemClock });
  return new ChatService({
    store,
    clock: systemClock,
    // the bench never applies for a rental (its size walk registers a solution inquiry through intake)
    intake: chatIntake(intake, { submit: () => Promise.reject(new Error('the bench does not apply')) }),
    mail: chatMail(() => Date.now()),
    referrals: new ReferralService({ store, clock: systemClock }),
    logger: pino({ level: 'silent' }),
    sessionTtlMs: 3_600_000,
    idleRestartMs: 1_800_000,
  });
}

async function sessionBytes(store: Store, chat: ChatService) {
  const size = async (id: string) => JSON.stringify(await store.get(`chat:session:${id}`)).length;
  const s = await chat.start('크기 측정');
  const greet = await size(s.session);
  for (const c of ['검색', '솔루션', '신청할게요']) await chat.turn(s.session, { choice: c });
  for (const m of ['홍길동', '010-1234-5678']) await chat.turn(s.session, { message: m });
  const collect = await size(s.session);
  await chat.turn(s.session, { message: 'hong@example.kr' });
  await chat.turn(s.session, { message: '오전에 연락 부탁드립니다' });
  await chat.turn(s.session, { choice: '확인' });
  for (const c of ['진행 상황 보기', '다음', '추가할게요', '추천 코드 받기']) await chat.turn(s.session, { choice: c });
  const sharing = await size(s.session);
  return { greet, collect_mid: collect, sharing_after_receipt: sharing };
}

async function run(store: Store) {
  const chat = service(store);
  const ids: string[] = [];
  const stage: string[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const a = await chat.start(`세션 ${i}`);
    ids.push(a.session);
    stage.push(a.stage);
  }
  const lat: number[] = [];
  let turns = 0;
  let errors = 0;
  const busy = new Set<number>();
  const end = performance.now() + SECONDS * 1000;
  const worker = async (w: number) => {
    let n = w;
    while (performance.now() < end) {
      let i = Math.floor(Math.random() * SESSIONS);
      while (busy.has(i)) i = (i + 1) % SESSIONS; // one turn per session at a time: the bench's answers follow its last answer
      busy.add(i);
      const st = stage[i]!;
      const typed = n++ % 2 === 0;
      const list = (typed ? TYPED : CHOICE)[st]!;
      const pick = list[n % list.length]!;
      const t0 = performance.now();
      try {
        const a: TurnAnswer = await chat.turn(ids[i]!, typed ? { message: pick } : { choice: pick });
        lat.push(performance.now() - t0);
        stage[i] = a.stage;
        turns++;
      } catch {
        errors++;
      } finally {
        busy.delete(i);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  const secs = (performance.now() - t0) / 1000;
  return {
    live_sessions: SESSIONS,
    turns,
    errors,
    turns_per_s: Math.round(turns / secs),
    ...summary(lat),
    stages_at_end: stage.reduce<Record<string, number>>((m, s) => ((m[s] = (m[s] ?? 0) + 1), m), {}),
    session_bytes: await sessionBytes(store, chat),
  };
}

const lmdb = await openLmdbStore({ path: mkdtempSync(join(tmpdir(), 'maru-bench-chat-')) });
const lmdbResult = await run(lmdb);
await lmdb.close();

let redisResult: unknown = null;
const prefix = `bench:chat:${randomBytes(4).toString('hex')}:`;
try {
  const store = await openRedisStore({ url: REDIS_URL, prefix });
  await store.ping();
  redisResult = await run(store);
  await store.close();
} catch (err) {
  redisResult = { skipped: (err as Error).message };
}
await dropRedisPrefix(REDIS_URL, prefix).catch(() => undefined);

console.log(
  JSON.stringify(
    { bench: 'chat', sessions: SESSIONS, concurrency: CONCURRENCY, seconds: SECONDS, node: process.version, lmdb: lmdbResult, redis: redisResult },
    null,
    2,
  ),
);
