import { z } from 'zod';

/**
 * Query-string field schemas. Query values arrive as text: these accept the text form (and, for
 * JSON bodies, the number itself) and refuse anything that is not exactly the kind asked for
 * ("1.5" is not an integer, "" is not a number, "1e3" is not an integer).
 */
export const qInt = (opts: { min?: number; max?: number } = {}) => {
  let n = z.number().int('must be an integer');
  if (opts.min !== undefined) n = n.min(opts.min);
  if (opts.max !== undefined) n = n.max(opts.max);
  return z
    .union([z.number(), z.string().regex(/^-?\d{1,15}$/, 'must be an integer').transform(Number)])
    .pipe(n);
};

/** A decimal number as text or number; kept as given so the service can parse it exactly. */
export const qDecimal = () =>
  z.union([z.number().finite(), z.string().regex(/^-?\d{1,15}(\.\d+)?$/, 'must be a decimal number')]);

/** A single non-empty text value (a repeated key is refused rather than silently picked). */
export const qText = (max = 200) => z.string('must be given once, as text').min(1, 'must not be empty').max(max);
