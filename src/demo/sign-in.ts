import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthService } from '../auth/index.js';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import { codec, F } from '../store/codec.js';
import type { Store } from '../store/port.js';

/**
 * The tour's signed-in links (DEMO=1 only; the demo module is the only one that builds this):
 *
 * - the tour key: random at every demo start, kept in this process's memory only, printed in the
 *   banner as the fragment of the tour's address (`/demo#key=…`), never served by any route;
 * - a sign-in ticket: minted for one of the demo accounts (never `admin` or `partner`) by whoever
 *   presents the tour key, good for one exchange within TICKET_TTL_MS, kept in the store as the
 *   SHA-256 of the ticket (the ticket itself is only in the link's fragment, which browsers send to
 *   no server and no Referer);
 * - the exchange: the page the link opens trades the ticket for an ordinary sign-in token of that
 *   account (AuthService.login with this run's demo password, as the sign-in form would), at most
 *   once: the ticket is deleted in the same atomic update that reads it.
 */

export const TICKET_TTL_MS = 60_000;
const TICKET = (hash: string) => `demo:signin:${hash}`;
/** A sign-in ticket as kept: whose account, until when. */
const tickets = codec<{ user: string; expires: number }>('demo sign-in ticket', { fields: { user: F.str, expires: F.num } });
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export interface DemoSignInOptions {
  store: Store;
  clock: Clock;
  auth: AuthService;
  /** The demo accounts' ids: the only ones a ticket can name. */
  users: readonly string[];
  /** This run's demo password (set by the seeding, before the hub answers the demo routes). */
  password: () => string | undefined;
}

export class DemoSignIn {
  /** The tour key of this run (printed, never stored). */
  readonly key = randomBytes(18).toString('base64url');

  constructor(private readonly opts: DemoSignInOptions) {}

  private keyMatches(given: string | undefined): boolean {
    if (!given) return false;
    const a = Buffer.from(sha256(given));
    const b = Buffer.from(sha256(this.key));
    return timingSafeEqual(a, b);
  }

  /** A one-time ticket for `user`, for the holder of the tour key. */
  async mint(key: string | undefined, user: string): Promise<{ ticket: string; user: string; expires_at: string }> {
    if (!this.keyMatches(key)) throw new AppError('unauthorized', 'invalid_demo_key', 'the tour key is missing or wrong: open the tour from the address the demo printed');
    if (!this.opts.users.includes(user)) throw new AppError('not_found', 'not_a_demo_account', `${user} is not a demo account`, { accounts: this.opts.users });
    const ticket = randomBytes(24).toString('base64url');
    const expires = this.opts.clock.now() + TICKET_TTL_MS;
    await this.opts.store.set(TICKET(sha256(ticket)), tickets.encode({ user, expires }), { ttlMs: TICKET_TTL_MS });
    return { ticket, user, expires_at: new Date(expires).toISOString() };
  }

  /** Trades a ticket, once and before it expires, for a sign-in token of its account. */
  async exchange(ticket: string): Promise<{ token: string; user: string; name: string; roles: string[]; expires_at: string }> {
    const key = TICKET(sha256(ticket));
    const now = this.opts.clock.now();
    const held = await this.opts.store.update([key], ([cur]) => {
      const rec = tickets.decode(cur);
      return { writes: rec ? [{ op: 'del' as const, key }] : [], result: rec && rec.expires > now ? rec : undefined };
    });
    const password = this.opts.password();
    if (!held || !password) throw new AppError('unauthorized', 'invalid_ticket', 'the sign-in link is unknown, used or expired: open it again from the tour');
    const t = await this.opts.auth.login(held.user, password, 'demo-link');
    return { token: t.token, user: t.user, name: t.name, roles: t.roles, expires_at: t.expiresAt };
  }
}
