import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startMaru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV } from '../support/auth.js';
import { post, until } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { smtpSink } from '../support/smtp.js';

// The conversation's confirmation mail end to end: a real SMTP server on loopback, read back with mailparser.
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('conversation mail', () => {
  it('the received stage mails a confirmation through SMTP, once', async () => {
    const smtp = await smtpSink();
    const { received } = smtp;
    cleanups.push(smtp.close);
    const maru = await startMaru(
      loadConfig({
        HOST: '127.0.0.1',
        PORT: '0',
        DATA_DIR: tempDir('chat-mail'),
        LOG_LEVEL: 'silent',
        OUTBOX_RETRY_MIN_MS: '50',
        SMTP_URL: smtp.url,
        MAIL_FROM: 'maru <chat@maru.test>',
        ...AUTH_TEST_ENV,
      }),
      { logger: pino({ level: 'silent' }) },
    );
    cleanups.push(async () => { await maru.stop(); });
    const base = maru.url;
    const id = (await post(base, '/api/chat/start', { subject: '메일' })).body.session;
    for (const choice of ['SNS', '하드웨어', '신청할게요']) await post(base, '/api/chat', { session: id, choice });
    for (const message of ['강하늘', '010-1212-3434', 'sky@example.kr', '설치 일정 문의', '네']) await post(base, '/api/chat', { session: id, message });
    const last = (await post(base, '/api/chat', { session: id, choice: '진행 상황 보기' })).body;
    expect(last.stage).toBe('track');
    const receiptNo: string = last.receiptNo;

    const mail = await until('the confirmation mail', () => received.find((m) => m.subject?.includes(receiptNo)));
    expect(mail.subject).toBe(`[maru] 상담 접수 ${receiptNo}`);
    expect((mail.to as { text: string }).text).toBe('sky@example.kr');
    expect(mail.from?.text).toContain('chat@maru.test');
    expect(mail.text).toContain('신청 상품: 하드웨어 스타터 세트\n');
    expect(mail.text).toContain('010-1212-3434');
    expect(received.filter((m) => m.subject?.includes(receiptNo))).toHaveLength(1);
  });
});
