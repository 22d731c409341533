import { normalisePhone as intakePhone } from '../intake/index.js';

/**
 * Contact fields the conversation collects: Korean phone numbers (normalised to the hyphenated
 * form) and e-mail addresses. Pure functions; undefined means "not valid".
 */

/**
 * A Korean phone number (010-1234-5678, 02-123-4567, +82 10 …), hyphenated; the intake's rule, after
 * NFKC (full-width digits from phones).
 */
export const normalisePhone = (input: string): string | undefined => intakePhone(input.normalize('NFKC').trim());

/** A practical e-mail check: one @, a dotted domain, no spaces; at most 254 characters. */
export function normaliseEmail(input: string): string | undefined {
  const s = input.normalize('NFKC').trim();
  if (s.length > 254) return undefined;
  if (!/^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/.test(s)) {
    return undefined;
  }
  const [local, domain] = s.split('@') as [string, string];
  if (local.length > 64 || local.startsWith('.') || local.endsWith('.') || local.includes('..')) return undefined;
  return `${local}@${domain.toLowerCase()}`;
}

/** A person's name: 1 to 40 letters (any script), spaces, dots, hyphens, apostrophes. */
export function normaliseName(input: string): string | undefined {
  const s = input.normalize('NFKC').trim().replace(/\s+/g, ' ');
  return /^[\p{L}][\p{L}\p{M} .'-]{0,39}$/u.test(s) ? s : undefined;
}

/** 홍길동 -> 홍*동, 김철 -> 김*, Alexander -> A*******r. */
export function maskName(name: string): string {
  const c = [...name];
  if (c.length <= 1) return '*';
  if (c.length === 2) return `${c[0]}*`;
  return c[0] + '*'.repeat(c.length - 2) + c[c.length - 1];
}

/** 010-1234-5678 -> 010-****-5678. */
export function maskPhone(phone: string): string {
  const parts = phone.split('-');
  if (parts.length === 3) return `${parts[0]}-${'*'.repeat(parts[1]!.length)}-${parts[2]}`;
  return phone.slice(0, -4).replace(/\d/g, '*') + phone.slice(-4);
}
