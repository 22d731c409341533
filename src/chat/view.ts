import { josa } from 'es-hangul';
import { NEED_LABELS, PRODUCTS, SOURCE_LABELS, productFor } from './catalog.js';
import { normalise } from './classify.js';
import { SOURCES, type Need } from './keywords.js';
import { MAX_RETRIES, stageCode, wireStage, type AnswerEvent, type ChatContext, type Field, type Stage, type StateName } from './machine.js';
import { referralCode } from './referral-code.js';

/**
 * What the customer sees of a session: the bot's message, the offered choices (each mapped to the
 * answer it stands for) and the card. Derived from the snapshot on every turn, never stored, so a
 * stored session is only the machine's state and context.
 */

export interface Choice {
  label: string;
  answer: Omit<AnswerEvent, 'type'>;
}

export type Card =
  | { type: 'product'; code: number; name: string; category: Need; categoryLabel: string; summary: string; monthlyFee: number }
  | { type: 'upsell'; code: number; name: string; baseName: string; summary: string; monthlyFee: number }
  | { type: 'receipt'; receiptNo: string; trackUrl?: string; pageUrl?: string; accessKey?: string }
  | { type: 'progress'; receiptNo: string; status: string; label: string }
  | { type: 'callback'; receiptNo: string }
  | {
      type: 'summary';
      name: string;
      contact: string;
      email: string | null;
      product: string;
      need: string;
      needText?: string;
      memo: string | null;
      referralCode?: string;
    }
  | { type: 'share'; title: string; text: string; url: string; referralCode?: string };

export interface View {
  stage: string;
  stageCode: number;
  bot: string;
  choices: Choice[];
  card?: Card;
}

export const PERSON = '상담원 연결';
const person: Choice = { label: PERSON, answer: { handoff: true } };

const SOURCE_CHOICES: Choice[] = SOURCES.map((source) => ({ label: SOURCE_LABELS[source], answer: { source } }));
const NEED_CHOICES: [string, Need][] = (Object.keys(NEED_LABELS) as Need[]).map((n) => [NEED_LABELS[n], n]);

const QUESTION: Record<Field, string> = {
  name: '신청하시는 분의 성함을 알려 주세요.',
  contact: '연락 받으실 전화번호를 알려 주세요.',
  email: '확인 메일을 받으실 이메일 주소를 알려 주세요. 없으시면 "건너뛰기"를 눌러 주세요.',
  memo: '남기실 요청 사항이 있으면 적어 주세요. 없으시면 "없음"을 눌러 주세요.',
};
const FIELD_HINT: Record<Field, string> = {
  name: '성함은 한글 또는 영문 1~40자로 적어 주세요. (예: 홍길동)',
  contact: '전화번호는 숫자로 적어 주세요. (예: 010-1234-5678, 02-123-4567)',
  email: '이메일 형식이 아니에요. (예: name@example.com) 없으시면 "건너뛰기"를 눌러 주세요.',
  memo: '요청 사항은 500자 이내로 적어 주세요. 없으시면 "없음"을 눌러 주세요.',
};
const HINT: Record<string, string> = {
  unknown_source: '어떤 경로로 알게 되셨는지 잘 모르겠어요. 아래에서 고르시거나 "네이버 검색", "지인 소개"처럼 적어 주세요.',
  unknown_need: '어떤 도움이 필요하신지 잘 모르겠어요. 렌탈, 솔루션, 버틀러 서비스, 하드웨어 중에서 골라 주세요.',
  yes_or_no: '아래 버튼 중 하나를 눌러 주시거나 "네" 또는 "아니요"로 답해 주세요.',
  restart_only: '상담이 모두 끝났어요. "처음으로"를 누르면 새 상담을 시작해요.',
  invalid_phone: '전화번호를 숫자로 적어 주세요. (예: 010-1234-5678)',
  resume_or_restart: '"이어서 진행" 또는 "처음으로"를 눌러 주세요.',
  confirm_or_change: '내용이 맞으면 "확인"을, 고칠 곳이 있으면 "수정"을 눌러 주세요. "네"라고 적으셔도 접수돼요.',
  pick_change: '고칠 항목을 아래에서 골라 주세요. 모두 맞으면 "돌아가기"를 눌러 주세요.',
};

/** The summary's change list: each line of it, a new start, or back to the summary. */
const CHANGE_CHOICES: Choice[] = [
  { label: '성함', answer: { edit: 'name' } },
  { label: '연락처', answer: { edit: 'contact' } },
  { label: '이메일', answer: { edit: 'email' } },
  { label: '요청 사항', answer: { edit: 'memo' } },
  { label: '상품', answer: { edit: 'product' } },
  { label: '처음부터', answer: { restart: true } },
  { label: '돌아가기', answer: { resume: true } },
];

/** Subjects that name no topic (the page's default "상담"): the greeting does not quote them. */
const PLAIN_SUBJECTS = new Set(['상담', '문의', '상담문의', '문의하기', '상담하기', '일반', '일반문의', '기타', '맞춤상담', 'chat', 'general'].map(normalise));

function greetText(ctx: ChatContext): string {
  const about = PLAIN_SUBJECTS.has(normalise(ctx.subject)) ? '' : `"${ctx.subject}" 건으로 `;
  // the code only: who referred is never shown here (GET /api/referral/:code masks even that)
  const referred = ctx.referredBy ? `추천 코드를 확인했어요 (${ctx.referredBy}). 신청이 접수되면 추천해 주신 분과 함께 혜택을 받으실 수 있어요. ` : '';
  return `안녕하세요, maru 맞춤 상담이에요. ${about}찾아 주셔서 감사합니다. ${referred}저희를 어떻게 알게 되셨나요?`;
}

/** The need as the customer said it: the category, and their own words when typed. */
export function needText(ctx: ChatContext): string | undefined {
  if (!ctx.need || !ctx.category) return undefined;
  return ctx.need === ctx.category || ctx.need === NEED_LABELS[ctx.category] ? undefined : ctx.need;
}

/** The hint after a failed answer: clearer the second time, with the way to a person. */
function hint(ctx: ChatContext): string {
  if (!ctx.error || ctx.retries === 0) return '';
  const error = ctx.error === 'confirm_or_change' && ctx.editing ? 'pick_change' : ctx.error;
  const text = error === 'invalid_field' && ctx.field ? FIELD_HINT[ctx.field] : (HINT[error] ?? '');
  const last = ctx.retries >= MAX_RETRIES - 1 ? ` 한 번 더 어려우시면 "${PERSON}"으로 직원이 직접 도와드릴게요.` : '';
  return `${text}${last}\n`;
}

export function view(state: StateName, ctx: ChatContext, welcome = false): View {
  const h = hint(ctx);
  const at = (stage: Stage, bot: string, choices: Choice[], card?: Card): View => ({
    stage: wireStage(stage),
    stageCode: stageCode(state),
    bot: h + bot,
    choices,
    ...(card ? { card } : {}),
  });
  switch (state) {
    case 'greet':
      return at(
        'greet',
        `${welcome ? '오랜만이에요! 상담을 처음부터 다시 시작할게요.\n' : ''}${greetText(ctx)}`,
        [...SOURCE_CHOICES, person],
      );
    case 'need':
      return at('need', '어떤 도움이 필요하세요?', [...NEED_CHOICES.map(([label, need]) => ({ label, answer: { need } })), person]);
    case 'recommend': {
      const p = productFor(ctx.category!);
      return at(
        'recommend',
        `${NEED_LABELS[ctx.category!]} 상담에는 ${josa(p.name, '을/를')} 추천드려요. 신청하시겠어요?`,
        [{ label: '신청할게요', answer: { yes: true } }, { label: '다른 상품 볼래요', answer: { yes: false } }, person],
        { type: 'product', code: p.code, name: p.name, category: p.category, categoryLabel: NEED_LABELS[p.category], summary: p.summary, monthlyFee: p.monthlyFee },
      );
    }
    case 'collect': {
      const f = ctx.field ?? 'name';
      const skip: Choice[] =
        f === 'email' ? [{ label: '건너뛰기', answer: { skip: true } }] : f === 'memo' ? [{ label: '없음', answer: { skip: true } }] : [];
      const greeting = f === 'contact' && ctx.name ? `${ctx.name}님, ` : '';
      return at('collect', greeting + QUESTION[f], [...skip, person]);
    }
    case 'confirm': {
      if (ctx.editing) return at('confirm', '어떤 항목을 고칠까요?', [...CHANGE_CHOICES, person]);
      const p = productFor(ctx.category!);
      const own = needText(ctx);
      return at(
        'confirm',
        '신청 내용을 확인해 주세요. 이대로 접수할까요?',
        [{ label: '확인', answer: { yes: true } }, { label: '수정', answer: { change: true } }, person],
        {
          type: 'summary',
          name: ctx.name ?? '',
          contact: ctx.contact ?? '',
          email: ctx.email ?? null,
          product: p.name,
          need: NEED_LABELS[p.category],
          ...(own ? { needText: own } : {}),
          memo: ctx.memo ?? null,
          ...(ctx.referredBy ? { referralCode: ctx.referredBy } : {}),
        },
      );
    }
    case 'received':
      return ctx.receiptNo
        ? at(
            'received',
            `접수되었어요. 접수번호는 ${ctx.receiptNo}입니다.${ctx.email ? ` ${ctx.email}(으)로 확인 메일을 보냈어요.` : ''} 진행 상황을 보시겠어요?`,
            [{ label: '진행 상황 보기', answer: { yes: true } }, person],
            {
              type: 'receipt',
              receiptNo: ctx.receiptNo,
              ...(ctx.accessKey
                ? {
                    trackUrl: `/api/subscriptions/${ctx.receiptNo}?key=${ctx.accessKey}`,
                    // the applicant's page (status, documents, uploads); the key stays in the fragment
                    pageUrl: `/applicant.html#receipt=${ctx.receiptNo}&key=${ctx.accessKey}`,
                    accessKey: ctx.accessKey,
                  }
                : {}),
            },
          )
        : at('received', '접수하고 있어요. 잠시 후 다시 눌러 주세요.', [{ label: '진행 상황 보기', answer: { yes: true } }, person]);
    case 'track': {
      const label = ctx.progress?.label ?? '확인 중';
      return at(
        'track',
        `접수번호 ${ctx.receiptNo}의 진행 상황: ${label}. 담당자가 확인하면 연락드려요.`,
        [{ label: '새로고침', answer: { refresh: true } }, { label: '다음', answer: { yes: true } }, person],
        { type: 'progress', receiptNo: ctx.receiptNo!, status: ctx.progress?.status ?? 'unknown', label },
      );
    }
    case 'upsell': {
      const base = PRODUCTS[ctx.upsellCode!]!;
      return at(
        'upsell',
        `${josa(base.name, '와/과')} 함께 많이 찾으시는 ${base.upsell.name}도 있어요. 추가하시겠어요?`,
        [{ label: '추가할게요', answer: { yes: true } }, { label: '괜찮아요', answer: { yes: false } }, person],
        { type: 'upsell', code: base.code, name: base.upsell.name, baseName: base.name, summary: base.upsell.summary, monthlyFee: base.upsell.monthlyFee },
      );
    }
    case 'referral':
      return at(
        'referral',
        `${ctx.upsellAccepted ? '추가 신청도 접수했어요. ' : ''}지인에게 maru를 추천하시면 두 분 모두 혜택을 드려요. 추천 코드를 받으시겠어요?`,
        [{ label: '추천 코드 받기', answer: { yes: true } }, { label: '다음에 할게요', answer: { yes: false } }, person],
      );
    case 'sharing': {
      const code = ctx.referral && ctx.customerId !== undefined ? referralCode(ctx.customerId) : undefined;
      const url = code ? `/chat?ref=${code}` : '/chat';
      return at(
        'sharing',
        code ? `추천 코드는 ${code}입니다. 아래 카드로 공유해 주세요. 상담해 주셔서 감사해요!` : '상담해 주셔서 감사해요! 아래 카드로 maru를 공유해 주세요.',
        [{ label: '처음으로', answer: { restart: true } }, person],
        {
          type: 'share',
          title: 'maru 상담',
          text: code ? `추천 코드 ${code}로 상담을 시작하면 두 분 모두 혜택을 받아요.` : 'maru에서 렌탈·솔루션·버틀러·하드웨어 상담을 받아 보세요.',
          url,
          ...(code ? { referralCode: code } : {}),
        },
      );
    }
    case 'handoffContact':
      return {
        stage: 'handoff',
        stageCode: 0,
        bot: `${h}${ctx.error === 'too_many_tries' ? '여러 번 확인이 어려웠어요. ' : ''}상담원이 전화드릴게요. 연락 받으실 전화번호를 알려 주세요.`,
        choices: [{ label: '돌아가기', answer: { resume: true } }],
      };
    case 'handoff':
      return {
        stage: 'handoff',
        stageCode: 0,
        bot: ctx.callbackNo
          ? `${h}${ctx.error === 'too_many_tries' ? '여러 번 확인이 어려웠어요. ' : ''}상담원 연결을 요청했어요 (접수번호 ${ctx.callbackNo}). ${ctx.contact}(으)로 곧 연락드릴게요.`
          : `${h}상담원 연결을 요청하고 있어요.`,
        choices: [{ label: '이어서 진행', answer: { resume: true } }, { label: '처음으로', answer: { restart: true } }],
        ...(ctx.callbackNo ? { card: { type: 'callback', receiptNo: ctx.callbackNo } as Card } : {}),
      };
  }
}
