import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { Store } from '../store/port.js';
import type { Guard, RequestContext } from './http.js';

/**
 * Reusable route guards. A guard runs after the request is parsed and validated and before the
 * handler; it throws an AppError to refuse.
 */

export interface RateLimitInfo {
  /** The counted client key (default the remote address). */
  client: string;
  limit: number;
  windowMs: number;
  /** Seconds until the current window ends. */
  retryAfterS: number;
}

export interface RateLimitOptions {
  store: Store;
  clock: Clock;
  /** Names the counter family (a store key segment): different limits never share counts. */
  name: string;
  /** Requests allowed per client and window. */
  limit: number;
  windowMs: number;
  /**
   * Which client a request counts against; default its remote address. Return undefined to let
   * the request through uncounted (e.g. only manual entries count).
   */
  key?: (ctx: RequestContext) => string | undefined;
  /** Called before a refusal is thrown (audit logs); its failure does not change the answer. */
  onLimited?: (ctx: RequestContext, info: RateLimitInfo) => void | Promise<void>;
}

/** Store key of one client's counter in one window. */
export const rateLimitKey = (name: string, client: string, window: number) => `ratelimit:${name}:${window}:${client}`;

/**
 * Fixed-window rate limit, counted in the Store so it holds across every hub process sharing it
 * (Redis) and across restarts (LMDB). Each allowed request adds one to the client's counter of the
 * current window (an atomic read-modify-write; the counter expires after two windows); once the
 * counter reaches `limit`, requests are refused with 429 `rate_limited` and a Retry-After header
 * (seconds to the end of the window) until the window ends. Refused requests do not count, nor do
 * requests the hub could not serve (answered 503: the count is taken back, `ctx.refunds`).
 * Windows follow the injected clock, so tests can move past one.
 */
export function rateLimit(opts: RateLimitOptions): Guard {
  if (!Number.isInteger(opts.limit) || opts.limit < 1) throw new RangeError('limit must be a positive integer');
  if (!Number.isFinite(opts.windowMs) || opts.windowMs < 1) throw new RangeError('windowMs must be positive');
  const keyOf = opts.key ?? ((ctx: RequestContext) => ctx.remoteAddress);
  return async (ctx) => {
    const client = keyOf(ctx);
    if (client === undefined) return;
    const now = opts.clock.now();
    const window = Math.floor(now / opts.windowMs);
    const key = rateLimitKey(opts.name, client, window);
    const allowed = await opts.store.update([key], ([cur]) => {
      const count = typeof cur === 'number' ? cur : 0;
      if (count >= opts.limit) return { writes: [], result: false };
      return { writes: [{ op: 'set', key, value: count + 1, ttlMs: opts.windowMs * 2 }], result: true };
    });
    if (allowed) {
      (ctx.refunds ??= []).push(() => {
        void opts.store
          .update([key], ([cur]) => ({ writes: typeof cur === 'number' && cur > 0 ? [{ op: 'set', key, value: cur - 1, ttlMs: opts.windowMs * 2 }] : [], result: undefined }))
          .catch(() => undefined);
      });
      return;
    }
    const retryAfterS = Math.max(1, Math.ceil(((window + 1) * opts.windowMs - now) / 1000));
    const info: RateLimitInfo = { client, limit: opts.limit, windowMs: opts.windowMs, retryAfterS };
    if (opts.onLimited) {
      try {
        await opts.onLimited(ctx, info);
      } catch {
        // the refusal stands whether or not the hook succeeded
      }
    }
    throw new AppError('rate_limited', 'rate_limited', `too many requests: at most ${opts.limit} per ${opts.windowMs / 1000} s`, {
      limit: opts.limit,
      window_s: opts.windowMs / 1000,
      retry_after_s: retryAfterS,
    });
  };
}
