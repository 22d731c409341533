import { z } from 'zod';
import type { DemoSummary } from './seed.js';
import { demoStops } from './page.js';
import type { DemoSignIn } from './sign-in.js';
import { route, type Hub } from '../hub/declare.js';

/**
 * The demo page (/demo, listed in /pages), what it reads (GET /api/demo), and its signed-in links
 * (src/demo/sign-in.ts): POST /api/demo/sign-in mints a one-time ticket for a demo account for the
 * holder of the tour key (header X-Demo-Key), POST /api/demo/sign-in/exchange trades the ticket for
 * a sign-in token. GET /api/demo lists the stops, the demo ticket links, documents, programs, rental
 * receipts, conversations, coaching owners, the wallet and the accounts' names (never the password
 * or the tour key). Registered only with DEMO=1; what it lists is the demo's own, meant to be opened.
 */

const DEMO_KEY_HEADER = 'x-demo-key';
const token = z.string().regex(/^[A-Za-z0-9_-]{20,64}$/, 'must be a sign-in ticket from the tour');

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type DemoRoutes = ReturnType<typeof registerDemo>;

export function registerDemo(hub: Hub, s: DemoSummary, signIn: DemoSignIn) {
  const getDemo = route({
    method: 'GET',
    path: '/',
    cacheControl: 'no-store',
    handler: () => ({
      show_id: s.show_id,
      tickets: s.tickets.map((code) => ({ code, page_url: `/mticket/${code}` })),
      documents: s.documents.map((slug) => ({ slug, page_url: `/docs#${slug}` })),
      programs: s.programs,
      members: s.members,
      rental: s.rental,
      chat: s.chat,
      coach: s.coach,
      ...(s.wallet ? { wallet: s.wallet } : {}),
      stops: demoStops(s),
      accounts: s.accounts,
    }),
  });
  const postSignIn = route({
    method: 'POST',
    path: '/sign-in',
    summary: 'A one-time sign-in ticket (60 s) for a demo account, for the holder of the tour key (X-Demo-Key, printed at the demo start)',
    guards: [hub.rateLimit('demo-sign-in', { limit: 60, windowMs: 60_000 })],
    body: { schema: z.strictObject({ user: z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be a demo account') }) },
    response: z.object({ ticket: z.string(), user: z.string(), expires_at: z.string() }),
    cacheControl: 'no-store',
    handler: (ctx) => signIn.mint(ctx.headers[DEMO_KEY_HEADER], ctx.body.user),
  });
  const postSignInExchange = route({
    method: 'POST',
    path: '/sign-in/exchange',
    summary: 'Trades a demo sign-in ticket, once and before it expires, for a sign-in token of its demo account',
    guards: [hub.rateLimit('demo-sign-in-exchange', { limit: 60, windowMs: 60_000 })],
    body: { schema: z.strictObject({ ticket: token }) },
    response: z.object({ token: z.string(), user: z.string(), name: z.string(), roles: z.array(z.string()), expires_at: z.string() }),
    cacheControl: 'no-store',
    handler: (ctx) => signIn.exchange(ctx.body.ticket),
  });
  hub.page('/demo', '/demo.html', { title: 'Demo', description: '데모 안내: 서비스마다 카드 한 장, 해 볼 일, 로그인할 계정, 로그인된 링크' });
  return hub.mount('/api/demo', {
    getDemo,
    postSignIn,
    postSignInExchange,
  });
}
