import { el } from '../common/live.js';

interface Demo {
  tickets: { code: string; page_url: string }[];
  accounts: { user: string; roles: string[] }[];
}

// The demo page: links to the seeded tickets and the names of the demo accounts (GET /api/demo).
const $ = (id: string) => document.getElementById(id)!;
try {
  const res = await fetch('/api/demo');
  if (!res.ok) throw new Error(`${res.status}`);
  const d = (await res.json()) as Demo;
  $('tickets').replaceChildren(...d.tickets.map((t) => el('li', {}, el('a', { href: t.page_url }, el('code', {}, t.code)))));
  $('accounts').textContent = d.accounts.map((a) => `${a.user} (${a.roles.join(', ')})`).join(' · ');
} catch (err) {
  $('error').textContent = `데모 정보를 불러오지 못했습니다 · could not load the demo (${(err as Error).message})`;
}
