import { AppError } from '../errors.js';
import type { Guard, RequestContext } from './http.js';

/**
 * Concurrency limits as a route guard (hub.concurrency): at most `max` requests of one kind in
 * flight at once in this process, counted per identity, per address, or for the whole route (every
 * request the guard guards). A request takes a slot when its guards run and gives it back when it
 * ends, however it ends: answered, failed, or its client gone (RequestContext.atEnd).
 *
 * Past the limit, up to `queue` requests wait for a slot in arrival order (a waiting request whose
 * client goes away leaves the queue); the rest are refused at once: 429 `too_many_in_flight` for a
 * per-identity or per-address limit (that client's own doing), 503 `busy` for a route's cap (the
 * server is full), both with Retry-After. The counts are this process's: in-flight work is what a
 * process's memory and threads bear, and a count in the Store would outlive a crashed process.
 */
export interface ConcurrencyOptions {
  /** Requests in flight at once per key. */
  max: number;
  /** What a slot is counted against: the signed-in identity (else the address), the address, or the route. */
  per: 'identity' | 'address' | 'route';
  /** Requests that may wait for a slot (default 0: refused at once). */
  queue?: number;
  /** Seconds the refusal's Retry-After names (default 1). */
  retryAfterS?: number;
  /** The refusal's message (default says how many may run at once). */
  message?: string;
}

interface Pool {
  active: number;
  waiting: (() => void)[];
}

export function concurrency(name: string, opts: ConcurrencyOptions): Guard & { inFlight(key?: string): number } {
  if (!Number.isInteger(opts.max) || opts.max < 1) throw new RangeError('max must be a positive integer');
  if (!['identity', 'address', 'route'].includes(opts.per)) throw new RangeError("per must be 'identity', 'address' or 'route'");
  const queue = opts.queue ?? 0;
  if (!Number.isInteger(queue) || queue < 0) throw new RangeError('queue must be a non-negative integer');
  const retryAfterS = opts.retryAfterS ?? 1;
  if (!Number.isInteger(retryAfterS) || retryAfterS < 1) throw new RangeError('retryAfterS must be a positive integer');
  const pools = new Map<string, Pool>();
  const keyOf = (ctx: RequestContext): string =>
    opts.per === 'route' ? '' : opts.per === 'identity' && ctx.identity ? `id:${ctx.identity.id}` : `ip:${ctx.remoteAddress}`;

  const refuse = () => {
    const details = { limit: opts.max, retry_after_s: retryAfterS };
    const message = opts.message ?? `too many ${name} requests at once: at most ${opts.max}; try again shortly`;
    return opts.per === 'route' ? new AppError('unavailable', 'busy', message, details) : new AppError('rate_limited', 'too_many_in_flight', message, details);
  };

  const guard = (ctx: RequestContext): void | Promise<void> => {
    const key = keyOf(ctx);
    let pool = pools.get(key);
    if (!pool) pools.set(key, (pool = { active: 0, waiting: [] }));
    const p = pool;
    let held = false;
    const release = () => {
      if (!held) return;
      held = false;
      const next = p.waiting.shift();
      if (next) return next(); // the slot passes to the first waiting request
      p.active--;
      if (p.active === 0) pools.delete(key);
    };
    const take = () => {
      held = true;
      if (!ctx.atEnd) throw new Error('hub.concurrency needs a context that reports its end');
      ctx.atEnd(release);
    };
    if (p.active < opts.max) {
      p.active++;
      return take();
    }
    if (p.waiting.length >= queue) throw refuse();
    return new Promise<void>((resolve, reject) => {
      const turn = () => {
        ctx.signal.removeEventListener('abort', gone);
        take();
        resolve();
      };
      const gone = () => {
        const i = p.waiting.indexOf(turn);
        if (i >= 0) p.waiting.splice(i, 1);
        reject(new AppError('invalid', 'aborted', 'the client went away'));
      };
      if (ctx.signal.aborted) return gone();
      ctx.signal.addEventListener('abort', gone, { once: true });
      p.waiting.push(turn);
    });
  };
  return Object.assign(guard, { inFlight: (key = '') => pools.get(key)?.active ?? 0 });
}
