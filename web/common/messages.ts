/**
 * What an error means to a person, by the shared error shape's `code`: Korean for the pages (their
 * readers), the server's own English message for English readers. A code without a sentence here is
 * told by its status in Korean, the server's message beside it.
 */
export type Lang = 'ko' | 'en';

const KO: Record<string, string> = {
  network: '서버에 연결하지 못했습니다. 네트워크를 확인하고 다시 시도하세요.',
  unauthorized: '로그인이 필요합니다.',
  invalid_token: '로그인이 만료되었습니다. 다시 로그인하세요.',
  invalid_credentials: '아이디 또는 비밀번호가 맞지 않습니다.',
  too_many_attempts: '로그인 시도가 너무 많습니다. 잠시 뒤에 다시 시도하세요.',
  forbidden: '이 작업을 할 권한이 없습니다.',
  rate_limited: '요청이 너무 많습니다. 잠시 뒤에 다시 시도하세요.',
  busy: '지금 처리 중인 요청이 많습니다. 잠시 뒤에 다시 시도하세요.',
  not_ready: '서버가 아직 준비되지 않았습니다. 잠시 뒤에 다시 시도하세요.',
  shutting_down: '서버가 다시 시작하는 중입니다. 잠시 뒤에 다시 시도하세요.',
  store_unavailable: '저장소에 잠시 연결할 수 없습니다. 잠시 뒤에 다시 시도하세요.',
  storage_unavailable: '저장소에 잠시 연결할 수 없습니다. 잠시 뒤에 다시 시도하세요.',
  internal: '서버에서 오류가 났습니다. 잠시 뒤에 다시 시도하세요.',
  not_found: '찾을 수 없습니다.',
  invalid_body: '입력한 내용을 확인하세요.',
  invalid_query: '조회 조건을 확인하세요.',
  invalid_params: '주소가 올바르지 않습니다.',
  invalid_json: '보낸 내용을 읽을 수 없습니다.',
  payload_too_large: '보낸 내용이 너무 큽니다.',
  file_too_large: '파일이 너무 큽니다.',
  unsupported_file_type: '받을 수 없는 파일 형식입니다. PDF, JPG, PNG 파일을 올리세요.',
  unsupported_media_type: '받을 수 없는 형식입니다.',
  infected: '파일에서 악성 코드가 발견되어 받지 않았습니다.',
  file_required: '파일을 하나 골라 주세요.',
  document_encrypted: '암호가 걸린 문서는 받을 수 없습니다.',
  document_drm: 'DRM이 걸린 문서는 받을 수 없습니다.',
  scanner_unavailable: '파일 검사기에 연결할 수 없습니다. 잠시 뒤에 다시 시도하세요.',
  scanner_busy: '파일 검사가 밀려 있습니다. 잠시 뒤에 다시 시도하세요.',
  idempotency_key_reused: '같은 요청 번호로 다른 내용이 이미 처리되었습니다. 새로 고친 뒤 다시 시도하세요.',
  idempotency_in_progress: '같은 요청을 처리하는 중입니다. 잠시 기다리세요.',
  version_conflict: '다른 사람이 먼저 고쳤습니다. 새로 불러온 뒤 다시 시도하세요.',
  // accounts and devices
  account_exists: '이미 있는 아이디입니다.',
  account_not_found: '계정을 찾을 수 없습니다.',
  last_operator: '마지막 운영자 계정은 바꾸거나 지울 수 없습니다.',
  unknown_device: '등록되지 않은 기기입니다.',
  // rental and intake
  subscription_not_found: '접수번호 또는 접근 키가 맞지 않습니다.',
  invalid_key: '접수번호 또는 접근 키가 맞지 않습니다.',
  application_closed: '이미 심사가 끝난 신청서입니다.',
  unknown_document_type: '알 수 없는 서류 종류입니다. 담당자 명함, 고유번호증, 내부결의 중 하나여야 합니다.',
  document_approved: '승인된 서류는 바꿀 수 없습니다.',
  applicant_type_mismatch: '신청 기관 유형과 맞지 않는 항목입니다.',
  // tickets and check-in
  show_not_found: '공연을 찾을 수 없습니다.',
  seat_taken: '이미 예매된 좌석입니다. 다른 좌석을 고르세요.',
  already_redeemed: '이미 입장 처리된 티켓입니다.',
  canceled: '취소된 티켓입니다.',
  cancelled: '취소된 티켓입니다.',
  invalid_ticket: '유효하지 않은 티켓입니다.',
  invalid_time: '입장 가능한 시간이 아닙니다.',
  wrong_list: '이 입구 목록의 티켓이 아닙니다.',
  list_not_found: '입장 목록을 찾을 수 없습니다.',
  unknown_theme: '알 수 없는 테마입니다.',
  cards_full: '더 만들 수 있는 카드가 없습니다.',
  not_revertible: '되돌릴 수 없는 입장 기록입니다.',
  already_reverted: '이미 되돌린 입장 기록입니다.',
  // chat and desk
  session_not_found: '상담을 찾을 수 없습니다. 새로 시작하세요.',
  session_busy: '앞의 메시지를 처리하는 중입니다. 잠시 기다리세요.',
  choice_not_offered: '지금 고를 수 없는 항목입니다.',
  desk_taken: '다른 상담원이 이미 맡은 상담입니다.',
  referral_not_found: '추천 코드를 찾을 수 없습니다.',
  self_referral: '자기 자신을 추천할 수는 없습니다.',
  // coaching
  owner_not_found: '사장님 정보를 찾을 수 없습니다.',
  action_not_found: '오늘의 할 일을 찾을 수 없습니다.',
  duplicate_action: '이미 완료한 할 일입니다.',
  // payments
  insufficient_balance: '잔액이 부족합니다.',
  invalid_amount: '금액이 올바르지 않습니다.',
  unknown_challenge: '알 수 없는 챌린지입니다.',
  challenge_not_funded: '담보가 예치된 챌린지가 아닙니다.',
  peg_unavailable: '시세를 가져올 수 없습니다. 잠시 뒤에 다시 시도하세요.',
  invalid_week: '주 형식이 올바르지 않습니다 (예: 2026-W47).',
  week_not_finished: '아직 끝나지 않은 주입니다.',
  offramp_not_found: '출금 내역을 찾을 수 없습니다.',
  receipt_not_found: '영수증을 찾을 수 없습니다.',
  public_url_not_configured: '허브 주소가 설정되어 있지 않습니다.',
  sso_unavailable: '은행 로그인 서비스에 연결할 수 없습니다.',
  chain_key_not_configured: '체인 공개키가 설정되어 있지 않아 검증할 수 없습니다.',
  tree_head_signature_invalid: '체인 트리 헤드의 서명이 올바르지 않습니다 (위조).',
  tree_head_out_of_order: '체인 트리 헤드가 이전에 검증한 것보다 오래되었습니다.',
  tree_head_inconsistent: '체인 기록이 이전에 검증한 것과 일치하지 않습니다 (기록 변조).',
  challenge_not_found: '챌린지를 찾을 수 없습니다.',
  challenge_active: '이미 진행 중인 챌린지입니다.',
  challenge_not_active: '진행 중인 챌린지가 아닙니다.',
  review_not_found: '심사 건을 찾을 수 없습니다.',
  review_closed: '이미 처리된 심사 건입니다.',
  review_expired: '처리 기한이 지난 심사 건입니다.',
  not_reversible: '되돌릴 수 없는 이체입니다.',
  already_reversed: '이미 되돌린 이체입니다.',
  reversal_of_reversal: '되돌림 이체는 다시 되돌릴 수 없습니다.',
  transfer_not_found: '이체를 찾을 수 없습니다.',
  invalid_period: '기간이 올바르지 않습니다. 시작일은 종료일보다 앞서야 합니다.',
  period_too_long: '기간이 너무 깁니다. 더 짧게 고르세요.',
  banking_not_configured: '은행 연동이 설정되어 있지 않습니다.',
  bank_unavailable: '은행에 연결할 수 없습니다. 잠시 뒤에 다시 시도하세요.',
  chain_not_configured: '체인 연동이 설정되어 있지 않습니다.',
  chain_unavailable: '체인에 연결할 수 없습니다. 잠시 뒤에 다시 시도하세요.',
  // reward
  member_not_found: '회원을 찾을 수 없습니다.',
  zone_not_found: '문화권을 찾을 수 없습니다.',
  zone_full: '문화권 정원이 찼습니다.',
  // trading: data sets, saved runs, alerts
  invalid_dataset: '캔들 파일에 잘못된 줄이 있어 받지 않았습니다. 아래 줄 번호와 문제를 확인하세요.',
  invalid_columns: '캔들 파일의 머리글은 time, open, high, low, close, volume 이어야 합니다.',
  empty_dataset: '캔들 파일이 비어 있습니다.',
  too_few_rows: '캔들이 너무 적습니다. 50개 이상 올리세요.',
  too_many_rows: '캔들이 너무 많습니다. 200,000개까지 올릴 수 있습니다.',
  dataset_limit: '데이터 세트는 20개까지 둘 수 있습니다. 쓰지 않는 것을 지운 뒤 다시 올리세요.',
  dataset_not_found: '데이터 세트를 찾을 수 없습니다.',
  dataset_corrupt: '데이터 세트가 손상되었습니다. 지운 뒤 다시 올리세요.',
  run_not_found: '저장된 실행을 찾을 수 없습니다.',
  alert_not_found: '설정된 알림이 없습니다.',
  private_address: '내부망이나 이 서버 자신의 주소로는 알림을 보낼 수 없습니다. 공개된 주소를 넣으세요.',
  program_not_found: '프로그램을 찾을 수 없습니다.',
  too_many_programs: '프로그램이 너무 많습니다. 쓰지 않는 것을 지운 뒤 다시 만드세요.',
  too_many_jobs: '진행 중인 분석이 너무 많습니다. 잠시 뒤에 다시 시도하세요.',
  // documents: access, share links, comments
  not_owner: '문서 주인이나 운영자만 공유 설정을 바꿀 수 있습니다.',
  read_only: '이 문서는 읽기만 할 수 있습니다.',
  mention_not_reader: '언급한 사람이 이 문서를 읽을 수 없습니다.',
  unknown_document: '문서를 찾을 수 없습니다. 지워졌거나 주소가 잘못되었습니다.',
  unknown_link: '공유 링크를 찾을 수 없습니다.',
  unknown_thread: '댓글을 찾을 수 없습니다.',
  unknown_version: '그 버전을 찾을 수 없습니다.',
  too_many_links: '공유 링크가 너무 많습니다. 쓰지 않는 링크를 거둔 뒤 다시 만드세요.',
  too_many_threads: '댓글 스레드가 너무 많습니다.',
  too_many_replies: '답글이 너무 많습니다.',
  too_many_mentions: '한 댓글에서 언급할 수 있는 사람 수를 넘었습니다.',
  too_many_names: '지정할 수 있는 사람 수를 넘었습니다.',
  not_an_image: '그림 파일이 아닙니다. PNG나 JPG 그림을 넣으세요.',
  unknown_image: '그림을 찾을 수 없습니다.',
  missing_file: '보낼 파일이 없습니다.',
};

const BY_STATUS: Record<number, string> = {
  0: KO.network!,
  400: '요청을 처리할 수 없습니다. 입력한 내용을 확인하세요.',
  401: KO.unauthorized!,
  403: KO.forbidden!,
  404: KO.not_found!,
  409: '지금 상태에서는 할 수 없는 작업입니다.',
  413: KO.payload_too_large!,
  415: KO.unsupported_media_type!,
  429: KO.rate_limited!,
  503: '서비스를 잠시 쓸 수 없습니다. 잠시 뒤에 다시 시도하세요.',
};

/** The message a person reads for an error `code` (with the server's English `message`). */
export function messageFor(code: string, message: string, lang: Lang, status: number): string {
  if (lang === 'en') return code === 'network' ? `The server could not be reached (${message}).` : message;
  const known = KO[code];
  if (known) return known;
  const general = BY_STATUS[status] ?? (status >= 500 ? KO.internal! : BY_STATUS[400]!);
  return `${general} (${code})`;
}

/** Whether a code has its own Korean sentence (tests check the ones the pages meet). */
export const hasKorean = (code: string): boolean => code in KO;
