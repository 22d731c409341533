import { randomBytes } from 'node:crypto';
import type { AuthService, Role } from '../auth/index.js';
import type { BlobStore } from '../blobs/index.js';
import type { ChatService } from '../chat/index.js';
import type { CoachService } from '../coach/index.js';
import type { CollabService } from '../collab/index.js';
import { AppError } from '../errors.js';
import { seedRental, type RentalDemoState } from './rental.js';
import { seedChat, seedCoach, type ChatDemoState } from './talk.js';
import { seedWallet, type WalletDemo, type WalletDemoState } from './wallet.js';
import type { Payment } from '../payment/index.js';
import type { RentalService } from '../rental/index.js';
import type { RewardService } from '../reward/index.js';
import { codec, F, optional } from '../store/codec.js';
import type { Json, Store } from '../store/port.js';
import type { TicketService } from '../ticket/index.js';
import { settingsSchema, type ProgramService, strategyParams, type StrategyId, type SymbolId } from '../trading/index.js';

/**
 * DEMO=1 (or `npm run demo`): seeds all eight services through their own methods (a show with
 * bookings, reward members with credited work, documents with history, running trading programs,
 * rental applications in every status with their files and checks (src/demo/rental.ts),
 * conversations and coaching owners (src/demo/talk.ts), a wallet with a bought challenge and
 * two weekly payouts, one paid and one held for review (src/demo/wallet.ts, src/demo/payouts.ts)),
 * and says where to look (src/demo/page.ts). Idempotent: what was seeded is remembered under one key (`demo:state`, the ids the services
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
  rental: RentalService;
  blobs: BlobStore;
  chat: ChatService;
  coach: CoachService;
  coachSecret?: string;
  payment: Payment;
}

export interface DemoState {
  show_id?: string;
  tickets?: string[];
  members?: string[];
  programs?: string[];
  rental?: RentalDemoState;
  chat?: ChatDemoState;
  wallet?: WalletDemoState;
}

const optStrs = optional((v) => Array.isArray(v) && v.every(F.str));
/** What the demo made, kept so a restart finds it again instead of making it twice. */
export const demoStates = codec<DemoState>('demo state', {
  fields: { show_id: optional(F.str), tickets: optStrs, members: optStrs, programs: optStrs, rental: optional(F.obj), chat: optional(F.obj), wallet: optional(F.obj) },
});

export interface DemoSummary {
  password: string;
  /** The tour key of this run (src/demo/sign-in.ts): printed in the tour's address, never served. */
  tour_key?: string;
  accounts: { user: string; roles: Role[] }[];
  show_id: string;
  tickets: string[];
  members: string[];
  documents: string[];
  programs: string[];
  rental: RentalDemoState;
  chat: ChatDemoState;
  coach: { owner: string; header: string }[];
  /** Absent when the payment relay runs on configured (not embedded) peers. */
  wallet?: WalletDemo;
}

const STATE_KEY = 'demo:state';
export const DEMO_ACCOUNTS: { user: string; name: string; roles: Role[] }[] = [
  { user: 'demo-staff', name: '입장 도우미', roles: ['staff'] },
  { user: 'demo-editor', name: '문서 편집자', roles: ['editor'] },
  { user: 'demo-trader', name: '데모 트레이더', roles: ['trader'] },
  { user: 'demo-partner', name: '렌탈 검토자', roles: ['partner'] },
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

export async function seedDemo(parts: DemoParts, at: { url: string; local: string }): Promise<DemoSummary> {
  const { store, auth, tickets, reward, collab, programs } = parts;
  const state = demoStates.decode(await store.get(STATE_KEY)) ?? {};
  const save = () => store.set(STATE_KEY, demoStates.encode(state));

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

  // rental applications in every status, with their files and the partner's checks
  const rental = (state.rental ??= { applications: [], receipts: [] });
  await seedRental(parts.rental, parts.blobs, rental, save);

  // conversations at several stages, one registered and shared as a referral code used once
  const chat = (state.chat ??= { sessions: [], receipts: [] });
  await seedChat(parts.chat, chat, save);

  // two coaching owners
  const coach = await seedCoach(parts.coach, parts.coachSecret);

  // the wallet: an on-ramp settled through the bank stand-in, a challenge bought and running, a
  // payout paid and one held for review
  const wallet = await seedWallet(parts.payment, at, (state.wallet ??= {}), save);

  return {
    password,
    accounts: DEMO_ACCOUNTS.map(({ user, roles }) => ({ user, roles })),
    show_id: state.show_id,
    tickets: [...codes],
    members: [...members],
    documents: DOCS.map((d) => d.slug),
    programs: [...ids],
    rental: { ...rental, applications: [...rental.applications], receipts: [...rental.receipts] },
    chat: { ...chat, sessions: [...chat.sessions], receipts: [...chat.receipts] },
    coach,
    ...(wallet ? { wallet } : {}),
  };
}

export async function exists(get: () => Promise<unknown>): Promise<boolean> {
  try {
    await get();
    return true;
  } catch (err) {
    if (err instanceof AppError && err.kind === 'not_found') return false;
    throw err;
  }
}
