import { createServer, type AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { Mailer, mailWrites } from '../../src/mail/mailer.js';
import { Outbox } from '../../src/outbox.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { until } from '../support/http.js';
import { smtpSink } from '../support/smtp.js';
import { tempDir } from '../support/process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function setup(smtpUrl: string | undefined, path = tempDir('mail')) {
  const store: Store = await openLmdbStore({ path });
  const mailer = new Mailer({ store, clock: systemClock, smtpUrl, from: 'maru <noreply@maru.test>', timeoutMs: 2000 });
  const outbox = new Outbox({ store, clock: systemClock, deliver: { mail: mailer.deliver }, retryMinMs: 50, retryMaxMs: 200, pollMs: 50 });
  outbox.start();
  cleanups.push(async () => {
    await outbox.stop();
    mailer.close();
    await store.close();
  });
  const queue = (id: string, to = 'kim@school.kr') =>
    store.update([], () => ({
      writes: mailWrites(id, { to, subject: '[maru] 접수 완료 (R261122-000001)', text: '신청이 접수되었습니다.\n접수번호: R261122-000001' }, Date.now(), `test:thing:${id}`),
      result: undefined,
    }));
  return { store, mailer, outbox, queue };
}

describe('mail through the outbox', () => {
  it('sends through SMTP: the loopback server receives the Korean mail with a Message-ID from the item id', async () => {
    const sink = await smtpSink();
    cleanups.push(sink.close);
    const { queue, outbox } = await setup(`smtp://127.0.0.1:${sink.port}`);
    await queue('rental:sub_1:receipt');
    outbox.kick();
    const mail = await until('the mail at the SMTP server', () => sink.received[0]);
    expect(mail.subject).toBe('[maru] 접수 완료 (R261122-000001)');
    expect(mail.text).toContain('접수번호: R261122-000001');
    expect((mail.to as { text: string }).text).toBe('kim@school.kr');
    expect(mail.from?.text).toContain('noreply@maru.test');
    expect(mail.messageId).toBe('<mail.rental.sub_1.receipt@maru.test>');
    await until('the outbox empty', async () => (await outbox.stats()).pending === 0);
  });

  it('a dead mail server delays mail and loses none: it arrives once the server is up', async () => {
    const port = await freePort();
    const { queue, outbox } = await setup(`smtp://127.0.0.1:${port}`);
    await queue('rental:sub_2:approved:4');
    outbox.kick();
    await until('a failed attempt', async () => (await outbox.stats()).failedAttempts >= 1);
    expect((await outbox.pending('mail'))[0]).toMatchObject({ id: 'mail:rental:sub_2:approved:4' });
    const sink = await smtpSink(port);
    cleanups.push(sink.close);
    const mail = await until('the delayed mail', () => sink.received[0], 20_000);
    expect(mail.subject).toContain('접수 완료');
    await until('the outbox empty', async () => (await outbox.stats()).pending === 0);
    expect(sink.received).toHaveLength(1);
  });

  it('without SMTP_URL, mails are kept once each and listed newest first', async () => {
    const { queue, outbox, mailer } = await setup(undefined);
    expect(mailer.sending).toBe(false);
    await queue('intake:a:receipt', 'a@x.kr');
    await queue('intake:b:receipt', 'b@x.kr');
    outbox.kick();
    const kept = await until('two kept mails', async () => {
      const k = await mailer.kept();
      return k.length === 2 && k;
    });
    expect(kept.map((m) => m.to)).toEqual(['b@x.kr', 'a@x.kr']);
    expect(kept[0]).toMatchObject({ id: 'mail:intake:b:receipt', subject: '[maru] 접수 완료 (R261122-000001)' });
    // a repeated delivery of the same id (at-least-once) is kept once
    await mailer.deliver({ id: 'mail:intake:a:receipt', dest: 'mail', payload: { to: 'a@x.kr', subject: 's', text: 't' }, createdAt: 0 }, new AbortController().signal);
    expect(await mailer.kept()).toHaveLength(2);
  });

  it('mails kept before the partitions (one global list) are still listed, and not kept again', async () => {
    const path = tempDir('mail-global');
    const old = await openLmdbStore({ path, partitionCheck: false });
    const before = { id: 'mail:intake:old:receipt', at: '2026-01-01T00:00:00.000Z', to: 'old@x.kr', subject: 's', text: 't' };
    await old.update([], () => ({
      writes: [
        { op: 'push', key: 'mail:kept', value: before, cap: 10_000 },
        { op: 'set', key: 'mail:kept:mail:intake:old:receipt', value: true },
      ],
      result: undefined,
    }));
    await old.close();
    const { queue, outbox, mailer, store } = await setup(undefined, path);
    await queue('intake:new:receipt', 'new@x.kr');
    outbox.kick();
    const kept = await until('both kept mails', async () => {
      const k = await mailer.kept();
      return k.length === 2 && k;
    });
    expect(kept.map((m) => m.to)).toEqual(['new@x.kr', 'old@x.kr']);
    await mailer.deliver({ id: before.id, dest: 'mail', payload: { to: 'old@x.kr', subject: 's', text: 't' }, createdAt: 0 }, new AbortController().signal);
    expect(await mailer.kept()).toHaveLength(2);
    expect(await mailer.kept(1)).toMatchObject([{ to: 'new@x.kr' }]);
    expect(await store.length('mail:kept')).toBe(1);
  });
});
