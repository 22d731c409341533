import { unsafeTextReason } from '../text.js';
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { isPublicKey } from './signing.js';
import { UNITS_PER_WORK_MONTH, V_MAX, V_MIN, parseCenti } from './plan.js';

/**
 * Input rules of the reward service. The service checks every input itself (the routes validate
 * too and may reuse these schemas). A refusal is a 400 whose code names the field:
 * invalid_id, invalid_kc, invalid_v, invalid_amount, invalid_name, invalid_zone, invalid_country,
 * invalid_lang, invalid_public_key.
 */

/** 1..64 characters (code points) after trimming, no control characters. */
export const displayName = z
  .string()
  .transform((s) => s.normalize('NFC').trim())
  .refine((s) => {
    const n = [...s].length;
    return n >= 1 && n <= 64;
  }, 'must be 1 to 64 characters')
  .refine((s) => unsafeTextReason(s) === undefined, 'must not contain control characters, lone surrogates or bidirectional overrides');

export const memberIdSchema = z.string().min(1).max(64);

export const workSchema = z.object({
  id: memberIdSchema,
  kc: z.number().int().min(1).max(UNITS_PER_WORK_MONTH),
  v: z.number().int().min(V_MIN).max(V_MAX),
});

/** amt: RU amount > 0 with at most 2 decimals (number or decimal string); parsed into hundredths. */
export const amountSchema = z
  .union([z.number(), z.string()])
  .transform((a, ctx) => {
    const c = parseCenti(a);
    if (c === undefined || c <= 0) {
      ctx.addIssue({ code: 'custom', message: 'must be a number above 0 with at most 2 decimals' });
      return z.NEVER;
    }
    return c;
  });

export const exchangeSchema = z.object({ id: memberIdSchema, amt: amountSchema });

export const cultureSchema = z.object({
  country: z.string().regex(/^[A-Z]{2}$/, 'ISO 3166-1 alpha-2, upper case'),
  lang: z.string().regex(/^[a-z]{2}$/, 'ISO 639-1, lower case'),
  name: displayName,
});

export const createMemberSchema = z.object({
  name: displayName,
  zone: z.string().min(1).max(200),
  public_key: z
    .string()
    .max(512)
    .refine(isPublicKey, 'must be an Ed25519 public key: base64url of its 32 raw bytes')
    .optional(),
});

const FIELD_CODES: Record<string, string> = { amt: 'invalid_amount' };

/** Parses `input` with `schema`, or throws a 400 naming the first failing field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = String(issue.path[0] ?? 'input');
  const code = FIELD_CODES[field] ?? `invalid_${field}`;
  throw badRequest(code, `${field}: ${issue.message}`, {
    field,
    issues: r.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
  });
}
