import { readdirSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, TEST_PARTNER_PASSWORD, bearer, signIn } from '../support/auth.js';
import { call, get, post, until, type Answer } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';
import { makeExe as exe, makeHwp as hwp, makePdf as pdf, makePng as png } from '../support/uploads.js';
import { applicant, form, rawMultipart, threeFiles, type FilePart } from './fixtures.js';

const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-11-22T10:00:00+09:00');
const LIMIT = 65_536;

let maru: Maru;
let base: string;
let dataDir: string;
let partner: string;
const clock = new ManualClock(T0);

beforeAll(async () => {
  dataDir = tempDir('rental-http');
  maru = await startMaru(
    loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', UPLOAD_MAX_BYTES: String(LIMIT), PARTNER_TOKEN_TTL: '3600000', ...AUTH_TEST_ENV }),
    { clock, logger: silent },
  );
  base = maru.url;
  partner = await partnerLogin();
});
afterAll(() => maru.stop());

async function partnerLogin(): Promise<string> {
  const r = await post(base, '/api/partner/login', { password: TEST_PARTNER_PASSWORD });
  expect(r.status).toBe(200);
  expect(r.body).toEqual({ token: expect.any(String), expiresAt: expect.any(String) });
  return r.body.token;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, text, body };
}

const submit = async (fields: Record<string, string | undefined>, files: FilePart[]) =>
  answer(await fetch(`${base}/api/subscriptions`, { method: 'POST', body: form(fields, files) }));

const replace = async (id: string, docType: string, key: string, file: FilePart) =>
  answer(await fetch(`${base}/api/subscriptions/${id}/documents/${docType}?key=${encodeURIComponent(key)}`, { method: 'PUT', body: form({}, [file]) }));

const check = (id: string, docType: string, body: unknown, token = partner) =>
  call(base, 'PUT', `/api/partner/applications/${id}/documents/${docType}/check`, body, bearer(token));

/** Every blob file under DATA_DIR/blobs (the spool excluded). */
function blobFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const n of names) {
      if (n === '.spool') continue;
      const p = join(dir, n);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(join(dataDir, 'blobs'));
  return out;
}

/** Temporary upload files left behind. */
const tempFiles = () => {
  try {
    return readdirSync(join(dataDir, 'tmp', 'uploads'));
  } catch {
    return [];
  }
};

async function total(): Promise<number> {
  const r = await get(base, '/api/partner/applications?pageSize=1', bearer(partner));
  return r.body.counters.total;
}

describe('rental intake and partner review over HTTP', () => {
  it('runs the whole flow: form with three files, tracking, files, partner list, checks, approval live, CSV, audit', async () => {
    const watcher = await connectTopics(base);
    watcher.ws.send(JSON.stringify({ type: 'subscribe', topic: 'rental:partner' }));
    expect(await watcher.next()).toMatchObject({ type: 'error', code: 'unauthorized' });
    await watcher.auth(await partnerLogin());
    await watcher.subscribe('rental:partner');
    const outsider = await connectTopics(base);
    await outsider.auth(await signIn(base, ['staff']));
    outsider.ws.send(JSON.stringify({ type: 'subscribe', topic: 'rental:partner' }));
    expect(await outsider.next()).toMatchObject({ type: 'error', code: 'forbidden' });
    outsider.close();

    const r = await submit(applicant, threeFiles());
    expect(r.status).toBe(201);
    const app = r.body;
    expect(app).toMatchObject({
      receiptNo: expect.stringMatching(/^R261122-\d{6}$/),
      type: 'rental-ipa',
      applicantType: 'government',
      product: { code: 'SOL-702', badge: 'ipa', name: expect.any(String) },
      status: 'documents_submitted',
      monthlyFee: 350_000,
      termMonths: 36,
      totalFee: 12_600_000,
      organization: '서울중앙초등학교',
      contactPhone: '010-1234-5678',
      accessKey: expect.stringMatching(/^ak_/),
    });
    expect(app.documents.internalResolution).toMatchObject({ filename: '내부결의서.hwpx', mediaType: 'application/x-hwp', check: null });
    expect(app.documents.bizCard).toMatchObject({ filename: '명함.png', mediaType: 'image/png', size: png().length });
    expect(app.documents.uniqueNumber.mediaType).toBe('application/pdf');
    expect(tempFiles()).toEqual([]);
    expect((await watcher.next()).data).toMatchObject({ kind: 'application', application: { id: app.id, receiptNo: app.receiptNo } });

    // tracking with the key only
    const tracked = await get(base, `/api/subscriptions/${app.receiptNo}?key=${app.accessKey}`);
    expect(tracked.status).toBe(200);
    expect(tracked.body).toMatchObject({ id: app.id, status: 'documents_submitted' });
    expect(tracked.body).not.toHaveProperty('accessKey');
    expect(tracked.body).not.toHaveProperty('keyHash');
    expect((await get(base, `/api/subscriptions/${app.receiptNo}?key=ak_${'x'.repeat(43)}`)).status).toBe(403);
    expect((await get(base, `/api/subscriptions/${app.receiptNo}`)).status).toBe(400);
    expect((await get(base, `/api/subscriptions/R261122-999999?key=${app.accessKey}`)).body.error.code).toBe('subscription_not_found');

    // files: the applicant's key or the partner's token, nothing public
    const url = app.documents.internalResolution.url as string;
    const noCred = await get(base, url);
    expect(noCred.status).toBe(401);
    expect(noCred.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const byKey = await fetch(`${base}${url}?key=${app.accessKey}`);
    expect(byKey.status).toBe(200);
    expect(byKey.headers.get('content-type')).toBe('application/x-hwp');
    expect(byKey.headers.get('x-content-type-options')).toBe('nosniff');
    expect(byKey.headers.get('content-disposition')).toBe(`attachment; filename="_____.hwpx"; filename*=UTF-8''${encodeURIComponent('내부결의서.hwpx')}`);
    const bytes = Buffer.from(await byKey.arrayBuffer());
    expect(bytes.subarray(0, 4).toString('hex')).toBe('d0cf11e0');
    expect((await get(base, `${url}?key=ak_${'y'.repeat(43)}`)).status).toBe(403);
    expect((await get(base, url, bearer(partner))).status).toBe(200);
    const staff = await signIn(base, ['staff']);
    expect((await get(base, url, bearer(staff))).status).toBe(403);
    expect((await get(base, `/api/uploads/${app.id}/AAAAAAAAAAAAAAAAAAAAAA.hwp`, bearer(partner))).body.error.code).toBe('file_not_found');

    // the partner's list
    const list = await get(base, `/api/partner/applications?q=${encodeURIComponent('중앙초')}`, bearer(partner));
    expect(list.status).toBe(200);
    expect(list.body.items.map((a: { id: string }) => a.id)).toContain(app.id);
    expect(list.body.items[0]).not.toHaveProperty('keyHash');
    expect(list.body.counters).toMatchObject({ total: expect.any(Number), pending: expect.any(Number), documents_submitted: expect.any(Number), approved: expect.any(Number) });

    // checks: under_review, then approved with the third; the watcher hears every check and the move
    const first = await check(app.id, 'bizCard', { result: 'approved' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: app.id, status: 'under_review', documents: { bizCard: { check: 'approved' } } });
    await check(app.id, 'uniqueNumber', { result: 'approved' });
    const last = await check(app.id, 'internalResolution', { result: 'approved' });
    expect(last.body.status).toBe('approved');
    const seen: any[] = [];
    await until('the approved move on the partner topic', async () => {
      const f = await watcher.next();
      seen.push(f.data);
      return f.data.kind === 'status' && f.data.to === 'approved';
    });
    expect(seen.filter((d) => d.kind === 'check').map((d) => d.docType)).toEqual(['bizCard', 'uniqueNumber', 'internalResolution']);
    watcher.close();
    expect((await get(base, `/api/subscriptions/${app.receiptNo}?key=${app.accessKey}`)).body.status).toBe('approved');

    // CSV with a BOM
    const csv = await fetch(`${base}/api/partner/applications?format=csv&status=approved`, { headers: bearer(partner) });
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toContain('attachment');
    const csvBytes = Buffer.from(await csv.arrayBuffer());
    expect(csvBytes.subarray(0, 3).toString('hex')).toBe('efbbbf');
    expect(csvBytes.toString('utf8')).toContain(`${app.receiptNo},SOL-702,ipa,서울중앙초등학교`);

    // the audit trail: logins, list, checks, downloads, export
    const audit = await get(base, '/api/partner/audit?limit=50', bearer(partner));
    const actions = audit.body.entries.map((e: { action: string; result: string }) => `${e.action}:${e.result}`);
    expect(actions).toEqual(expect.arrayContaining(['login:ok', 'list:ok', 'check:approved', 'download:ok', 'export:ok']));
    expect(audit.body.entries[0]).toMatchObject({ action: 'export', actor: 'partner', client: expect.any(String), at: expect.any(String) });
    expect((await get(base, '/api/partner/audit', bearer(staff))).status).toBe(403);
  });

  it('rejects a document with a reason; the applicant replaces it and the application is back at documents_submitted', async () => {
    const app = (await submit({ ...applicant, buildingType: undefined, type: 'rental-db' }, threeFiles())).body;
    expect(app).toMatchObject({ product: { code: 'SOL-701', badge: 'db' }, monthlyFee: 830_000, totalFee: 29_880_000 });
    expect((await check(app.id, 'bizCard', { result: 'rejected' })).body.error).toMatchObject({ code: 'invalid_body' });
    const rejected = await check(app.id, 'bizCard', { result: 'rejected', reason: '명함이 잘렸습니다' });
    expect(rejected.body).toMatchObject({ status: 'rejected', documents: { bizCard: { check: 'rejected', reason: '명함이 잘렸습니다' } } });
    const oldUrl = app.documents.bizCard.url;
    const before = blobFiles().length;

    expect((await replace(app.id, 'bizCard', `ak_${'z'.repeat(43)}`, { field: 'bizCard', filename: 'new.png', data: png() })).status).toBe(403);
    const again = await replace(app.id, 'bizCard', app.accessKey, { field: 'bizCard', filename: '새명함.jpg.png', data: png() });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'documents_submitted', documents: { bizCard: { check: null, reason: null, filename: '새명함.jpg.png' } } });
    expect(blobFiles().length).toBe(before); // the old file is deleted, the new one stored
    expect((await get(base, `${oldUrl}?key=${app.accessKey}`)).status).toBe(404);
    expect((await replace(app.id, 'photo', app.accessKey, { field: 'bizCard', filename: 'x.png', data: png() })).body.error.code).toBe('unknown_document_type');
  });

  it('serves the catalogue the form shows: products with fees by building type, documents, statuses', async () => {
    const r = await get(base, '/api/rental/products');
    expect(r.status).toBe(200);
    expect(r.body.termMonths).toBe(36);
    expect(r.body.products).toEqual([
      expect.objectContaining({ type: 'rental-ipa', code: 'SOL-702', badge: 'ipa', preselected: true, monthlyFee: 300_000, fees: expect.objectContaining({ school: 300_000, office: 350_000 }) }),
      expect.objectContaining({ type: 'rental-db', code: 'SOL-701', badge: 'db', preselected: false, monthlyFee: 830_000 }),
    ]);
    expect(r.body.buildingTypes).toContainEqual({ value: 'school', label: '학교' });
    expect(r.body.documents.map((d: { field: string }) => d.field)).toEqual(['bizCard', 'uniqueNumber', 'internalResolution']);
    expect(r.body.statuses.map((d: { value: string }) => d.value)).toEqual(['pending', 'documents_submitted', 'under_review', 'approved', 'rejected']);
  });

  it('registers an intake without files from JSON (the conversation service path)', async () => {
    const r = await post(base, '/api/subscriptions', { type: 'chat', contactPhone: '01098765432', contactName: '이고객' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ type: 'chat', status: 'pending', contactPhone: '010-9876-5432', accessKey: expect.any(String) });
    expect(r.body).not.toHaveProperty('documents');
    const list = await get(base, `/api/partner/applications?q=${r.body.receiptNo}`, bearer(partner));
    expect(list.body.matched).toBe(0);
    const rental = await post(base, '/api/subscriptions', { ...applicant });
    expect(rental.status).toBe(201);
    expect(rental.body).toMatchObject({ status: 'pending', documents: { bizCard: null, uniqueNumber: null, internalResolution: null } });
  });
});

describe('a submission retried with its Idempotency-Key', () => {
  it('makes one application: the retry replays the first answer, access key included; other files under the same key are 422', async () => {
    const key = { 'idempotency-key': 'apply-7c1e' };
    const fields = { ...applicant, contactName: '재시도' };
    const send = async (files: FilePart[]) => answer(await fetch(`${base}/api/subscriptions`, { method: 'POST', headers: key, body: form(fields, files) }));
    const files = threeFiles();
    const first = await send(files);
    expect(first.status).toBe(201);
    const again = await send(files);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const listed = await get(base, `/api/partner/applications?q=${encodeURIComponent('재시도')}`, bearer(partner));
    expect(listed.body.matched).toBe(1);
    // the replayed key opens the application it names
    const tracked = await get(base, `/api/subscriptions/${first.body.receiptNo}?key=${encodeURIComponent(first.body.accessKey)}`);
    expect(tracked.status).toBe(200);
    const changed = await send([files[0]!, files[1]!, { ...files[2]!, data: hwp(1, 10) }]);
    expect(changed.status).toBe(422);
    expect(changed.body.error.code).toBe('idempotency_key_reused');
    expect((await get(base, `/api/partner/applications?q=${encodeURIComponent('재시도')}`, bearer(partner))).body.matched).toBe(1);
  });
});

describe('bad input: a clear 4xx, nothing stored', () => {
  const cases: [string, () => Promise<Answer>, number, string | RegExp][] = [
    ['missing contactPhone', () => submit({ ...applicant, contactPhone: undefined }, threeFiles()), 400, 'invalid_body'],
    ['malformed contactPhone', () => submit({ ...applicant, contactPhone: '12-34' }, threeFiles()), 400, 'invalid_body'],
    ['malformed email', () => submit({ ...applicant, email: 'kim@@school' }, threeFiles()), 400, 'invalid_body'],
    ['unknown type', () => submit({ ...applicant, type: 'rental-car' }, threeFiles()), 400, 'invalid_body'],
    ['a rental type with another applicantType', () => submit({ ...applicant, applicantType: 'business' }, threeFiles()), 400, 'applicant_type_mismatch'],
    ['an unknown buildingType', () => submit({ ...applicant, buildingType: 'castle' }, threeFiles()), 400, 'invalid_body'],
    ['a file over the limit', () => submit(applicant, [...threeFiles().slice(0, 2), { field: 'internalResolution', filename: 'big.hwp', data: hwp(1, LIMIT) }]), 413, 'file_too_large'],
    ['a renamed executable', () => submit(applicant, [...threeFiles().slice(0, 2), { field: 'internalResolution', filename: 'setup.hwp', data: exe() }]), 415, 'unsupported_file_type'],
    ['a PDF called .hwp', () => submit(applicant, [...threeFiles().slice(0, 2), { field: 'internalResolution', filename: 'resolution.hwp', data: pdf() }]), 415, 'type_mismatch'],
    ['a fourth file field', () => submit(applicant, [...threeFiles(), { field: 'photo', filename: 'p.png', data: png() }]), 400, /^unexpected_file$/],
    ['an unknown file field', () => submit(applicant, [{ field: 'photo', filename: 'p.png', data: png() }]), 400, 'unexpected_file'],
    ['a duplicated file field', () => submit(applicant, [threeFiles()[0]!, { field: 'bizCard', filename: 'b.png', data: png() }]), 400, 'duplicate_file'],
    ['a path-like filename', () => submit(applicant, [{ field: 'bizCard', filename: '../../x.png', data: png() }]), 400, 'invalid_filename'],
    ['an encrypted HWP', () => submit(applicant, [{ field: 'internalResolution', filename: 'secret.hwp', data: hwp(1 | 2) }]), 422, 'document_encrypted'],
    ['an unknown form field', () => submit({ ...applicant, surprise: 'x' }, []), 400, 'unexpected_field'],
    ['JSON with a rental type and another applicantType', () => post(base, '/api/subscriptions', { ...applicant, applicantType: 'individual' }), 400, 'applicant_type_mismatch'],
  ];

  it.each(cases)('%s', async (_name, send, status, code) => {
    const [before, blobsBefore] = [await total(), blobFiles().length];
    const r = await send();
    expect(r.status).toBe(status);
    expect(r.body.error).toMatchObject({ code: typeof code === 'string' ? code : expect.stringMatching(code), message: expect.any(String) });
    expect(await total()).toBe(before);
    expect(blobFiles().length).toBe(blobsBefore);
    await until('temporary files gone', () => tempFiles().length === 0);
  });

  it('a truncated multipart body', async () => {
    const before = await total();
    const { body, contentType } = rawMultipart({ ...applicant }, threeFiles());
    const cut = body.subarray(0, body.length - 200);
    const status = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const u = new URL(`${base}/api/subscriptions`);
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': contentType, 'content-length': cut.length } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(cut);
    });
    expect(status.status).toBe(400);
    expect(status.body.error.code).toMatch(/truncated_body|invalid_multipart/);
    expect(await total()).toBe(before);
    await until('temporary files gone', () => tempFiles().length === 0);
  });

  it('document checks: unknown docType or application, no token, wrong token, expired token, a result other than approved/rejected', async () => {
    const app = (await submit(applicant, threeFiles())).body;
    expect((await check(app.id, 'photo', { result: 'approved' })).body.error.code).toBe('unknown_document_type');
    expect((await check('sub_000000000000', 'bizCard', { result: 'approved' })).status).toBe(404);
    const none = await call(base, 'PUT', `/api/partner/applications/${app.id}/documents/bizCard/check`, { result: 'approved' });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await check(app.id, 'bizCard', { result: 'approved' }, 'mt_wrongwrongwrong');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const bad = await check(app.id, 'bizCard', { result: 'maybe' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues[0].field).toBe('result');
    const staff = await signIn(base, ['staff']);
    expect((await check(app.id, 'bizCard', { result: 'approved' }, staff)).status).toBe(403);

    const shortLived = await partnerLogin();
    clock.advance(3_600_001);
    const expired = await check(app.id, 'bizCard', { result: 'approved' }, shortLived);
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toMatch(/^Bearer/);
    partner = await partnerLogin();
    const after = await get(base, `/api/subscriptions/${app.receiptNo}?key=${app.accessKey}`);
    expect(after.body.status).toBe('documents_submitted');
    expect(after.body.documents.bizCard.check).toBeNull();
  });

  it('a wrong partner password is 401 invalid_credentials and is in the audit trail', async () => {
    const r = await post(base, '/api/partner/login', { password: 'not-the-password' });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('invalid_credentials');
    const audit = await get(base, '/api/partner/audit?limit=5', bearer(partner));
    expect(audit.body.entries).toEqual(expect.arrayContaining([expect.objectContaining({ action: 'login', result: 'invalid_credentials', actor: '-' })]));
  });
});
