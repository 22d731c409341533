import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD, TEST_PARTNER_PASSWORD, bearer, login } from '../support/auth.js';
import { call, get, post, until } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { smtpSink } from '../support/smtp.js';
import { applicant, form, threeFiles } from './fixtures.js';

// The applicant's mails, end to end: a hub with SMTP_URL pointing at a real SMTP server on
// loopback, and a hub without SMTP_URL that keeps them for the operator.
const silent = pino({ level: 'silent' });
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function hub(extra: Record<string, string> = {}): Promise<Maru> {
  const maru = await startMaru(
    loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('rental-mail'), LOG_LEVEL: 'silent', OUTBOX_RETRY_MIN_MS: '50', ...AUTH_TEST_ENV, ...extra }),
    { logger: silent },
  );
  cleanups.push(async () => { await maru.stop(); });
  return maru;
}

async function approveAll(base: string, id: string) {
  const token = (await post(base, '/api/partner/login', { password: TEST_PARTNER_PASSWORD })).body.token;
  for (const doc of ['bizCard', 'uniqueNumber', 'internalResolution']) {
    const r = await call(base, 'PUT', `/api/partner/applications/${id}/documents/${doc}/check`, { result: 'approved' }, bearer(token));
    expect(r.status).toBe(200);
  }
}

describe('applicant mail', () => {
  it('sends the receipt and the approval through SMTP', async () => {
    const smtp = await smtpSink();
    const { received } = smtp;
    cleanups.push(smtp.close);
    const maru = await hub({ SMTP_URL: smtp.url, MAIL_FROM: 'maru <rental@maru.test>' });

    const app = (await (await fetch(`${maru.url}/api/subscriptions`, { method: 'POST', body: form(applicant, threeFiles()) })).json()) as any;
    const receipt = await until('the receipt mail', () => received.find((m) => m.subject?.includes(app.receiptNo)));
    expect(receipt.subject).toBe(`[maru] 접수 완료 (${app.receiptNo})`);
    expect((receipt.to as { text: string }).text).toBe('kim@school.kr');
    expect(receipt.text).toContain('월 렌탈료: 350,000원 × 36개월 = 12,600,000원');

    await approveAll(maru.url, app.id);
    const approved = await until('the approval mail', () => received.find((m) => m.subject?.includes('승인')));
    expect(approved.subject).toBe(`[maru] 렌탈 신청 승인 (${app.receiptNo})`);
    expect(approved.from?.text).toContain('rental@maru.test');
  });

  it('without SMTP_URL, mails are kept and listed for the operator only', async () => {
    const maru = await hub();
    const app = (await (await fetch(`${maru.url}/api/subscriptions`, { method: 'POST', body: form(applicant, threeFiles()) })).json()) as any;
    const admin = await login(maru.url, 'admin', TEST_ADMIN_PASSWORD);
    const kept = await until('the kept receipt mail', async () => {
      const r = await get(maru.url, '/api/mail', bearer(admin));
      return r.body.mails?.length === 1 && r.body;
    });
    expect(kept).toMatchObject({ sending: false, mails: [{ to: 'kim@school.kr', subject: `[maru] 접수 완료 (${app.receiptNo})` }] });
    expect((await get(maru.url, '/api/mail')).status).toBe(401);
    const partner = (await post(maru.url, '/api/partner/login', { password: TEST_PARTNER_PASSWORD })).body.token;
    expect((await get(maru.url, '/api/mail', bearer(partner))).status).toBe(403);
  });
});
