import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { rateLimit, rateLimitKey, type RateLimitInfo } from '../../src/hub/guards.js';
import type { RequestContext } from '../../src/hub/http.js';
import { CONTENT_SECURITY_POLICY, SECURITY_HEADERS, writeSecurityHeaders } from '../../src/hub/security.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal as refused } from '../support/refusal.js';

// The fixed-window rate limit every bounded route declares (src/hub/guards.ts) and the security
// headers of every answer (src/hub/security.ts).

const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
const open = async () => {
  const s = await openLmdbStore({ path: tempDir('guards-rules') });
  stores.push(s);
  return s;
};
const ctx = (remoteAddress: string) => ({ remoteAddress }) as unknown as RequestContext;
const refusal = (p: unknown) => refused(Promise.resolve(p), { details: true });

describe('rate limits', () => {
  it('let `limit` requests through per client and window, then 429 until the window ends', async () => {
    const store = await open();
    const clock = new ManualClock(60_000 * 1000 + 15_000); // 15 s into a one-minute window
    const guard = rateLimit({ store, clock, name: 't', limit: 3, windowMs: 60_000 });
    for (let i = 0; i < 3; i++) await guard(ctx('1.1.1.1'));
    const e = await refusal(guard(ctx('1.1.1.1')));
    expect([e.status, e.code, e.message]).toEqual([429, 'rate_limited', 'too many requests: at most 3 per 60 s']);
    expect(e.details).toEqual({ limit: 3, window_s: 60, retry_after_s: 45 });
    // refused requests do not count; another client has its own count
    expect(await store.get(rateLimitKey('t', '1.1.1.1', 1000))).toBe(3);
    await guard(ctx('2.2.2.2'));
    clock.advance(44_999);
    expect(((await refusal(guard(ctx('1.1.1.1')))).details as { retry_after_s: number }).retry_after_s).toBe(1);
    clock.advance(1);
    await guard(ctx('1.1.1.1'));
    expect(await store.get(rateLimitKey('t', '1.1.1.1', 1001))).toBe(1);
  });

  it('rounds Retry-After up to whole seconds, at least 1', async () => {
    const store = await open();
    const clock = new ManualClock(10_000 * 7 + 8_500); // 1.5 s before a 10 s window ends
    const guard = rateLimit({ store, clock, name: 'r', limit: 1, windowMs: 10_000 });
    await guard(ctx('a'));
    expect(((await refusal(guard(ctx('a')))).details as { retry_after_s: number }).retry_after_s).toBe(2);
    clock.advance(1_499);
    expect(((await refusal(guard(ctx('a')))).details as { retry_after_s: number }).retry_after_s).toBe(1);
  });

  it('keep separate counts per name, and let an uncounted request through', async () => {
    const store = await open();
    const clock = new ManualClock(0);
    const a = rateLimit({ store, clock, name: 'a', limit: 1, windowMs: 1000 });
    const b = rateLimit({ store, clock, name: 'b', limit: 1, windowMs: 1000, key: (c) => (c.remoteAddress === 'x' ? undefined : c.remoteAddress) });
    await a(ctx('y'));
    await b(ctx('y'));
    await refusal(a(ctx('y')));
    for (let i = 0; i < 5; i++) await b(ctx('x'));
    expect(rateLimitKey('n', 'c', 7)).toBe('ratelimit:n:7:c');
  });

  it('tell the hook before refusing, and refuse even when the hook fails', async () => {
    const store = await open();
    const clock = new ManualClock(0);
    const seen: RateLimitInfo[] = [];
    const guard = rateLimit({ store, clock, name: 'h', limit: 1, windowMs: 2000, onLimited: (_c, info) => void seen.push(info) });
    await guard(ctx('z'));
    await refusal(guard(ctx('z')));
    expect(seen).toEqual([{ client: 'z', limit: 1, windowMs: 2000, retryAfterS: 2 }]);
    const failing = rateLimit({ store, clock, name: 'f', limit: 1, windowMs: 2000, onLimited: () => Promise.reject(new Error('audit down')) });
    await failing(ctx('z'));
    expect((await refusal(failing(ctx('z')))).code).toBe('rate_limited');
  });

  it('refuse a limit or window that is not positive', () => {
    const clock = new ManualClock(0);
    const store = {} as Store;
    expect(() => rateLimit({ store, clock, name: 'x', limit: 0, windowMs: 1 })).toThrow('limit must be a positive integer');
    expect(() => rateLimit({ store, clock, name: 'x', limit: 1.5, windowMs: 1 })).toThrow(RangeError);
    expect(() => rateLimit({ store, clock, name: 'x', limit: 1, windowMs: 0 })).toThrow('windowMs must be positive');
    expect(() => rateLimit({ store, clock, name: 'x', limit: 1, windowMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    expect(() => rateLimit({ store, clock, name: 'x', limit: 1, windowMs: 1 })).not.toThrow();
  });
});

describe('security headers', () => {
  it('allow only this origin, forbid framing and plugins', () => {
    expect(CONTENT_SECURITY_POLICY.split('; ')).toEqual([
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data: blob:",
      "font-src 'self'",
      "connect-src 'self'",
      "media-src 'self' blob:",
      "frame-src 'self' blob:",
      "worker-src 'self'",
      "manifest-src 'self'",
      "object-src 'none'",
      "base-uri 'self'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ]);
  });

  it('are the six headers, each written once', () => {
    const written: [string, string][] = [];
    writeSecurityHeaders({ writeHeader: (k, v) => written.push([k, v]) });
    expect(Object.fromEntries(written)).toEqual({
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'strict-origin-when-cross-origin',
      'x-frame-options': 'DENY',
      'cross-origin-opener-policy': 'same-origin',
      'permissions-policy': 'camera=(self), microphone=(), geolocation=()',
    });
    expect(written).toHaveLength(6);
    expect(Object.keys(SECURITY_HEADERS)).toHaveLength(6);
  });
});
