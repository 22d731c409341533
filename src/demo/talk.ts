import type { ChatService, TurnAnswer } from '../chat/index.js';
import { signOwner, type ActionStatus, type CoachService, type OwnerInput } from '../coach/index.js';
import { AppError } from '../errors.js';

/**
 * The demo's conversations (src/chat) and coaching owners (src/coach), made through the services'
 * own methods: the same turns a customer takes on /chat, the same calls a coaching client makes.
 */

export interface ChatDemoState {
  /** One conversation per stage reached: greet, recommend, a registered receipt shared as a referral code, a referred registration. */
  sessions: { stage: string; session: string }[];
  receipts: string[];
  referral_code?: string;
}

/** Walks a conversation with the given answers; returns the last answer. */
async function walk(chat: ChatService, subject: string, answers: ({ choice: string } | { message: string })[], referral?: string): Promise<TurnAnswer> {
  let v = await chat.start(subject, referral);
  for (const a of answers) v = await chat.turn(v.session, a);
  return v;
}

const collect = (name: string, phone: string) => [{ message: name }, { message: phone }, { choice: '건너뛰기' }, { choice: '없음' }, { choice: '확인' }];

/** Seeds the conversations once (the state says whether they are); `save` after each part. */
export async function seedChat(chat: ChatService, state: ChatDemoState, save: () => Promise<unknown>): Promise<void> {
  if (state.sessions.length > 0) return;
  // 1. just greeted, 2. a product recommended
  const greet = await chat.start('처음 방문');
  const recommend = await walk(chat, '솔루션 문의', [{ choice: 'SNS' }, { choice: '솔루션' }]);
  // 3. a registered receipt, tracked, upsell accepted, and a referral code to share
  const shared = await walk(chat, '하드웨어 상담', [
    { choice: '검색' },
    { choice: '하드웨어' },
    { choice: '신청할게요' },
    ...collect('김하람', '010-4242-1001'),
    { choice: '진행 상황 보기' },
    { choice: '다음' },
    { choice: '추가할게요' },
    { choice: '추천 코드 받기' },
  ]);
  const code = (shared.card as { referralCode?: string } | undefined)?.referralCode;
  if (!code || !shared.receiptNo) throw new Error(`the demo conversation did not reach sharing (stage ${shared.stage})`);
  // 4. a friend arrives with the code and registers: the code is used once
  const referred = await walk(chat, '추천', [{ choice: '추천' }, { choice: '버틀러 서비스' }, { choice: '신청할게요' }, ...collect('이소담', '010-4242-1002')], code);
  if (!referred.receiptNo) throw new Error(`the referred demo conversation did not register (stage ${referred.stage})`);
  state.sessions = [
    { stage: greet.stage, session: greet.session },
    { stage: recommend.stage, session: recommend.session },
    { stage: shared.stage, session: shared.session },
    { stage: referred.stage, session: referred.session },
  ];
  state.receipts = [shared.receiptNo, referred.receiptNo];
  state.referral_code = code;
  await save();
}

/** The two coaching owners: a vision, one action in each phase (티 옴 타 음), some under way or done. */
export const COACH_OWNERS: { id: string; input: OwnerInput; set: [string, ActionStatus][] }[] = [
  {
    id: 'demo-coach-1',
    input: {
      vision: '동네 서점을 문화 공간으로',
      actions: [
        { id: 't1', title: '단골 손님 열 명에게 바라는 점 묻기', phase: '티', reward: 10 },
        { id: 'o1', title: '낭독회 첫 일정 정하기', phase: '옴', reward: 20 },
        { id: 'ta1', title: '지역 작가 두 명 섭외하기', phase: '타', reward: 30 },
        { id: 'e1', title: '첫 달 방문객 돌아보기', phase: '음', reward: 15 },
      ],
    },
    set: [['t1', '완료'], ['o1', '진행']],
  },
  {
    id: 'demo-coach-2',
    input: {
      vision: '매일 30분 달리기',
      actions: [
        { id: 'shoes', title: '러닝화 고르기', phase: '티', reward: 5 },
        { id: 'route', title: '5km 코스 정하기', phase: '옴', reward: 10 },
        { id: 'week', title: '한 주 내내 달리기', phase: '타', reward: 40 },
        { id: 'review', title: '한 달 기록 정리하기', phase: '음', reward: 20 },
      ],
    },
    set: [['shoes', '완료'], ['route', '완료'], ['week', '진행']],
  },
];

/**
 * Registers the owners that do not exist yet and moves their actions (setAction is idempotent);
 * answers each owner's X-Service-Owner value (signed when COACH_OWNER_SECRET is set).
 */
export async function seedCoach(coach: CoachService, secret: string | undefined): Promise<{ owner: string; header: string }[]> {
  const out: { owner: string; header: string }[] = [];
  for (const o of COACH_OWNERS) {
    const exists = await coach.profile(o.id).then(
      () => true,
      (err: unknown) => {
        if (err instanceof AppError && err.kind === 'not_found') return false;
        throw err;
      },
    );
    if (!exists) {
      await coach.register(o.id, o.input);
      for (const [action, status] of o.set) await coach.setAction(o.id, action, status);
    }
    out.push({ owner: o.id, header: secret ? signOwner(secret, o.id) : o.id });
  }
  return out;
}
