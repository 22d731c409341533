// A page whose service this hub does not run configured says so, in Korean and English, with the
// settings that configure it, instead of calling routes that would answer 503 (a plain `npm start`
// runs no payment peers: no bank, no SSO, no chain). Imported first by such a page: it reads a
// public answer of the hub (for the wallet, GET /api/token/config), and when the service is not
// configured it replaces the page's content with the message and keeps the page's own script from
// going on (its import never completes), so nothing else is asked of the hub.
import { ApiError, publicApi } from './api.js';
import { el } from './live.js';

interface Need {
  /** The service, in Korean and English. */
  name: [string, string];
  configured: () => Promise<boolean>;
  /** How to configure it, in Korean and English. */
  how: [string, string];
  settings: string[];
}

const NEEDS: Record<string, Need> = {
  '/wallet': {
    name: ['토큰 결제 릴레이', 'token payment relay'],
    configured: async () => {
      // a refusal (the relay is not mounted at all) lets the page say what it says about that
      const config = await publicApi.get('/api/token/config').catch((err: unknown) => (err instanceof ApiError ? undefined : Promise.reject(err)));
      return !config || config.sso_login_url !== null;
    },
    how: [
      '운영에서는 은행(SSO 포함), 체인, 브로커, 가격 제공자의 주소를 아래 설정으로 지정하고 허브를 다시 시작하세요. 시험해 보려면 PAYMENT_PEERS=embedded npm start(허브 안의 모의 서버, 운영용 아님), npm run peers가 출력하는 설정, 또는 데모 데이터까지 넣는 npm run demo를 쓰세요. 자세한 내용은 docs/payment.md에 있습니다.',
      'In production, set the addresses of the bank (with its SSO), the chain, the broker and the price providers with the settings below and start the hub again. To try it out, run PAYMENT_PEERS=embedded npm start (stand-ins inside the hub, not for production), use the settings npm run peers prints, or run npm run demo for demo data too. More in docs/payment.md.',
    ],
    settings: ['BANKING_URL', 'BANKING_WEBHOOK_SECRET', 'SSO_JWKS_URL / SSO_PUBLIC_KEY', 'CHAIN_URL', 'CHAIN_PUBLIC_KEY', 'BROKER_URL', 'PRICE_PROVIDER_URLS'],
  },
};

const need = NEEDS[location.pathname];
// a failed check (network) lets the page go on and say what it says about that
if (need && !(await need.configured().catch(() => true))) {
  const main = document.querySelector('main')!;
  for (const child of [...main.children]) (child as HTMLElement).hidden = true;
  main.prepend(
    el(
      'section',
      { class: 'card not-configured', id: 'not-configured', 'aria-labelledby': 'not-configured-h' },
      el('h2', { id: 'not-configured-h' }, `${need.name[0]}가 설정되어 있지 않습니다 · The ${need.name[1]} is not configured`),
      el('p', { lang: 'ko' }, `이 허브는 ${need.name[0]}를 설정 없이 시작되어 이 페이지를 쓸 수 없습니다. ${need.how[0]}`),
      el('p', { lang: 'en' }, `This hub was started without the ${need.name[1]}, so this page cannot be used. ${need.how[1]}`),
      el('ul', {}, ...need.settings.map((s) => el('li', {}, el('code', {}, s)))),
    ),
  );
  document.body.dataset.notConfigured = location.pathname;
  document.body.dataset.ready = 'true';
  await new Promise<never>(() => undefined);
}
