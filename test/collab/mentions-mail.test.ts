import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD, bearer, login, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { smtpSink } from '../support/smtp.js';
import { sleep, waitFor } from '../support/wait.js';

const silent = pino({ level: 'silent' });

/**
 * A person mentioned in a comment is told by mail (docs/collab.md "Comments"): through the outbox,
 * to the account's address, delivered by a real SMTP server; an account without an address is not
 * mailed; a mention of an unknown account or of one who may not read the document is refused and
 * mails no one.
 */
describe('mentions by mail', () => {
  let maru: Maru;
  let base: string;
  let smtp: Awaited<ReturnType<typeof smtpSink>>;
  const tok = { own: '', rd: '', quiet: '', other: '' };
  const post = (w: keyof typeof tok, p: string, b: unknown) => call(base, 'POST', p, b, bearer(tok[w]));

  beforeAll(async () => {
    smtp = await smtpSink();
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('collab-mentions'), LOG_LEVEL: 'silent', SMTP_URL: smtp.url, MAIL_FROM: 'maru <docs@maru.test>', OUTBOX_RETRY_MIN_MS: '50', ...AUTH_TEST_ENV }),
      { logger: silent },
    );
    base = maru.url;
    tok.own = await signIn(base, ['editor'], 'm-owner');
    tok.rd = await signIn(base, ['editor'], 'm-reader');
    tok.quiet = await signIn(base, ['editor'], 'm-quiet');
    tok.other = await signIn(base, ['editor'], 'm-other');
    const admin = bearer(await login(base, 'admin', TEST_ADMIN_PASSWORD));
    // addresses: the reader and the owner have one, the quiet reader and the outsider none / one
    for (const [user, email] of [['m-reader', 'reader@maru.test'], ['m-owner', 'owner@maru.test'], ['m-other', 'other@maru.test']] as const) {
      const r = await call(base, 'PUT', `/api/auth/accounts/${user}`, { email }, admin);
      expect([r.status, r.body.email]).toEqual([200, email]);
    }
    expect((await call(base, 'PUT', '/api/auth/accounts/m-reader', { email: 'not an address' }, admin)).body.error.code).toBe('invalid_body');
    expect((await post('own', '/api/md/save', { slug: 'plan', content: '# 계획\n\n배포 일정\n', visibility: 'private' })).status).toBe(200);
    expect((await post('own', '/api/md/access', { slug: 'plan', readers: ['m-reader', 'm-quiet'] })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await maru?.stop();
    await smtp?.close();
  });

  it('a comment mentioning a reader mails the reader (the address of the account); a reply mentioning the owner mails the owner', async () => {
    const made = await post('own', '/api/md/comments', { slug: 'plan', body: '@m-reader @m-quiet 일정 확인 부탁해요', range: { from: 6, to: 11 } });
    expect(made.status).toBe(201);
    expect(made.body.mentions).toEqual(['m-reader', 'm-quiet']);
    await waitFor(() => smtp.received.some((m) => m.text?.includes('일정 확인 부탁해요')), 15_000, 'the mention mail');
    const mail = smtp.received.find((m) => m.text?.includes('일정 확인 부탁해요'))!;
    expect(mail.to && 'text' in mail.to ? mail.to.text : '').toBe('reader@maru.test');
    expect(mail.subject).toContain('계획');
    expect(mail.text).toContain('/docs#plan');
    // a reply that mentions the owner: the owner's mail
    const reply = await post('rd', '/api/md/comments/reply', { slug: 'plan', thread: made.body.id, body: '@m-owner 확인했습니다' });
    expect(reply.status).toBe(201);
    await waitFor(() => smtp.received.some((m) => m.text?.includes('확인했습니다')), 15_000, 'the reply mail');
    const second = smtp.received.find((m) => m.text?.includes('확인했습니다'))!;
    expect(second.to && 'text' in second.to ? second.to.text : '').toBe('owner@maru.test');
    // the quiet reader has no address: two mails in all, no more
    await sleep(500);
    expect(smtp.received).toHaveLength(2);
  }, 40_000);

  it('a mention of an unknown account or of one who may not read the document: 422, no comment, no mail', async () => {
    const before = smtp.received.length;
    for (const body of ['@m-other 보세요', '@nobody-here 보세요', '@m-reader @m-other 둘 다']) {
      const r = await post('own', '/api/md/comments', { slug: 'plan', body, range: { from: 6, to: 11 } });
      expect([r.status, r.body.error.code], body).toEqual([422, 'mention_not_reader']);
    }
    const threads = (await call(base, 'GET', '/api/md/comments/plan', undefined, bearer(tok.own))).body.threads;
    expect(threads).toHaveLength(1);
    await sleep(1000);
    expect(smtp.received.length).toBe(before);
  }, 20_000);
});
