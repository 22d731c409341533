import type { DemoSummary } from './seed.js';

/**
 * What the demo tells people: the lines printed at start (one per service: the page to open and who
 * to sign in as) and GET /api/demo, which the guided tour at /demo reads. The password and the tour
 * key (in the tour's address) are printed only, never served.
 */

export interface DemoStop {
  service: string;
  page: string;
  sign_in: string;
}

/** One stop per service, in the order of the tour (the same list the banner prints). */
export function demoStops(s: DemoSummary): DemoStop[] {
  const rejected = s.rental.receipts[3];
  const coach = s.coach[0];
  return [
    { service: 'reward', page: '/', sign_in: '-' },
    { service: 'ticket', page: `/mticket/${s.tickets[0]}`, sign_in: 'demo-staff at /scan' },
    { service: 'trading', page: '/trading', sign_in: 'demo-trader' },
    { service: 'collab', page: '/docs', sign_in: 'demo-editor' },
    { service: 'rental', page: '/partner.html?user=demo-partner', sign_in: `demo-partner; applicant: /applicant.html#receipt=${rejected ?? ''}&key=${s.rental.applicant_key ?? ''}` },
    { service: 'chat', page: `/chat?ref=${s.chat.referral_code ?? ''}`, sign_in: '-' },
    { service: 'coach', page: `/coach#owner=${encodeURIComponent(coach?.header ?? '')}`, sign_in: `X-Service-Owner ${s.coach.map((c) => c.owner).join(', ')}` },
    {
      service: 'payment',
      page: '/wallet',
      sign_in: s.wallet ? `${s.wallet.user} through the bank stand-in: ${s.wallet.sign_in_url}` : 'not seeded: the payment relay runs on configured peers (PAYMENT_PEERS=embedded for the stand-ins)',
    },
  ];
}

/** The lines printed at a demo start: where to look, and how to sign in. */
export function demoBanner(url: string, s: DemoSummary): string {
  const pad = (t: string, n: number) => t + ' '.repeat(Math.max(1, n - t.length));
  return [
    '',
    'maru demo is ready:',
    `  guided tour   ${url}/demo${s.tour_key ? `#key=${s.tour_key}` : ''}   (signed-in links for the demo accounts)`,
    `  pages         ${url}/pages`,
    ...demoStops(s).map((x) => `  ${pad(x.service, 14)}${pad(url + x.page, 48)}sign in: ${x.sign_in}`),
    `  API reference ${url}/reference`,
    `  sign-in       ${s.accounts.map((a) => a.user).join(', ')}; password for this run: ${s.password}`,
    '',
  ].join('\n');
}
