// The wallet's session: the bank's SSO token (kept for the tab), its user, and the pages' one client
// (web/common/api.ts) carrying that token, through which every call of the wallet is typed.
import { createClient } from '../common/api.js';

const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromHash) {
  sessionStorage.setItem('sso', fromHash);
  history.replaceState(null, '', location.pathname);
}
export const token = sessionStorage.getItem('sso');

/** The signed-in user (the token's `sub`), '' when signed out. */
export const user: string = (() => {
  if (!token) return '';
  try {
    const sub = JSON.parse(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))).sub;
    return typeof sub === 'string' ? sub : '';
  } catch {
    return '';
  }
})();

/** The relay's calls with the bank's SSO token. */
export const relay = createClient({ token: () => token ?? undefined });
