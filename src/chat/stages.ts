/**
 * The interface document's nine stages of the guided conversation, in its order (a stage's
 * stageCode is its position from 1), and their names for people: one source for the hub and the
 * pages (no dependency here, so pages import it).
 */
export const STAGES = ['greet', 'need', 'recommend', 'collect', 'received', 'track', 'upsell', 'referral', 'sharing'] as const;
export type WireStage = (typeof STAGES)[number];

/** Each stage, and the hand-off to a person (stage `handoff`, code 0), in Korean. */
export const STAGE_LABELS: Readonly<Record<WireStage | 'handoff', string>> = {
  greet: '인사',
  need: '필요 파악',
  recommend: '추천',
  collect: '정보 입력',
  received: '접수',
  track: '진행 조회',
  upsell: '추가 제안',
  referral: '추천 코드',
  sharing: '공유',
  handoff: '상담원 연결',
};
