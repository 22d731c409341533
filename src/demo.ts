import { randomBytes } from 'node:crypto';
import type { AuthService, Role } from './auth/service.js';
import type { CollabService } from './collab/service.js';
import { AppError } from './errors.js';
import type { Hub } from './hub/index.js';
import type { RewardService } from './reward/service.js';
import type { Json, Store } from './store/port.js';
import type { TicketService } from './ticket/service.js';
import { settingsSchema } from './trading/engine.js';
import type { ProgramService } from './trading/programs.js';
import { strategyParams, type StrategyId } from './trading/strategies.js';
import type { SymbolId } from './trading/symbols.js';

/**
 * DEMO=1 (or `npm run demo`): seeds a show with bookings, reward members with credited work,
 * documents with history and running trading programs, all through the services, and says where to
 * look. Idempotent: what was seeded is remembered under one key (`demo:state`, the ids the services
 * gave back), and a second start checks each part through its service and seeds only what is
 * missing. The demo accounts get a fresh random password at every demo start (printed, never stored
 * in clear). Nothing here runs without DEMO=1.
 */

export interface DemoParts {
  store: Store;
  auth: AuthService;
  tickets: TicketService;
  reward: RewardService;
  collab: CollabService;
  programs: ProgramService;
}

export interface DemoState {
  show_id?: string;
  tickets?: string[];
  members?: string[];
  programs?: string[];
}

export interface DemoSummary {
  password: string;
  accounts: { user: string; roles: Role[] }[];
  show_id: string;
  tickets: string[];
  members: string[];
  documents: string[];
  programs: string[];
}

const STATE_KEY = 'demo:state';
export const DEMO_ACCOUNTS: { user: string; name: string; roles: Role[] }[] = [
  { user: 'demo-staff', name: '입장 도우미', roles: ['staff'] },
  { user: 'demo-editor', name: '문서 편집자', roles: ['editor'] },
  { user: 'demo-trader', name: '데모 트레이더', roles: ['trader'] },
];
const SEATS: [string, string | undefined][] = [
  ['A-1', '김마루'],
  ['A-2', '이하늘'],
  ['A-3', '박바다'],
  ['B-1', '최가람'],
  ['B-2', undefined],
];
const DOCS: { slug: string; title: string; category: string; versions: string[] }[] = [
  {
    slug: 'welcome',
    title: '환영합니다',
    category: 'guide',
    versions: [
      '# 환영합니다\n\nmaru 문서 공간입니다.',
      '# 환영합니다\n\nmaru 문서 공간입니다. 누구나 함께 고칠 수 있습니다.',
      '# 환영합니다\n\nmaru 문서 공간입니다. 누구나 함께 고칠 수 있습니다.\n\n- 검색: 위의 검색 칸\n- 이력: 문서마다 버전 목록',
    ],
  },
  {
    slug: 'door-checklist',
    title: '입장 안내 체크리스트',
    category: 'ops',
    versions: [
      '# 입장 안내\n\n1. 스캐너 켜기',
      '# 입장 안내\n\n1. 스캐너 켜기\n2. 게이트 이름 확인\n3. 카메라가 안 되면 코드 직접 입력',
    ],
  },
];
const PROGRAMS: { name: string; strategy: StrategyId; symbol: SymbolId }[] = [
  { name: 'ES 이동평균 교차', strategy: 'ema_cross', symbol: 'ES' },
  { name: 'GC 돌파', strategy: 'breakout', symbol: 'GC' },
];

export async function seedDemo(parts: DemoParts): Promise<DemoSummary> {
  const { store, auth, tickets, reward, collab, programs } = parts;
  const state = ((await store.get<Json>(STATE_KEY)) ?? {}) as DemoState;
  const save = () => store.set(STATE_KEY, state as unknown as Json);

  // accounts: created once, a fresh password at every demo start
  const password = randomBytes(9).toString('base64url');
  for (const a of DEMO_ACCOUNTS) {
    if (await exists(() => auth.account(a.user))) await auth.updateAccount(a.user, { password, disabled: false });
    else await auth.createAccount({ ...a, password });
  }

  // a show with bookings (one of them already checked in at the main gate)
  if (!state.show_id || !(await exists(() => tickets.show(state.show_id!)))) {
    const date = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
    const show = await tickets.createShow({ name: '마루 데모 콘서트', venue: '올림픽홀', date });
    state.show_id = show.id;
    state.tickets = [];
    await save();
  }
  const codes = (state.tickets ??= []);
  for (const [seat, holder] of SEATS.slice(codes.length)) {
    const t = await tickets.book({ show_id: state.show_id, seat, amount_paid: 88_000, holder });
    codes.push(t.code);
    await save();
    if (seat === 'A-3') await tickets.checkInByCode(t.code, { scanner: 'demo-gate-1', gate: '정문', source: 'api' });
  }

  // reward members with credited work
  const zone = await reward.culture({ country: 'KR', lang: 'ko', name: '마루 데모 마을' });
  const members = (state.members ??= []);
  const wanted = [
    { name: '한결', kc: 3, v: 100 },
    { name: '누리', kc: 2, v: 150 },
    { name: '다온', kc: 1, v: 120 },
  ];
  for (const m of wanted.slice(members.length)) {
    const rec = await reward.createMember({ name: m.name, zone: zone.id });
    members.push(rec.id);
    await save();
    await reward.work({ id: rec.id, kc: m.kc, v: m.v });
  }

  // documents with history (every version a save through the service)
  for (const d of DOCS) {
    if (await collab.find(d.slug)) continue;
    for (const content of d.versions) await collab.save({ slug: d.slug, content, title: d.title, category: d.category, author: 'demo-editor' });
  }

  // trading programs on the (accelerated) market, owned by the demo trader, running
  const caller = { id: 'demo-trader', operator: false };
  const ids = (state.programs ??= []);
  for (let i = 0; i < PROGRAMS.length; i++) {
    if (ids[i] && (await exists(() => programs.get(ids[i]!)))) continue;
    const p = PROGRAMS[i]!;
    const created = await programs.create(
      { name: p.name, strategy: p.strategy, symbol: p.symbol, params: strategyParams(p.strategy, {}), settings: settingsSchema.parse({}) },
      caller,
    );
    ids[i] = created.id;
    await save();
    await programs.move(created.id, 'start', caller);
  }

  return {
    password,
    accounts: DEMO_ACCOUNTS.map(({ user, roles }) => ({ user, roles })),
    show_id: state.show_id,
    tickets: [...codes],
    members: [...members],
    documents: DOCS.map((d) => d.slug),
    programs: [...ids],
  };
}

/** The lines printed at a demo start: where to look, and how to sign in. */
export function demoBanner(url: string, s: DemoSummary): string {
  return [
    '',
    'maru demo is ready:',
    `  pages         ${url}/pages`,
    `  demo page     ${url}/demo`,
    `  a ticket      ${url}/mticket/${s.tickets[0]}`,
    `  door scanner  ${url}/scan            (sign in as demo-staff)`,
    `  documents     ${url}/docs            (sign in as demo-editor)`,
    `  trading       ${url}/trading         (sign in as demo-trader)`,
    `  reward        ${url}/`,
    `  API reference ${url}/reference`,
    `  sign-in       ${s.accounts.map((a) => a.user).join(', ')}; password for this run: ${s.password}`,
    '',
  ].join('\n');
}

async function exists(get: () => Promise<unknown>): Promise<boolean> {
  try {
    await get();
    return true;
  } catch (err) {
    if (err instanceof AppError && err.kind === 'not_found') return false;
    throw err;
  }
}

/**
 * The demo page (/demo, listed in /pages) and what it reads (GET /api/demo): the demo ticket links,
 * the documents, the programs and the accounts' names (never the password). Registered only with
 * DEMO=1; the ticket codes it lists are the demo's own, meant to be opened.
 */
export function registerDemo(hub: Hub, s: DemoSummary): void {
  hub.route({
    method: 'GET',
    path: '/api/demo',
    cacheControl: 'no-store',
    handler: () => ({
      show_id: s.show_id,
      tickets: s.tickets.map((code) => ({ code, page_url: `/mticket/${code}` })),
      documents: s.documents.map((slug) => ({ slug, page_url: `/docs#${slug}` })),
      programs: s.programs,
      members: s.members,
      accounts: s.accounts,
    }),
  });
  hub.page('/demo', '/demo.html', { title: 'Demo', description: 'The seeded demo: a ticket to open, the door scanner, documents, trading programs and the sign-in names' });
}
