import { z } from 'zod';

/**
 * Query-string field schemas. Query values arrive as text: these accept the text form (and, for
 * JSON bodies, the number itself) and refuse anything that is not exactly the kind asked for
 * ("1.5" is not an integer, "" is not a number, "1e3" is not an integer), with a message that says
 * what was expected.
 */
export const qInt = (opts: { min?: number; max?: number } = {}) => {
  // the schema's error covers its checks: a fraction is "must be an integer" too
  let n = z.number({ error: 'must be an integer' }).int();
  if (opts.min !== undefined) n = n.min(opts.min, `must be at least ${opts.min}`);
  if (opts.max !== undefined) n = n.max(opts.max, `must be at most ${opts.max}`);
  return z.preprocess((v) => (typeof v === 'string' && /^-?\d{1,15}$/.test(v) ? Number(v) : v), n);
};

/** A decimal number as text (a JSON number is taken as its text), kept as text for exact parsing. */
export const qDecimal = () =>
  z.preprocess(
    (v) => (Number.isFinite(v) ? String(v) : v),
    z
      .string({ error: 'must be a decimal number' })
      .regex(/^-?\d{1,15}(\.\d+)?$/),
  );

/** A single non-empty text value (a repeated key is refused rather than silently picked). */
export const qText = (max = 200) =>
  z
    .string({ error: 'must be given once, as text' })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`);
