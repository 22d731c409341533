// A page opened from the demo tour's signed-in link (DEMO=1 only, src/demo/sign-in.ts) finds a
// one-time ticket in its address's fragment (#demo-sign-in=…): it takes the ticket out of the address
// at once, trades it for a sign-in token and keeps the token in the page's Session, as the sign-in
// form would. Without a ticket (every page outside the demo) it does nothing and asks nothing.
import { publicApi } from './api.js';
import type { Session } from './auth.js';

export const DEMO_TICKET_PARAM = 'demo-sign-in';

export async function demoSignIn(session: Session): Promise<void> {
  // the rest of the fragment (a document's slug, a coaching owner) stays as it was
  const parts = location.hash.slice(1).split('&');
  const i = parts.findIndex((p) => p.startsWith(`${DEMO_TICKET_PARAM}=`));
  if (i < 0) return;
  const ticket = decodeURIComponent(parts[i]!.slice(DEMO_TICKET_PARAM.length + 1));
  parts.splice(i, 1);
  const rest = parts.join('&');
  history.replaceState(null, '', `${location.pathname}${location.search}${rest ? `#${rest}` : ''}`);
  try {
    session.token = (await publicApi.post('/api/demo/sign-in/exchange', { body: { ticket } })).token;
  } catch {
    // the page shows its sign-in form, as without the link
  }
}
