/**
 * The shareholder sharing view: cumulative receipts (counted from the intake records), the ten
 * related services (the services and pages of this hub) and the ecosystem entry points.
 */

export interface RelatedService {
  id: string;
  name: string;
  description: string;
  /** Where it starts on this hub (a page, or the API route family for services without a page). */
  path: string;
}

export const RELATED_SERVICES: readonly RelatedService[] = Object.freeze([
  { id: 'rental', name: '공공기관 렌탈 신청', description: '36개월 렌탈 신청과 서류 제출', path: '/rental.html' },
  { id: 'partner', name: '렌탈 파트너 심사', description: '신청서와 서류 심사 대시보드', path: '/partner.html' },
  { id: 'chat', name: '맞춤 상담', description: '안내형 상담과 접수, 진행 조회', path: '/chat' },
  { id: 'coach', name: '코칭 콜', description: '오늘의 카드, 비전과 실천 목록', path: '/coach' },
  { id: 'mticket', name: '모바일 티켓', description: 'QR 티켓과 빙고 카드', path: '/mticket/:code' },
  { id: 'scan', name: '입장 스캐너', description: 'QR 스캔과 수동 입력 체크인', path: '/scan' },
  { id: 'trading', name: '자동매매 프로그램', description: '실시간 프로그램과 백테스트 랩', path: '/trading' },
  { id: 'payment', name: '토큰 결제', description: '지갑, 챌린지 구매, 정산', path: '/api/token/wallet' },
  { id: 'reward', name: '리워드 플랜', description: '멤버, 등급, 활동 보상 대시보드', path: '/' },
  { id: 'docs', name: '문서 협업', description: '실시간 공동 편집과 발표 모드', path: '/docs' },
]);

export interface EntryPoint {
  name: string;
  path: string;
}

export const ENTRY_POINTS: readonly EntryPoint[] = Object.freeze([
  { name: '상담 시작', path: '/chat' },
  { name: '추천 코드로 상담 시작', path: '/chat?ref=:code' },
  { name: '추천 코드 조회', path: '/api/referral/:code' },
  { name: '접수 진행 조회', path: '/api/subscriptions/:receiptNo' },
  { name: '렌탈 신청', path: '/rental.html' },
  { name: '전체 페이지 목록', path: '/pages' },
]);

export interface ShareholderView {
  cumulativeReceipts: number;
  services: readonly RelatedService[];
  entryPoints: readonly EntryPoint[];
  at: string;
}

export function shareholderView(cumulativeReceipts: number, nowMs: number): ShareholderView {
  return { cumulativeReceipts, services: RELATED_SERVICES, entryPoints: ENTRY_POINTS, at: new Date(nowMs).toISOString() };
}
