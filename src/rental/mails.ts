import type { SubscriptionRecord } from '../intake/index.js';
import type { MailMessage } from '../mail/index.js';
import { DOC_LABELS, isDocType } from './catalog.js';

/** The applicant's mails (Korean): receipt on submission, and the decision. */

/** The applicant's page for a receipt (the access key is typed there, or kept from the receipt's link). */
export const applicantPage = (receiptNo: string, baseUrl = '') => `${baseUrl.replace(/\/+$/, '')}/applicant.html#receipt=${receiptNo}`;

const won = (n: number) => `${n.toLocaleString('ko-KR')}원`;

export function receiptMail(rec: SubscriptionRecord, baseUrl = ''): MailMessage {
  const x = rec.ext as { product?: { code: string; name: string }; monthlyFee?: number; termMonths?: number; totalFee?: number };
  const lines = [
    `${rec.contactName || '고객'}님, 신청이 접수되었습니다.`,
    '',
    `접수번호: ${rec.receiptNo}`,
  ];
  if (x.product) {
    lines.push(`상품: ${x.product.code} ${x.product.name}`);
    lines.push(`월 렌탈료: ${won(x.monthlyFee!)} × ${x.termMonths}개월 = ${won(x.totalFee!)}`);
  }
  lines.push('', '진행 상황은 접수번호와 접수 시 받은 조회 키로 확인할 수 있습니다.', `신청 조회: ${applicantPage(rec.receiptNo, baseUrl)}`);
  return { to: rec.email!, subject: `[maru] 접수 완료 (${rec.receiptNo})`, text: lines.join('\n') };
}

export function decisionMail(rec: SubscriptionRecord, status: 'approved' | 'rejected', baseUrl = ''): MailMessage {
  const docs = (rec.ext as { documents?: Record<string, { check: string | null; reason: string | null } | null> }).documents ?? {};
  const reasons = Object.entries(docs)
    .filter(([, d]) => d?.check === 'rejected')
    .map(([k, d]) => `- ${isDocType(k) ? DOC_LABELS[k] : k}: ${d!.reason ?? ''}`);
  const text =
    status === 'approved'
      ? `${rec.contactName || '고객'}님, 렌탈 신청(${rec.receiptNo})이 승인되었습니다.`
      : [`${rec.contactName || '고객'}님, 렌탈 신청(${rec.receiptNo})의 서류가 반려되었습니다.`, '', ...reasons, '', '반려된 서류를 아래 신청 조회 화면에서 다시 올려 주시면 검토를 이어 갑니다 (접수번호와 조회 키로 엽니다).', `신청 조회: ${applicantPage(rec.receiptNo, baseUrl)}`].join('\n');
  return { to: rec.email!, subject: `[maru] 렌탈 신청 ${status === 'approved' ? '승인' : '서류 반려'} (${rec.receiptNo})`, text };
}
