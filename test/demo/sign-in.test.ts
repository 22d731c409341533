import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthService } from '../../src/auth/service.js';
import { ManualClock } from '../../src/clock.js';
import { DemoSignIn, TICKET_TTL_MS } from '../../src/demo/sign-in.js';
import { AppError } from '../../src/errors.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

/**
 * The demo tour's sign-in tickets (src/demo/sign-in.ts): only with the run's tour key, only for the
 * demo accounts, one exchange each, none after TICKET_TTL_MS, and none before the demo has a password.
 */
let store: Store;
const clock = new ManualClock(Date.parse('2026-03-02T09:00:00Z'));
let auth: AuthService;
let password: string | undefined = 'demo-password-123';
let signIn: DemoSignIn;

beforeAll(async () => {
  store = await openLmdbStore({ path: tempDir('demo-sign-in') });
  auth = new AuthService({ store, clock, logger: pino({ level: 'silent' }), tokenTtlMs: 3_600_000, partnerTokenTtlMs: 3_600_000, deviceTokenTtlMs: 3_600_000 });
  await auth.createAccount({ user: 'demo-trader', name: '데모 트레이더', roles: ['trader'], password: password! });
  signIn = new DemoSignIn({ store, clock, auth, users: ['demo-trader'], password: () => password });
});
afterAll(() => store.close());

const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return err instanceof AppError ? `${err.kind}:${err.code}` : String(err);
  }
};

describe('demo sign-in tickets', () => {
  it('refuse a missing or wrong key and accounts outside the demo', async () => {
    expect(await code(signIn.mint(undefined, 'demo-trader'))).toBe('unauthorized:invalid_demo_key');
    expect(await code(signIn.mint('', 'demo-trader'))).toBe('unauthorized:invalid_demo_key');
    expect(await code(signIn.mint(`${signIn.key}a`, 'demo-trader'))).toBe('unauthorized:invalid_demo_key');
    expect(await code(signIn.mint(signIn.key, 'admin'))).toBe('not_found:not_a_demo_account');
    // every instance has its own key
    expect(new DemoSignIn({ store, clock, auth, users: [], password: () => password }).key).not.toBe(signIn.key);
  });

  it('trade once for a token of the account, and never after they expire', async () => {
    const a = await signIn.mint(signIn.key, 'demo-trader');
    expect(Date.parse(a.expires_at)).toBe(clock.now() + TICKET_TTL_MS);
    const got = await signIn.exchange(a.ticket);
    expect(got).toMatchObject({ user: 'demo-trader', roles: ['trader'] });
    expect((await auth.authenticate(got.token))?.id).toBe('demo-trader');
    expect(await code(signIn.exchange(a.ticket))).toBe('unauthorized:invalid_ticket');

    const b = await signIn.mint(signIn.key, 'demo-trader');
    clock.advance(TICKET_TTL_MS);
    expect(await code(signIn.exchange(b.ticket))).toBe('unauthorized:invalid_ticket');

    const c = await signIn.mint(signIn.key, 'demo-trader');
    clock.advance(TICKET_TTL_MS - 1);
    expect((await signIn.exchange(c.ticket)).user).toBe('demo-trader');
  });

  it('sign in no one before the demo has set its password', async () => {
    const t = await signIn.mint(signIn.key, 'demo-trader');
    password = undefined;
    expect(await code(signIn.exchange(t.ticket))).toBe('unauthorized:invalid_ticket');
    password = 'demo-password-123';
  });
});
