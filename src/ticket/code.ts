import { randomInt } from 'node:crypto';

/**
 * Ticket codes: "TK-" followed by 8 characters drawn with crypto.randomInt (unbiased) from an
 * alphabet without look-alike characters: the digits 2-9 and the capital letters without I, L and
 * O (0/O, 1/I/L cannot be confused). 31 symbols: 31^8 ≈ 8.5e11 codes, log2 ≈ 39.6 bits.
 */
export const CODE_ALPHABET = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';
export const CODE_PREFIX = 'TK-';
export const CODE_LENGTH = 8;
export const CODE_BITS = +(CODE_LENGTH * Math.log2(CODE_ALPHABET.length)).toFixed(1);

const CODE_RE = new RegExp(`^${CODE_PREFIX}[${CODE_ALPHABET}]{${CODE_LENGTH}}$`);
/** Finds a code inside scanned text (a bare code, or a URL ending in one). */
const CODE_IN_TEXT = new RegExp(`TK-[${CODE_ALPHABET}]{${CODE_LENGTH}}(?![${CODE_ALPHABET}])`);

export function generateCode(): string {
  let s = CODE_PREFIX;
  for (let i = 0; i < CODE_LENGTH; i++) s += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return s;
}

/**
 * Normalises what a person typed or a scanner read: trims, upper-cases, drops inner spaces, adds
 * the "TK-" prefix when only the 8 characters were typed (also "TK" without the hyphen). Returns
 * the canonical code, or undefined when it is not a well-formed code.
 */
export function parseCode(input: string): string | undefined {
  if (typeof input !== 'string' || input.length > 64) return undefined;
  let s = input.trim().toUpperCase().replace(/\s+/g, '');
  if (/^TK[^-]/.test(s) && s.length === 2 + CODE_LENGTH) s = `${CODE_PREFIX}${s.slice(2)}`;
  else if (s.length === CODE_LENGTH && !s.startsWith('TK-')) s = CODE_PREFIX + s;
  return CODE_RE.test(s) ? s : undefined;
}

export const isCode = (s: string): boolean => CODE_RE.test(s);

/** The first ticket code inside decoded QR text, or undefined. */
export function codeInText(text: string): string | undefined {
  return CODE_IN_TEXT.exec(text.toUpperCase())?.[0];
}
