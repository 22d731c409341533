/**
 * The plan charter: nine principles. The document states principle 9 only; principles 1 to 8 are
 * supplied by the operator (REWARD_CHARTER_FILE: a JSON array of 8 strings) and are reported as not
 * configured otherwise. Nothing here invents a principle.
 */

export const PRINCIPLE_9 =
  'Three-fold creation, one-fold payment: each unit of work creates three times the paid value; the member receives 1x, the ecosystem ledger receives 1x, the reserve pool receives 1x.';

export interface Principle {
  number: number;
  text: string | null;
  configured: boolean;
  source: 'document' | 'operator' | 'not configured';
  [key: string]: string | number | boolean | null;
}

/** Checks an operator charter: exactly 8 non-empty strings (principles 1 to 8, in order). */
export function parseCharter(value: unknown): string[] {
  if (!Array.isArray(value) || value.length !== 8) {
    throw new Error('reward charter must be a JSON array of exactly 8 strings (principles 1 to 8)');
  }
  return value.map((t, i) => {
    if (typeof t !== 'string' || t.trim() === '') {
      throw new Error(`reward charter: principle ${i + 1} must be a non-empty string`);
    }
    return t.trim();
  });
}

export function principles(charter: readonly string[] | undefined): Principle[] {
  const out: Principle[] = [];
  for (let i = 0; i < 8; i++) {
    const text = charter?.[i];
    out.push(
      text === undefined
        ? { number: i + 1, text: null, configured: false, source: 'not configured' }
        : { number: i + 1, text, configured: true, source: 'operator' },
    );
  }
  out.push({ number: 9, text: PRINCIPLE_9, configured: true, source: 'document' });
  return out;
}
