import { z } from 'zod';
import { AppError } from '../errors.js';
import { unsafeTextReason } from '../text.js';

/**
 * What an intake registration carries: the applicant's fields, common to every intake type.
 * Rental applications, the guided conversation's receipts and plain consultations share it.
 */

/** Known intake types. `rental-*` need documents and `applicantType: "government"` (src/rental). */
export const INTAKE_TYPES = ['rental-ipa', 'rental-db', 'chat', 'consult'] as const;
export type IntakeType = (typeof INTAKE_TYPES)[number];

export const APPLICANT_TYPES = ['government', 'business', 'individual'] as const;
export type ApplicantType = (typeof APPLICANT_TYPES)[number];

const PHONE_RE = /^(?:(01[016789]|02|0[3-6][1-5]|070|050[2-8]?)(\d{3,4})(\d{4})|(1[5-8]\d{2})(\d{4}))$/;

/**
 * A Korean phone number as typed (`010-1234-5678`, `02 123 4567`, `+82 10 1234 5678`), normalised
 * to hyphenated digits; undefined when it is not one.
 */
export function normalisePhone(raw: string): string | undefined {
  let digits = raw.replace(/[\s\-().]/g, '');
  if (digits.startsWith('+82')) digits = `0${digits.slice(3).replace(/^0/, '')}`;
  if (!/^\d{8,12}$/.test(digits)) return undefined;
  const m = PHONE_RE.exec(digits);
  if (!m) return undefined;
  return m[1] ? `${m[1]}-${m[2]}-${m[3]}` : `${m[4]}-${m[5]}`;
}

/**
 * Applicant text: trimmed, bounded, refused when it carries control characters, lone surrogates
 * or bidirectional overrides (src/text.ts; they corrupt the partner's screen, the CSV and the
 * mails); only `remarks` may span lines.
 */
const text = (max: number, multiline = false) =>
  z
    .string()
    .trim()
    .max(max, `must be at most ${max} characters`)
    .superRefine((s, ctx) => {
      const why = unsafeTextReason(multiline ? s.replace(/[\n\r\t]/g, ' ') : s);
      if (why) ctx.addIssue({ code: 'custom', message: why });
    });
const optionalText = (max: number, multiline = false) =>
  z
    .union([text(max, multiline), z.null()])
    .optional()
    .transform((v) => (v ? v : ''));

export const contactPhone = z
  .string({ error: 'is required' })
  .max(40)
  .transform((s, ctx) => {
    const phone = normalisePhone(s);
    if (!phone) {
      ctx.addIssue({ code: 'custom', message: 'must be a Korean phone number such as 010-1234-5678' });
      return z.NEVER;
    }
    return phone;
  });

export const intakeInput = z.strictObject({
  type: z.enum(INTAKE_TYPES, { error: `must be one of ${INTAKE_TYPES.join(', ')}` }),
  applicantType: z.enum(APPLICANT_TYPES, { error: `must be one of ${APPLICANT_TYPES.join(', ')}` }).optional(),
  organization: optionalText(100),
  department: optionalText(100),
  contactName: optionalText(100),
  contactPhone,
  email: z
    .union([z.literal(''), z.null(), z.email({ error: 'must be an e-mail address' }).max(254)])
    .optional()
    .transform((v) => (v ? v.toLowerCase() : null)),
  /** A single choice; the list belongs to the type (src/rental: building types). */
  buildingType: z.string().trim().max(40).optional(),
  remarks: optionalText(2000, true),
});

export type IntakeInputRaw = z.input<typeof intakeInput>;
export type IntakeInput = z.output<typeof intakeInput>;

/** Parses an intake registration; a failure is the hub's usual 400 naming every wrong field. */
export function parseIntakeInput(raw: unknown): IntakeInput {
  const r = intakeInput.safeParse(raw);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => ({ field: i.path.length ? i.path.join('.') : 'body', message: i.message }));
  throw new AppError('invalid', 'invalid_body', `${issues[0]!.field}: ${issues[0]!.message}`, { issues });
}
