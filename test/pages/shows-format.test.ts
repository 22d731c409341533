import { describe, expect, it } from 'vitest';
import { resultText } from '../../web/shows/format.js';

/** The back office names every check-in result in Korean, English beside it (web/shows/format.ts). */
describe('web/shows/format.ts: check-in results', () => {
  it('names each result an audit entry can carry, the offline conflict included', () => {
    const results = ['ok', 'already_redeemed', 'canceled', 'invalid', 'malformed', 'rate_limited', 'conflict'];
    for (const r of results) {
      expect(resultText(r), r).toMatch(/[가-힣].* · [a-z]/);
      expect(resultText(r), r).not.toBe(r);
    }
    expect(resultText('conflict')).toBe('충돌(오프라인 중복 입장) · offline conflict');
  });

  it('shows a result it does not know as it came (never blank)', () => {
    expect(resultText('something_new')).toBe('something_new');
  });
});
