import pino from 'pino';
import { AUTH_TEST_ENV, bearer, login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { call, get as rawGet, post as rawPost } from '../support/http.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { startTaskLedgerStandin } from '../../src/peers/task-ledger-standin.js';
import { startValueStandin } from '../../src/peers/value-standin.js';
import { exchangeMessage, generateMemberKeys, signMessage, signWork } from '../../src/reward/signing.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';

const KST_NOON = (date: string) => Date.parse(`${date}T12:00:00+09:00`);
const silent = pino({ level: 'silent' });

function config(extra: Record<string, string> = {}) {
  return loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('reward-http'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV, AUTH_TOKEN_TTL_MS: String(365 * 86_400_000), ...extra });
}

/** The operator's credential on the hub under test; every call below carries it unless it says otherwise. */
let H: Record<string, string> = {};
const get = (base: string, path: string, headers: Record<string, string> = {}) => rawGet(base, path, { ...H, ...headers });
const post = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) => rawPost(base, path, body, { ...H, ...headers });

async function start(...args: Parameters<typeof startMaru>): Promise<Maru> {
  const maru = await startMaru(...args);
  H = bearer(await login(maru.url, 'admin', TEST_ADMIN_PASSWORD));
  return maru;
}


describe('reward plan over HTTP', () => {
  const clock = new ManualClock(KST_NOON('2026-11-21'));
  let maru: Maru;
  let base: string;
  let zone: string;
  let member: string;

  beforeAll(async () => {
    maru = await start(config(), { clock, logger: silent });
    base = maru.url;
  });
  afterAll(() => maru.stop());

  it('registers a cultural zone once, via GET and via POST', async () => {
    const first = await get(base, '/culture?country=KR&lang=ko&name=' + encodeURIComponent('서울'));
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.body).toMatchObject({ ok: true, country: 'KR', lang: 'ko', name: '서울', total_cultures: 1 });
    zone = first.body.id;
    const again = await post(base, '/culture', { country: 'KR', lang: 'ko', name: '서울' });
    expect(again.body).toMatchObject({ ok: true, total_cultures: 1, id: zone, created: false });
    const other = await post(base, '/culture?country=JP', { lang: 'ja', name: 'Tokyo' });
    expect(other.body).toMatchObject({ country: 'JP', lang: 'ja', total_cultures: 2 });
  });

  it('refuses malformed zones with 400 and changes nothing', async () => {
    for (const q of ['country=kr&lang=ko&name=x', 'country=KR&lang=KO&name=x', 'country=KR&lang=ko', 'country=KR&country=JP&lang=ko&name=x']) {
      const r = await get(base, '/culture?' + q);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code).toMatch(/^invalid_/);
    }
    expect((await get(base, '/stats')).body.cultures).toBe(2);
  });

  it('creates a member in a zone and reads it back with the document fields', async () => {
    const created = await post(base, '/api/reward/members', { name: '김마루', zone });
    expect(created.status).toBe(201);
    member = created.body.id;
    expect(member).toMatch(/^m_[A-Za-z0-9_-]{10}$/);
    const r = await get(base, `/member?id=${member}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: member, name: '김마루', grade: 1, grade_name: '입문', kc: 0, ru: 0, cu: 0 });
    expect((await post(base, '/api/reward/members', { name: 'x', zone: 'XX-xx-none' })).status).toBe(404);
    expect((await post(base, '/api/reward/members', { name: '', zone })).status).toBe(400);
    const badKey = await post(base, '/api/reward/members', { name: 'k', zone, public_key: 'not-a-key' });
    expect(badKey.status).toBe(400);
    expect(badKey.body.error.code).toBe('invalid_public_key');
  });

  it('credits work with the document formula and reports the three-way split', async () => {
    const events = await connectTopics(base);
    await events.subscribe('reward');
    const r = await get(base, `/work?id=${member}&kc=3&v=150`);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    // 800 x 60% x 150% x 100% x 3/27 = 80
    expect(r.body).toMatchObject({
      id: member,
      earned_ru: 80,
      new_grade: 2, // score 3 + 50 = 53 >= 27
      new_total_kc: 3,
      create_3x: 240,
      member_share: 80,
      ecosystem_share: 80,
      reserve_share: 80,
    });
    const ev = await events.next();
    expect(ev).toMatchObject({ type: 'message', topic: 'reward', data: { type: 'work', id: member, earned_ru: 80 } });
    expect(ev.data.stats.total_ru).toBe(80);
    events.close();
    expect((await get(base, `/member?id=${member}`)).body).toMatchObject({ kc: 3, ru: 80, grade: 2, grade_name: '견습' });
  });

  it('refuses a fourth unit on the same day, and credits again the next day', async () => {
    const r = await get(base, `/work?id=${member}&kc=1&v=100`);
    expect(r.status).toBe(409);
    expect(r.body.error).toMatchObject({ code: 'daily_units_exceeded', details: { units_today: 3, remaining_today: 0 } });
    clock.set(KST_NOON('2026-11-22'));
    const next = await post(base, '/work', { id: member, kc: 1, v: 100 });
    expect(next.status).toBe(200);
    // grade 2 (80%) now: 800 x 80% x 100% x 1/27 = 23.703.. -> 23.70
    expect(next.body.earned_ru).toBe(23.7);
  });

  it('answers bad work requests with 4xx and changes nothing', async () => {
    const before = (await get(base, `/member?id=${member}`)).body;
    const cases: [string, number, string][] = [
      [`id=m_nobody000&kc=1&v=100`, 404, 'member_not_found'],
      [`id=${member}&kc=1.5&v=100`, 400, 'invalid_query'],
      [`id=${member}&kc=abc&v=100`, 400, 'invalid_query'],
      [`id=${member}&kc=0&v=100`, 400, 'invalid_query'],
      [`id=${member}&kc=28&v=100`, 400, 'invalid_query'],
      [`id=${member}&kc=1&v=99`, 400, 'invalid_query'],
      [`id=${member}&kc=1&v=201`, 400, 'invalid_query'],
      [`id=${member}&kc=1&v=150.5`, 400, 'invalid_query'],
      [`kc=1&v=100`, 400, 'invalid_query'],
      [`id=${member}&kc=1&kc=2&v=100`, 400, 'invalid_query'],
      [`id=${member}&kc=%ZZ&v=100`, 400, 'invalid_query'],
    ];
    for (const [q, status, code] of cases) {
      const r = await get(base, `/work?${q}`);
      expect(r.status, q).toBe(status);
      expect(r.body.error.code, q).toBe(code);
      expect(r.body.error.message.length, q).toBeGreaterThan(0);
    }
    const messages: [string, string][] = [
      [`id=${member}&kc=abc&v=100`, 'kc: must be an integer'],
      [`id=${member}&kc=1.5&v=100`, 'kc: must be an integer'],
      [`id=${member}&kc=0&v=100`, 'kc: must be at least 1'],
      [`id=${member}&kc=1&v=201`, 'v: must be at most 200'],
      [`id=${member}&id=x&kc=1&v=100`, 'id: must be given once, as text'],
    ];
    for (const [q, message] of messages) expect((await get(base, `/work?${q}`)).body.error.message, q).toBe(message);
    expect((await get(base, `/exchange?id=${member}&amt=abc`)).body.error.message).toBe('amt: must be a decimal number');
    const wrongType = await fetch(`${base}/work?id=${member}&kc=1&v=100`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'kc=1' });
    expect(wrongType.status).toBe(415);
    expect((await get(base, `/member?id=${member}`)).body).toEqual(before);
  });

  it('exchanges RU to CU 1:1 and refuses bad amounts', async () => {
    const bad: [string, number][] = [
      ['0', 400],
      ['-5', 400],
      ['abc', 400],
      ['1.234', 400],
      ['1000000', 409],
    ];
    for (const [amt, status] of bad) {
      const r = await get(base, `/exchange?id=${member}&amt=${amt}`);
      expect(r.status, amt).toBe(status);
    }
    expect((await get(base, `/exchange?id=m_nobody000&amt=1`)).status).toBe(404);
    const ok = await get(base, `/exchange?id=${member}&amt=50.5`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    expect(ok.body).toMatchObject({ id: member, ru_burned: 50.5, cu_minted: 50.5, stage: 'S0', maturity_value: 303 });
    expect((await get(base, `/member?id=${member}`)).body).toMatchObject({ ru: 53.2, cu: 50.5 });
  });

  it('reports stats, maturity, charter, spec and readme', async () => {
    const stats = (await get(base, '/stats')).body;
    expect(stats).toEqual({ members: 1, cultures: 2, total_ru: 103.7, progress: expect.any(Number), stage: 'S0' });
    const m = (await get(base, '/maturity')).body;
    expect(m).toMatchObject({ stage: 'S0', end_year: 2038 });
    expect(m.days_left).toBeGreaterThan(4000);
    const declare = (await get(base, '/declare')).body;
    expect(declare.principles).toHaveLength(9);
    expect(declare.principles[8].text).toContain('each unit of work creates three times the paid value');
    expect(declare.principles[0]).toMatchObject({ configured: false, text: null });
    const spec = (await get(base, '/spec')).body;
    expect(spec.grades).toHaveLength(9);
    const readme = await get(base, '/readme');
    expect(readme.headers.get('content-type')).toContain('text/markdown');
    expect(readme.body).toContain('/work');
  });

  it('keeps the ledgers, the reserve pool and the work sessions', async () => {
    const ledger = (await get(base, `/api/reward/ledger?member=${member}`)).body;
    expect(JSON.stringify(ledger)).toContain('exchange');
    // one member's ledger carries that member's totals, read from its record
    const m = (await get(base, `/member?id=${member}`)).body;
    expect(ledger.totals).toEqual({
      member,
      entries: ledger.entries.length,
      units: m.kc,
      ru_earned: +(m.ru + m.cu).toFixed(2),
      ru_burned: m.cu,
      cu_minted: m.cu,
      ru_outstanding: m.ru,
    });
    const whole = (await get(base, '/api/reward/ledger')).body;
    expect(whole.totals.entries).toBeGreaterThanOrEqual(ledger.entries.length);
    expect(whole.totals).not.toHaveProperty('member');
    const reserve = (await get(base, '/api/reward/reserve')).body;
    expect(reserve.balance).toBe(103.7);
    // lot of 50.5 CU in S0 promises 303 at maturity: shortfall 252.5
    expect(reserve.maturity_shortfall).toBe(252.5);
    expect(reserve.reserve_coverage_pct).toBeCloseTo((103.7 / 252.5) * 100, 1);
    const sessions = (await get(base, `/api/reward/sessions?id=${member}`)).body;
    expect(JSON.stringify(sessions)).toContain('2026-11-22');
    const sim = (await get(base, '/api/reward/simulation')).body;
    expect(sim.final).toMatchObject({ reserve_coverage_pct: 20, combined_coverage_pct: 34 });
    expect((await get(base, '/api/reward/simulation?months=0')).status).toBe(400);
    expect((await get(base, '/api/reward/simulation?bogus=1')).status).toBe(400);
  });

  it('refuses a member past 6561 in one zone', async () => {
    const full = (await get(base, '/culture?country=KR&lang=ko&name=full')).body.id;
    let next = 0;
    const worker = async () => {
      while (next < 6561) {
        next++;
        const r = await post(base, '/api/reward/members', { name: `m${next}`, zone: full });
        if (r.status !== 201) throw new Error(JSON.stringify(r.body));
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    const before = (await get(base, '/stats')).body.members;
    const r = await post(base, '/api/reward/members', { name: 'one too many', zone: full });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('zone_full');
    expect((await get(base, '/stats')).body.members).toBe(before);
  }, 120_000);
});

describe('reward plan credentials', () => {
  it('zones, members, the whole ledger and the outbox are the operator\'s; one member\'s ledger is open', async () => {
    const clock = new ManualClock(KST_NOON('2026-11-21'));
    const maru = await start(config(), { clock, logger: silent });
    try {
      const base = maru.url;
      const trader = bearer(await signIn(base, ['trader']));
      const refused: [string, string, unknown][] = [
        ['GET', '/culture?country=KR&lang=ko&name=gwangju', undefined],
        ['POST', '/culture', { country: 'KR', lang: 'ko', name: 'gwangju' }],
        ['POST', '/api/reward/members', { name: 'x', zone: 'KR-ko-x' }],
        ['GET', '/api/reward/ledger', undefined],
        ['GET', '/api/reward/outbox', undefined],
      ];
      for (const [method, path, body] of refused) {
        const none = await call(base, method, path, body);
        expect(none.status, `${method} ${path}`).toBe(401);
        expect(none.headers.get('www-authenticate'), path).toMatch(/^Bearer/);
        expect((await call(base, method, path, body, bearer('mt_forged'))).status, path).toBe(401);
        expect((await call(base, method, path, body, trader)).status, `${method} ${path}`).toBe(403);
      }
      expect((await rawGet(base, '/stats')).body.cultures).toBe(0);
      const zone = (await get(base, '/culture?country=KR&lang=ko&name=gwangju')).body.id;
      const id = (await post(base, '/api/reward/members', { name: '빛고을', zone })).body.id;
      // names that would corrupt a screen are refused
      expect((await post(base, '/api/reward/members', { name: 'a\u202Eb', zone })).status).toBe(400);
      const open = await rawGet(base, `/api/reward/ledger?member=${id}`);
      expect(open.status).toBe(200);
      expect(open.body.totals).toMatchObject({ member: id, entries: 0, ru_earned: 0 });
    } finally {
      await maru.stop();
    }
  });

  it('with signing required, an exchange needs the member\'s signature too', async () => {
    const clock = new ManualClock(KST_NOON('2026-11-21'));
    const maru = await start(config({ REWARD_SIGNING: 'required' }), { clock, logger: silent });
    try {
      const keys = generateMemberKeys();
      const zone = (await get(maru.url, '/culture?country=KR&lang=ko&name=ulsan')).body.id;
      const id = (await post(maru.url, '/api/reward/members', { name: 'signer', zone, public_key: keys.publicKey })).body.id;
      const ts = clock.now();
      const wsig = signWork(keys.privateKey, { id, kc: 3, v: 100, ts });
      expect((await get(maru.url, `/work?id=${id}&kc=3&v=100&ts=${ts}&sig=${wsig}`)).status).toBe(200);
      const unsigned = await rawGet(maru.url, `/exchange?id=${id}&amt=1`);
      expect(unsigned.status).toBe(401);
      expect(unsigned.body.error.code).toBe('signature_required');
      const sig = signMessage(keys.privateKey, exchangeMessage({ id, amt: '1.5', ts }));
      // the signature binds the amount: another amount does not verify
      const other = await rawGet(maru.url, `/exchange?id=${id}&amt=2&ts=${ts}&sig=${sig}`);
      expect(other.status).toBe(401);
      expect(other.body.error.code).toBe('invalid_signature');
      const ok = await rawGet(maru.url, `/exchange?id=${id}&amt=1.5&ts=${ts}&sig=${sig}`);
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ id, ru_burned: 1.5, cu_minted: 1.5 });
      expect((await rawGet(maru.url, `/exchange?id=${id}&amt=1.5&ts=${ts}&sig=${sig}`)).body.error.code).toBe('signature_replayed');
      expect((await rawGet(maru.url, `/member?id=${id}`)).body.cu).toBe(1.5);
    } finally {
      await maru.stop();
    }
  });
});

describe('reward plan peers and signatures', () => {
  it('never waits for a slow peer and delivers through the outbox', async () => {
    // the value peer holds every answer back for 10 minutes (far beyond the test's time-out) until
    // the test releases it: a route that waited for the peer would never answer
    const value = await startValueStandin({ port: 0, host: '127.0.0.1', delayMs: 600_000 });
    const ledger = await startTaskLedgerStandin({ port: 0, host: '127.0.0.1' });
    const clock = new ManualClock(KST_NOON('2026-11-21'));
    const maru = await start(
      config({ VALUE_SERVICE_URL: value.url, TASK_LEDGER_URL: ledger.url, PEER_TIMEOUT_MS: '1000', OUTBOX_RETRY_MIN_MS: '50' }),
      { clock, logger: silent },
    );
    try {
      const zone = (await get(maru.url, '/culture?country=KR&lang=ko&name=busan')).body.id;
      const id = (await post(maru.url, '/api/reward/members', { name: 'peer test', zone })).body.id;
      const r = await get(maru.url, `/work?id=${id}&kc=3&v=100`);
      expect(r.status).toBe(200);
      // answered while the peer still holds its answer: the delivery is not done yet
      expect((await get(maru.url, '/api/reward/outbox')).body.stats.delivered).toBeLessThan(2);
      value.knobs.delayMs = 0;
      for (let i = 0; i < 100 && (await get(maru.url, '/api/reward/outbox')).body.stats.delivered < 2; i++) {
        await new Promise((res) => setTimeout(res, 100));
      }
      const outbox = (await get(maru.url, '/api/reward/outbox')).body;
      expect(outbox.stats).toMatchObject({ pending: 0, delivered: 2 });
      expect(value.state.inflowCount).toBe(1);
      expect(value.state.inflowTotal).toBeCloseTo(r.body.ecosystem_share, 2);
      expect(ledger.state.entries).toHaveLength(1);
    } finally {
      await maru.stop();
      await value.close();
      await ledger.close();
    }
  });

  it('verifies Ed25519 work signatures when signing is required', async () => {
    const clock = new ManualClock(KST_NOON('2026-11-21'));
    const maru = await start(config({ REWARD_SIGNING: 'required' }), { clock, logger: silent });
    try {
      const keys = generateMemberKeys();
      const zone = (await get(maru.url, '/culture?country=KR&lang=ko&name=daegu')).body.id;
      const id = (await post(maru.url, '/api/reward/members', { name: 'signer', zone, public_key: keys.publicKey })).body.id;
      const unsigned = await get(maru.url, `/work?id=${id}&kc=1&v=100`);
      expect(unsigned.status).toBe(401);
      expect(unsigned.body.error.code).toBe('signature_required');
      const ts = clock.now();
      const sig = signWork(keys.privateKey, { id, kc: 1, v: 100, ts });
      const forged = await get(maru.url, `/work?id=${id}&kc=2&v=100&ts=${ts}&sig=${sig}`);
      expect(forged.status).toBe(401);
      expect(forged.body.error.code).toBe('invalid_signature');
      const ok = await get(maru.url, `/work?id=${id}&kc=1&v=100&ts=${ts}&sig=${sig}`);
      expect(ok.status).toBe(200);
      const replay = await get(maru.url, `/work?id=${id}&kc=1&v=100&ts=${ts}&sig=${sig}`);
      expect(replay.status).toBe(409);
      expect(replay.body.error.code).toBe('signature_replayed');
      expect((await get(maru.url, `/member?id=${id}`)).body.kc).toBe(1);
    } finally {
      await maru.stop();
    }
  });
});

describe('a work credit retried with its Idempotency-Key', () => {
  it('credits once: the retry replays the answer recorded with the credit, its sequence number included', async () => {
    const clock = new ManualClock(KST_NOON('2026-11-21'));
    const maru = await start(config(), { clock, logger: silent });
    try {
      const zone = (await get(maru.url, '/culture?country=KR&lang=ko&name=daegu')).body.id;
      const id = (await post(maru.url, '/api/reward/members', { name: 'retry test', zone })).body.id;
      const key = { 'idempotency-key': 'work-3f9a' };
      const first = await get(maru.url, `/work?id=${id}&kc=1&v=100`, key);
      expect(first.status).toBe(200);
      expect(first.body.seq).toEqual(expect.any(Number));
      const again = await get(maru.url, `/work?id=${id}&kc=1&v=100`, key);
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await get(maru.url, `/member?id=${id}`)).body.kc).toBe(1);
      // the same key with other units is another request
      const other = await get(maru.url, `/work?id=${id}&kc=2&v=100`, key);
      expect(other.status).toBe(422);
      expect(other.body.error.code).toBe('idempotency_key_reused');
      // without a key each request credits, as the document's /work does
      expect((await get(maru.url, `/work?id=${id}&kc=1&v=100`)).body.new_total_kc).toBe(2);
    } finally {
      await maru.stop();
    }
  });
});
