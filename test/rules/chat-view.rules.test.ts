import { describe, expect, it, vi } from 'vitest';
import type { ChatContext } from '../../src/chat/machine.js';

// What the customer sees of a chat session (src/chat/view.ts): per state the bot's words, the
// choices (each mapped to the answer it stands for, a person always among them but on the hand-off
// states), the card; the stage code (the stage's position, 0 for the hand-off); after a failed
// answer a hint, and from the second failure in a row the way to a person. The module builds its
// tables at load: each test imports it afresh.
const load = async () => {
  vi.resetModules();
  return { ...(await import('../../src/chat/view.js')), ...(await import('../../src/chat/referral-code.js')) };
};
const ctx = (c: Partial<ChatContext> = {}): ChatContext => ({ subject: '렌탈 문의', retries: 0, ...c });
const PERSON = { label: '상담원 연결', answer: { handoff: true } };
const LAST = ' 한 번 더 어려우시면 "상담원 연결"으로 직원이 직접 도와드릴게요.';

describe('the journey’s stages', () => {
  it('greet: how the customer came, seven sources and a person; a welcome back when asked', async () => {
    const { view, PERSON: label } = await load();
    expect(label).toBe('상담원 연결');
    const choices = [
      { label: '검색', answer: { source: 'search' } },
      { label: 'SNS', answer: { source: 'sns' } },
      { label: '추천', answer: { source: 'referral' } },
      { label: '광고', answer: { source: 'advertisement' } },
      { label: '지인 소개', answer: { source: 'acquaintance' } },
      { label: '오프라인', answer: { source: 'offline' } },
      { label: '기타', answer: { source: 'other' } },
      PERSON,
    ];
    const bot = '안녕하세요, maru 맞춤 상담이에요. "렌탈 문의" 건으로 찾아 주셔서 감사합니다. 저희를 어떻게 알게 되셨나요?';
    expect(view('greet', ctx())).toStrictEqual({ stage: 'greet', stageCode: 1, bot, choices });
    expect(view('greet', ctx(), true).bot).toBe(`오랜만이에요! 상담을 처음부터 다시 시작할게요.\n${bot}`);
  });

  it('greet: a subject that names no topic (the page’s "상담") is not quoted', async () => {
    const { view } = await load();
    const plain = '안녕하세요, maru 맞춤 상담이에요. 찾아 주셔서 감사합니다. 저희를 어떻게 알게 되셨나요?';
    const plainSubjects = ['상담', ' 상담 ', '문의', '상담 문의', '문의하기', '상담하기', '일반', '일반 문의', '기타', '맞춤 상담', 'Chat', 'general'];
    for (const subject of plainSubjects) expect(view('greet', ctx({ subject })).bot, subject).toBe(plain);
    expect(view('greet', ctx({ subject: '상담원' })).bot).toContain('"상담원" 건으로');
  });

  it('greet: a referral code is acknowledged by the code alone', async () => {
    const { view } = await load();
    expect(view('greet', ctx({ subject: '상담', referredBy: 'MARU-QGLJ' })).bot).toBe(
      '안녕하세요, maru 맞춤 상담이에요. 찾아 주셔서 감사합니다. 추천 코드를 확인했어요 (MARU-QGLJ). 신청이 접수되면 추천해 주신 분과 함께 혜택을 받으실 수 있어요. 저희를 어떻게 알게 되셨나요?',
    );
  });

  it('need: the four needs by their labels, and a person', async () => {
    const { view } = await load();
    expect(view('need', ctx())).toStrictEqual({
      stage: 'need',
      stageCode: 2,
      bot: '어떤 도움이 필요하세요?',
      choices: [
        { label: '렌탈', answer: { need: 'rental' } },
        { label: '솔루션', answer: { need: 'solution' } },
        { label: '버틀러 서비스', answer: { need: 'butler' } },
        { label: '하드웨어', answer: { need: 'hardware' } },
        PERSON,
      ],
    });
  });

  it('recommend: the category’s product with its particle, and its card', async () => {
    const { view } = await load();
    const choices = [{ label: '신청할게요', answer: { yes: true } }, { label: '다른 상품 볼래요', answer: { yes: false } }, PERSON];
    expect(view('recommend', ctx({ category: 'rental' }))).toStrictEqual({
      stage: 'recommend',
      stageCode: 3,
      bot: '렌탈 상담에는 SOL-702 디지털 화재감지기를 추천드려요. 신청하시겠어요?',
      choices,
      card: { type: 'product', code: 31, name: 'SOL-702 디지털 화재감지기', category: 'rental', categoryLabel: '렌탈', summary: '36개월 렌탈, 설치·점검 포함', monthlyFee: 300_000 },
    });
    const s = view('recommend', ctx({ category: 'solution' }));
    expect(s.bot).toBe('솔루션 상담에는 업무 자동화 솔루션을 추천드려요. 신청하시겠어요?');
    expect(s.card).toMatchObject({ code: 40, categoryLabel: '솔루션', monthlyFee: 830_000 });
  });

  it('collect: the field’s question, a skip for e-mail and memo, the name before the phone question', async () => {
    const { view } = await load();
    expect(view('collect', ctx())).toStrictEqual({ stage: 'collect', stageCode: 4, bot: '신청하시는 분의 성함을 알려 주세요.', choices: [PERSON] });
    expect(view('collect', ctx({ field: 'name', name: '홍길동' })).bot).toBe('신청하시는 분의 성함을 알려 주세요.');
    expect(view('collect', ctx({ field: 'contact', name: '홍길동' }))).toStrictEqual({
      stage: 'collect',
      stageCode: 4,
      bot: '홍길동님, 연락 받으실 전화번호를 알려 주세요.',
      choices: [PERSON],
    });
    expect(view('collect', ctx({ field: 'contact' })).bot).toBe('연락 받으실 전화번호를 알려 주세요.');
    expect(view('collect', ctx({ field: 'email', name: '홍길동' }))).toStrictEqual({
      stage: 'collect',
      stageCode: 4,
      bot: '확인 메일을 받으실 이메일 주소를 알려 주세요. 없으시면 "건너뛰기"를 눌러 주세요.',
      choices: [{ label: '건너뛰기', answer: { skip: true } }, PERSON],
    });
    expect(view('collect', ctx({ field: 'memo' }))).toStrictEqual({
      stage: 'collect',
      stageCode: 4,
      bot: '남기실 요청 사항이 있으면 적어 주세요. 없으시면 "없음"을 눌러 주세요.',
      choices: [{ label: '없음', answer: { skip: true } }, PERSON],
    });
  });

  it('confirm: the summary of what will be registered, 확인 or 수정; the list of what can be changed', async () => {
    const { view } = await load();
    const filled = ctx({ category: 'rental', need: 'rental', name: '홍길동', contact: '010-1234-5678', email: null, memo: null, review: true });
    expect(view('confirm', filled)).toStrictEqual({
      stage: 'collect',
      stageCode: 4,
      bot: '신청 내용을 확인해 주세요. 이대로 접수할까요?',
      choices: [{ label: '확인', answer: { yes: true } }, { label: '수정', answer: { change: true } }, PERSON],
      card: { type: 'summary', name: '홍길동', contact: '010-1234-5678', email: null, product: 'SOL-702 디지털 화재감지기', need: '렌탈', memo: null },
    });
    // typed words for the need, the e-mail, the memo and the referral code are shown as given
    expect(view('confirm', { ...filled, category: 'butler', need: '행정 업무 대행', email: 'a@b.kr', memo: '오전에', referredBy: 'MARU-7' }).card).toStrictEqual({
      type: 'summary',
      name: '홍길동',
      contact: '010-1234-5678',
      email: 'a@b.kr',
      product: '버틀러 케어 서비스',
      need: '버틀러 서비스',
      needText: '행정 업무 대행',
      memo: '오전에',
      referralCode: 'MARU-7',
    });
    expect(view('confirm', { ...filled, editing: true })).toStrictEqual({
      stage: 'collect',
      stageCode: 4,
      bot: '어떤 항목을 고칠까요?',
      choices: [
        { label: '성함', answer: { edit: 'name' } },
        { label: '연락처', answer: { edit: 'contact' } },
        { label: '이메일', answer: { edit: 'email' } },
        { label: '요청 사항', answer: { edit: 'memo' } },
        { label: '상품', answer: { edit: 'product' } },
        { label: '처음부터', answer: { restart: true } },
        { label: '돌아가기', answer: { resume: true } },
        PERSON,
      ],
    });
    // a failed answer: how to confirm, or how to pick from the list
    expect(view('confirm', { ...filled, error: 'confirm_or_change', retries: 1 }).bot.split('\n')[0]).toBe(
      '내용이 맞으면 "확인"을, 고칠 곳이 있으면 "수정"을 눌러 주세요. "네"라고 적으셔도 접수돼요.',
    );
    expect(view('confirm', { ...filled, editing: true, error: 'confirm_or_change', retries: 1 }).bot.split('\n')[0]).toBe(
      '고칠 항목을 아래에서 골라 주세요. 모두 맞으면 "돌아가기"를 눌러 주세요.',
    );
  });

  it('received: the receipt number, the mail sent, and the tracking links of its key', async () => {
    const { view } = await load();
    const choices = [{ label: '진행 상황 보기', answer: { yes: true } }, PERSON];
    expect(view('received', ctx({ receiptNo: 'R-1', accessKey: 'K9', email: 'a@b.io' }))).toStrictEqual({
      stage: 'received',
      stageCode: 5,
      bot: '접수되었어요. 접수번호는 R-1입니다. a@b.io(으)로 확인 메일을 보냈어요. 진행 상황을 보시겠어요?',
      choices,
      card: { type: 'receipt', receiptNo: 'R-1', trackUrl: '/api/subscriptions/R-1?key=K9', pageUrl: '/applicant.html#receipt=R-1&key=K9', accessKey: 'K9' },
    });
    expect(view('received', ctx({ receiptNo: 'R-1', email: null }))).toStrictEqual({
      stage: 'received',
      stageCode: 5,
      bot: '접수되었어요. 접수번호는 R-1입니다. 진행 상황을 보시겠어요?',
      choices,
      card: { type: 'receipt', receiptNo: 'R-1' },
    });
    expect(view('received', ctx())).toStrictEqual({ stage: 'received', stageCode: 5, bot: '접수하고 있어요. 잠시 후 다시 눌러 주세요.', choices });
  });

  it('track: the progress label, or 확인 중 before it is known', async () => {
    const { view } = await load();
    const choices = [{ label: '새로고침', answer: { refresh: true } }, { label: '다음', answer: { yes: true } }, PERSON];
    expect(view('track', ctx({ receiptNo: 'R-1', progress: { status: 'under_review', label: '검토 중' } }))).toStrictEqual({
      stage: 'track',
      stageCode: 6,
      bot: '접수번호 R-1의 진행 상황: 검토 중. 담당자가 확인하면 연락드려요.',
      choices,
      card: { type: 'progress', receiptNo: 'R-1', status: 'under_review', label: '검토 중' },
    });
    expect(view('track', ctx({ receiptNo: 'R-2' }))).toStrictEqual({
      stage: 'track',
      stageCode: 6,
      bot: '접수번호 R-2의 진행 상황: 확인 중. 담당자가 확인하면 연락드려요.',
      choices,
      card: { type: 'progress', receiptNo: 'R-2', status: 'unknown', label: '확인 중' },
    });
  });

  it('upsell: the product’s add-on with its particle, and its card', async () => {
    const { view } = await load();
    expect(view('upsell', ctx({ upsellCode: 31 }))).toStrictEqual({
      stage: 'upsell',
      stageCode: 7,
      bot: 'SOL-702 디지털 화재감지기와 함께 많이 찾으시는 SOL-702 케어 플러스도 있어요. 추가하시겠어요?',
      choices: [{ label: '추가할게요', answer: { yes: true } }, { label: '괜찮아요', answer: { yes: false } }, PERSON],
      card: { type: 'upsell', code: 31, name: 'SOL-702 케어 플러스', baseName: 'SOL-702 디지털 화재감지기', summary: '무상 교체와 분기 점검 추가', monthlyFee: 30_000 },
    });
    expect(view('upsell', ctx({ upsellCode: 40 })).bot).toBe('업무 자동화 솔루션과 함께 많이 찾으시는 업무 자동화 솔루션 운영 지원도 있어요. 추가하시겠어요?');
  });

  it('referral: the offer of a code, after a word on an accepted add-on', async () => {
    const { view } = await load();
    const bot = '지인에게 maru를 추천하시면 두 분 모두 혜택을 드려요. 추천 코드를 받으시겠어요?';
    expect(view('referral', ctx())).toStrictEqual({
      stage: 'referral',
      stageCode: 8,
      bot,
      choices: [{ label: '추천 코드 받기', answer: { yes: true } }, { label: '다음에 할게요', answer: { yes: false } }, PERSON],
    });
    expect(view('referral', ctx({ upsellAccepted: true })).bot).toBe(`추가 신청도 접수했어요. ${bot}`);
    expect(view('referral', ctx({ upsellAccepted: false })).bot).toBe(bot);
  });

  it('sharing: the customer’s referral code when asked for and known, else the plain share card', async () => {
    const { view, referralCode } = await load();
    const choices = [{ label: '처음으로', answer: { restart: true } }, PERSON];
    for (const id of [7, 1]) {
      const code = referralCode(id);
      expect(view('sharing', ctx({ referral: true, customerId: id }))).toStrictEqual({
        stage: 'sharing',
        stageCode: 9,
        bot: `추천 코드는 ${code}입니다. 아래 카드로 공유해 주세요. 상담해 주셔서 감사해요!`,
        choices,
        card: { type: 'share', title: 'maru 상담', text: `추천 코드 ${code}로 상담을 시작하면 두 분 모두 혜택을 받아요.`, url: `/chat?ref=${code}`, referralCode: code },
      });
    }
    const plain = {
      stage: 'sharing',
      stageCode: 9,
      bot: '상담해 주셔서 감사해요! 아래 카드로 maru를 공유해 주세요.',
      choices,
      card: { type: 'share', title: 'maru 상담', text: 'maru에서 렌탈·솔루션·버틀러·하드웨어 상담을 받아 보세요.', url: '/chat' },
    };
    expect(view('sharing', ctx({ referral: true }))).toStrictEqual(plain);
    expect(view('sharing', ctx({ referral: false, customerId: 7 }))).toStrictEqual(plain);
    expect(view('sharing', ctx({ customerId: 7 }))).toStrictEqual(plain);
  });
});

describe('the hand-off', () => {
  it('asks for a phone number, with a way back', async () => {
    const { view } = await load();
    expect(view('handoffContact', ctx())).toStrictEqual({
      stage: 'handoff',
      stageCode: 0,
      bot: '상담원이 전화드릴게요. 연락 받으실 전화번호를 알려 주세요.',
      choices: [{ label: '돌아가기', answer: { resume: true } }],
    });
    expect(view('handoffContact', ctx({ error: 'too_many_tries' })).bot).toBe('여러 번 확인이 어려웠어요. 상담원이 전화드릴게요. 연락 받으실 전화번호를 알려 주세요.');
  });

  it('confirms the callback with its receipt card, or says it is being asked for', async () => {
    const { view } = await load();
    const choices = [{ label: '이어서 진행', answer: { resume: true } }, { label: '처음으로', answer: { restart: true } }];
    expect(view('handoff', ctx({ callbackNo: 'C-1', contact: '010-1234-5678' }))).toStrictEqual({
      stage: 'handoff',
      stageCode: 0,
      bot: '상담원 연결을 요청했어요 (접수번호 C-1). 010-1234-5678(으)로 곧 연락드릴게요.',
      choices,
      card: { type: 'callback', receiptNo: 'C-1' },
    });
    expect(view('handoff', ctx({ callbackNo: 'C-1', contact: '010-1234-5678', error: 'too_many_tries' })).bot).toBe(
      '여러 번 확인이 어려웠어요. 상담원 연결을 요청했어요 (접수번호 C-1). 010-1234-5678(으)로 곧 연락드릴게요.',
    );
    expect(view('handoff', ctx({ error: 'too_many_tries' }))).toStrictEqual({ stage: 'handoff', stageCode: 0, bot: '상담원 연결을 요청하고 있어요.', choices });
  });
});

describe('hints after a failed answer', () => {
  it('say nothing before a failure, or when the error is set but no retry counted', async () => {
    const { view } = await load();
    expect(view('greet', ctx({ error: 'unknown_source', retries: 0 })).bot).not.toContain('\n');
  });

  it('explain the error the first time, and add the way to a person from the second', async () => {
    const { view } = await load();
    const hints: [string, string][] = [
      ['unknown_source', '어떤 경로로 알게 되셨는지 잘 모르겠어요. 아래에서 고르시거나 "네이버 검색", "지인 소개"처럼 적어 주세요.'],
      ['unknown_need', '어떤 도움이 필요하신지 잘 모르겠어요. 렌탈, 솔루션, 버틀러 서비스, 하드웨어 중에서 골라 주세요.'],
      ['yes_or_no', '아래 버튼 중 하나를 눌러 주시거나 "네" 또는 "아니요"로 답해 주세요.'],
      ['restart_only', '상담이 모두 끝났어요. "처음으로"를 누르면 새 상담을 시작해요.'],
      ['invalid_phone', '전화번호를 숫자로 적어 주세요. (예: 010-1234-5678)'],
      ['resume_or_restart', '"이어서 진행" 또는 "처음으로"를 눌러 주세요.'],
    ];
    for (const [error, text] of hints) {
      expect(view('need', ctx({ error, retries: 1 })).bot, error).toBe(`${text}\n어떤 도움이 필요하세요?`);
      expect(view('need', ctx({ error, retries: 2 })).bot, error).toBe(`${text}${LAST}\n어떤 도움이 필요하세요?`);
    }
    expect(view('need', ctx({ error: 'something_else', retries: 1 })).bot).toBe('\n어떤 도움이 필요하세요?');
    expect(view('need', ctx({ error: 'something_else', retries: 5 })).bot).toBe(`${LAST}\n어떤 도움이 필요하세요?`);
  });

  it('explain a refused field by the field', async () => {
    const { view } = await load();
    const fields: [ChatContext['field'], string][] = [
      ['name', '성함은 한글 또는 영문 1~40자로 적어 주세요. (예: 홍길동)'],
      ['contact', '전화번호는 숫자로 적어 주세요. (예: 010-1234-5678, 02-123-4567)'],
      ['email', '이메일 형식이 아니에요. (예: name@example.com) 없으시면 "건너뛰기"를 눌러 주세요.'],
      ['memo', '요청 사항은 500자 이내로 적어 주세요. 없으시면 "없음"을 눌러 주세요.'],
    ];
    for (const [field, text] of fields) expect(view('collect', ctx({ field, error: 'invalid_field', retries: 1 })).bot.split('\n')[0], field).toBe(text);
    expect(view('need', ctx({ error: 'invalid_field', retries: 1 })).bot).toBe('\n어떤 도움이 필요하세요?');
  });

  it('explain another error by its own hint while a field is being asked', async () => {
    const { view } = await load();
    // a hand-off from collect keeps the field: a refused phone there is the phone's hint, not the field's
    expect(view('handoffContact', ctx({ field: 'email', error: 'invalid_phone', retries: 1 })).bot.split('\n')[0]).toBe('전화번호를 숫자로 적어 주세요. (예: 010-1234-5678)');
  });

  it('come before the hand-off’s words too', async () => {
    const { view } = await load();
    const t = '"이어서 진행" 또는 "처음으로"를 눌러 주세요.';
    expect(view('handoff', ctx({ error: 'resume_or_restart', retries: 1 })).bot).toBe(`${t}\n상담원 연결을 요청하고 있어요.`);
    expect(view('handoffContact', ctx({ error: 'invalid_phone', retries: 1 })).bot).toBe('전화번호를 숫자로 적어 주세요. (예: 010-1234-5678)\n상담원이 전화드릴게요. 연락 받으실 전화번호를 알려 주세요.');
    expect(view('handoff', ctx({ error: 'resume_or_restart', retries: 1, callbackNo: 'C', contact: 'P' })).bot).toBe(`${t}\n상담원 연결을 요청했어요 (접수번호 C). P(으)로 곧 연락드릴게요.`);
  });
});

describe("the need in the customer's own words", () => {
  it('is shown only when it says more than the category', async () => {
    const { needText } = await load();
    const { NEED_LABELS } = await import('../../src/chat/catalog.js');
    expect(needText(ctx({ category: 'rental', need: '정수기 두 대' }))).toBe('정수기 두 대');
    expect(needText(ctx({ category: 'rental', need: 'rental' }))).toBeUndefined();
    expect(needText(ctx({ category: 'rental', need: NEED_LABELS.rental }))).toBeUndefined();
    expect(needText(ctx({ need: '정수기 두 대' }))).toBeUndefined();
    expect(needText(ctx({ category: 'rental' }))).toBeUndefined();
    expect(needText(ctx({}))).toBeUndefined();
  });
});

describe('the hint while editing', () => {
  it('names the field of a refused answer, not the list to pick from', async () => {
    const { view } = await load();
    const editing = ctx({ name: '김민지', contact: '010-1234-5678', category: 'rental', need: 'rental', editing: true, field: 'contact', error: 'invalid_field', retries: 1 });
    const first = view('collect', editing).bot.split('\n')[0];
    expect(first).not.toBe('고칠 항목을 아래에서 골라 주세요. 모두 맞으면 "돌아가기"를 눌러 주세요.');
    expect(first).toBe(view('collect', { ...editing, editing: false }).bot.split('\n')[0]);
  });
});
