/**
 * Browsers compile an input's `pattern` with the RegExp `v` flag (HTML standard); a pattern that is
 * not valid there is ignored, so the page's own check silently never runs. Every pattern of every
 * page compiles with `v`, and each still means what its field needs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const WEB = resolve(import.meta.dirname, '../../web');
const pages = readdirSync(WEB, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => join(WEB, d.name, 'index.html'))
  .filter((p) => {
    try {
      readFileSync(p);
      return true;
    } catch {
      return false;
    }
  });

const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
const patterns = pages.flatMap((p) => [...readFileSync(p, 'utf8').matchAll(/\bpattern="([^"]*)"/g)].map((m) => ({ page: p.slice(WEB.length + 1), pattern: unescape(m[1]!) })));

/** What an input with `pattern` accepts: the whole value, as the browser anchors it. */
const accepts = (pattern: string, value: string) => new RegExp(`^(?:${pattern})$`, 'v').test(value);

describe('the pages\' input patterns', () => {
  it('are there to check', () => {
    expect(patterns.length).toBeGreaterThanOrEqual(3);
  });

  it.each(patterns)('$page: $pattern compiles with the v flag', ({ pattern }) => {
    expect(() => new RegExp(`^(?:${pattern})$`, 'v')).not.toThrow();
  });

  it('the account name takes what the service takes and nothing else', () => {
    const user = patterns.find((p) => p.page.startsWith('accounts/'))!.pattern;
    for (const ok of ['kim', 'door-1', 'a.b_c']) expect(accepts(user, ok), ok).toBe(true);
    for (const bad of ['Kim', 'k', '-kim', 'kim lee', 'x'.repeat(33)]) expect(accepts(user, bad), bad).toBe(false);
  });

  it('the seat of a booking takes what the booking route takes and nothing else', () => {
    const seat = patterns.find((p) => p.page.startsWith('shows/'))!.pattern;
    for (const ok of ['A-1', 'B 12', '가열-3', 'R.1_2', 'x'.repeat(32)]) expect(accepts(seat, ok), ok).toBe(true);
    for (const bad of ['-A', ' A', 'A/1', 'x'.repeat(33)]) expect(accepts(seat, bad), bad).toBe(false);
  });
});
