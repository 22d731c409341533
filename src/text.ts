import { z } from 'zod';

/**
 * Free text that people name things with (shows, venues, programs, presence, members, zones,
 * gates, accounts). Trimmed, bounded, and refused when it carries what would corrupt a screen or
 * a log: control characters (C0, DEL, C1, including NUL), lone surrogates, and bidirectional
 * overrides and isolates (U+202A-U+202E, U+2066-U+2069), which can make text read backwards.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function unsafeTextReason(s: string): string | undefined {
  if (UNSAFE.test(s)) return 'must not contain control characters or bidirectional overrides';
  if (LONE_SURROGATE.test(s)) return 'must not contain lone surrogates';
  return undefined;
}

/** A one-line name of 1..max characters (after trimming). */
export const label = (max: number) =>
  z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .superRefine((s, ctx) => {
      const why = unsafeTextReason(s);
      if (why) ctx.addIssue({ code: 'custom', message: why });
    });

/** Longer text (remarks, reasons): line breaks and tabs allowed, other control characters not. */
export const note = (max: number) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .superRefine((s, ctx) => {
      const why = unsafeTextReason(s.replace(/[\n\r\t]/g, ' '));
      if (why) ctx.addIssue({ code: 'custom', message: why });
    });
