import { createHash } from 'node:crypto';

/**
 * Zone identity. Two registrations name the same zone when country, lang and the normalised name
 * agree (NFKC, trimmed, inner whitespace collapsed to one space, lower-cased).
 *
 * Id = `${country}-${lang}-${slug}`:
 * - a normalised name of only a-z, 0-9 and spaces: slug = the name with spaces as '-'
 *   ("Seoul Arts" -> KR-ko-seoul-arts);
 * - anything else (Korean, accents, punctuation): slug = its ASCII letters/digits joined by '-'
 *   (or "zone" when there are none), then '_' and the first 12 hex digits of the SHA-256 of the
 *   normalised name ("서울 문화" -> KR-ko-zone_<12 hex>, "Café Seoul" -> FR-fr-caf-seoul_<12 hex>).
 * The id only holds [A-Za-z0-9_-] (URL-safe without escaping); '_' never occurs in a plain slug, so
 * a hashed id cannot be claimed by another name's plain slug. The id is stable: it depends only on
 * the normalised name.
 */
export function normaliseZoneName(name: string): string {
  return name.normalize('NFKC').trim().replace(/\s+/gu, ' ').toLowerCase();
}

export function zoneId(country: string, lang: string, name: string): string {
  const norm = normaliseZoneName(name);
  if (/^[a-z0-9 ]+$/.test(norm)) return `${country}-${lang}-${norm.replace(/ /g, '-')}`;
  const ascii = norm
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
  const hash = createHash('sha256').update(norm, 'utf8').digest('hex').slice(0, 12);
  return `${country}-${lang}-${ascii || 'zone'}_${hash}`;
}
