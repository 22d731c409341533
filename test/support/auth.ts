import { call } from './http.js';

/** The operator password tests start hubs with (`ADMIN_PASSWORD: TEST_ADMIN_PASSWORD`). */
export const TEST_ADMIN_PASSWORD = 'test-admin-password';
/** The rental partner password tests start hubs with (`PARTNER_PASSWORD: TEST_PARTNER_PASSWORD`). */
export const TEST_PARTNER_PASSWORD = 'test-partner-password';

/** Hub settings that make the admin and partner passwords known to a test. */
export const AUTH_TEST_ENV = { ADMIN_PASSWORD: TEST_ADMIN_PASSWORD, PARTNER_PASSWORD: TEST_PARTNER_PASSWORD } as const;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export { bearer };

/** Logs in and returns the token; fails the test on anything but 200. */
export async function login(base: string, user: string, password: string): Promise<string> {
  const r = await call(base, 'POST', '/api/auth/login', { user, password });
  if (r.status !== 200) throw new Error(`login of ${user} failed: ${r.status} ${r.text}`);
  return r.body.token as string;
}

let serial = 0;

/**
 * A token of a fresh account holding `roles`: the operator creates the account, then it logs in.
 * The hub must have been started with AUTH_TEST_ENV.
 */
export async function signIn(base: string, roles: string[], user = `u${process.pid}x${++serial}`): Promise<string> {
  const admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
  const password = `pw-${user}-secret`;
  const r = await call(base, 'POST', '/api/auth/accounts', { user, password, roles }, bearer(admin));
  if (r.status !== 201) throw new Error(`creating ${user} failed: ${r.status} ${r.text}`);
  return login(base, user, password);
}

/** A scanner device token for a gate, issued by a fresh staff account. */
export async function deviceToken(base: string, gate = 'A', name = 'scanner-1'): Promise<string> {
  const staff = await signIn(base, ['staff']);
  const r = await call(base, 'POST', '/api/auth/devices', { gate, name }, bearer(staff));
  if (r.status !== 201) throw new Error(`device token failed: ${r.status} ${r.text}`);
  return r.body.token as string;
}
