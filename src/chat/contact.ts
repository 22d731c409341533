/**
 * Contact fields the conversation collects: Korean phone numbers (normalised to the hyphenated
 * form) and e-mail addresses. Pure functions; undefined means "not valid".
 */

/** 010-1234-5678, 02-123-4567, 031-1234-5678, 070-1234-5678, 1588-1234; "+82 10 …" and "82-10-…" too. */
export function normalisePhone(input: string): string | undefined {
  const raw = input.normalize('NFKC').trim();
  if (!/^[+\d\s().-]{7,24}$/.test(raw)) return undefined;
  let d = raw.replace(/\D/g, '');
  if (raw.startsWith('+82') || (d.startsWith('82') && d.length >= 11)) d = '0' + d.slice(2).replace(/^0/, '');
  let m: RegExpMatchArray | null;
  if ((m = d.match(/^(01[016789])(\d{3,4})(\d{4})$/))) return `${m[1]}-${m[2]}-${m[3]}`;
  if ((m = d.match(/^(02)(\d{3,4})(\d{4})$/))) return `${m[1]}-${m[2]}-${m[3]}`;
  if ((m = d.match(/^(0[3-6][1-5]|070|050\d)(\d{3,4})(\d{4})$/))) return `${m[1]}-${m[2]}-${m[3]}`;
  if ((m = d.match(/^(1[5-9]\d{2})(\d{4})$/))) return `${m[1]}-${m[2]}`;
  return undefined;
}

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
