import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import { parseIntakeInput, recordKey, type IntakeService } from '../intake/index.js';
import { mailWrites } from '../mail/index.js';
import type { RentalService } from '../rental/index.js';
import type { ChatIntake, ChatMail } from './service.js';

/**
 * The conversation's view of the intake service and the mail module (the functions src/app.ts
 * gives the ChatService).
 */

/** Progress labels of intake statuses, as the customer reads them. */
export const PROGRESS_LABELS: Record<string, string> = {
  pending: '접수 완료',
  documents_submitted: '서류 제출 완료',
  under_review: '검토 중',
  approved: '승인',
  rejected: '보완 요청',
};

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
/** The record id an idempotency key stands for: `sub_` + 12 base-36 characters of its SHA-256. */
export function idFor(idempotencyKey: string): string {
  const h = createHash('sha256').update(idempotencyKey).digest();
  let s = '';
  for (let i = 0; i < 12; i++) s += ALPHABET[h[i]! % 36];
  return `sub_${s}`;
}

/**
 * A rental application made in the conversation is a rental record like the form's (the partner
 * reviews it, the applicant adds the documents on the applicant page), marked `source: chat`;
 * other receipts are plain intake records.
 */
export function chatIntake(intake: IntakeService, rental: Pick<RentalService, 'submit'>): ChatIntake {
  return {
    async register(input, also) {
      const { idempotencyKey, ...fields } = input;
      const id = idFor(idempotencyKey);
      try {
        if (fields.type === 'rental-ipa') {
          const { application, accessKey } = await rental.submit(parseIntakeInput({ ...fields, applicantType: 'government' }), [], {
            id,
            source: 'chat',
            writes: (r) => also?.(r.receiptNo, recordKey(r.id)) ?? [],
          });
          return { receiptNo: application.receiptNo, accessKey };
        }
        const { record, accessKey } = await intake.register(fields, { id, writes: (r) => also?.(r.receiptNo, recordKey(r.id)) ?? [] });
        return { receiptNo: record.receiptNo, accessKey };
      } catch (err) {
        // the same attempt again (a retry after a lost answer): the first record stands
        if (err instanceof AppError && err.code === 'subscription_exists') {
          const existing = await intake.get(id);
          if (existing) return { receiptNo: existing.receiptNo };
        }
        throw err;
      }
    },
    async track(receiptNo) {
      const record = await intake.byReceipt(receiptNo);
      if (!record) return undefined;
      return { status: record.status, label: PROGRESS_LABELS[record.status] ?? record.status };
    },
    countReceipts: () => intake.count(),
    async recordUpsell(receiptNo, upsell) {
      const record = await intake.byReceipt(receiptNo);
      if (!record) return;
      await intake.modify(record.id, (rec) => ({ record: { ...rec, ext: { ...rec.ext, upsell } }, result: undefined }));
    },
  };
}

export function chatMail(now: () => number): ChatMail {
  return { writes: (id, message, near) => mailWrites(id, message, now(), near) };
}
