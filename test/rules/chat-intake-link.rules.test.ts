import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import type { Write } from '../../src/store/port.js';

// The conversation's view of the intake service and the mail module (src/chat/intake-link.ts): an
// attempt's idempotency key names its record (`sub_` + 12 base-36 characters of its SHA-256); a
// rental application becomes a rental record (government applicant, source chat), anything else an
// intake record; the same attempt again answers the first record's receipt; progress is the
// status with its customer label; the upsell answer is noted on the record. Intake and rental are
// stand-ins recording what they are asked. The module is loaded afresh per test.
const load = async () => {
  vi.resetModules();
  // the error class as the freshly loaded module sees it
  return { ...(await import('../../src/chat/intake-link.js')), AppError: (await import('../../src/errors.js')).AppError };
};

const base36 = (key: string) => {
  const h = createHash('sha256').update(key).digest();
  return `sub_${Array.from(h.subarray(0, 12), (b) => '0123456789abcdefghijklmnopqrstuvwxyz'[b % 36]).join('')}`;
};

function parts(opts: { records?: Record<string, { receiptNo: string; status: string; ext?: Record<string, unknown> }>; receipts?: Record<string, string>; fail?: unknown } = {}) {
  const calls: { what: string; args: unknown[] }[] = [];
  const records = opts.records ?? {};
  const intake = {
    register: async (fields: unknown, o: { id: string; writes: (r: { receiptNo: string }) => Write[] }) => {
      calls.push({ what: 'intake.register', args: [fields, o.id, o.writes({ receiptNo: 'R-1' })] });
      if (opts.fail) throw opts.fail;
      return { record: { receiptNo: 'R-1' }, accessKey: 'k-intake' };
    },
    get: async (id: string) => {
      calls.push({ what: 'intake.get', args: [id] });
      return records[id];
    },
    byReceipt: async (receiptNo: string) => {
      calls.push({ what: 'intake.byReceipt', args: [receiptNo] });
      const id = opts.receipts?.[receiptNo];
      return id !== undefined && records[id] ? { ...records[id], id } : undefined;
    },
    count: async () => 42,
    modify: async (id: string, fn: (rec: unknown) => { record: unknown; result: unknown }) => {
      const out = fn(records[id]);
      calls.push({ what: 'intake.modify', args: [id, out.record] });
      return out.result;
    },
  };
  const rental = {
    submit: async (fields: unknown, files: unknown[], o: { id: string; source: string; writes: (r: { receiptNo: string }) => Write[] }) => {
      calls.push({ what: 'rental.submit', args: [fields, files, o.id, o.source, o.writes({ receiptNo: 'RR-1' })] });
      if (opts.fail) throw opts.fail;
      return { application: { receiptNo: 'RR-1' }, accessKey: 'k-rental' };
    },
  };
  return { intake, rental, calls };
}
const mailWrite = (no: string): Write[] => [{ op: 'set', key: `also:${no}`, value: 1 }];

describe('the record an attempt names', () => {
  it('is sub_ and 12 base-36 characters of the key’s SHA-256, the same for the same key', async () => {
    const { idFor } = await load();
    for (const k of ['a', 'chat:1:2', '', '한글 키']) {
      expect(idFor(k)).toBe(base36(k));
      expect(idFor(k)).toMatch(/^sub_[0-9a-z]{12}$/);
    }
    expect(idFor('x')).toBe(idFor('x'));
    expect(idFor('x')).not.toBe(idFor('y'));
  });

  it('labels the intake statuses as the customer reads them', async () => {
    const { PROGRESS_LABELS } = await load();
    expect(PROGRESS_LABELS).toEqual({ pending: '접수 완료', documents_submitted: '서류 제출 완료', under_review: '검토 중', approved: '승인', rejected: '보완 요청' });
  });
});

describe('registering', () => {
  const input = { contactName: '홍길동', contactPhone: '010-1234-5678', email: 'a@b.io', idempotencyKey: 'key-1' };

  it('makes a rental application a government rental record from the chat (its input parsed once, here), with the extra writes', async () => {
    const { chatIntake } = await load();
    const p = parts();
    const r = await chatIntake(p.intake as never, p.rental as never).register({ type: 'rental-ipa', ...input }, mailWrite);
    expect(r).toEqual({ receiptNo: 'RR-1', accessKey: 'k-rental' });
    expect(p.calls).toEqual([
      {
        what: 'rental.submit',
        args: [
          { type: 'rental-ipa', contactName: '홍길동', contactPhone: '010-1234-5678', email: 'a@b.io', applicantType: 'government', organization: '', department: '', remarks: '' },
          [],
          base36('key-1'),
          'chat',
          mailWrite('RR-1'),
        ],
      },
    ]);
  });

  it('makes anything else an intake record under the attempt’s id, without the key', async () => {
    const { chatIntake } = await load();
    for (const type of ['chat', 'consult'] as const) {
      const p = parts();
      const r = await chatIntake(p.intake as never, p.rental as never).register({ type, ...input }, mailWrite);
      expect(r).toEqual({ receiptNo: 'R-1', accessKey: 'k-intake' });
      expect(p.calls).toEqual([{ what: 'intake.register', args: [{ type, contactName: '홍길동', contactPhone: '010-1234-5678', email: 'a@b.io' }, base36('key-1'), mailWrite('R-1')] }]);
    }
  });

  it('adds no writes when none are asked for', async () => {
    const { chatIntake } = await load();
    const p = parts();
    const link = chatIntake(p.intake as never, p.rental as never);
    await link.register({ type: 'chat', ...input });
    await link.register({ type: 'rental-ipa', ...input });
    expect(p.calls.map((c) => c.args.at(-1))).toEqual([[], []]);
  });

  it('answers the first record’s receipt when the same attempt comes again', async () => {
    const { chatIntake, AppError } = await load();
    const exists = new AppError('conflict', 'subscription_exists', 'exists');
    for (const type of ['chat', 'rental-ipa'] as const) {
      const p = parts({ fail: exists, records: { [base36('key-1')]: { receiptNo: 'FIRST', status: 'pending' } } });
      expect(await chatIntake(p.intake as never, p.rental as never).register({ type, ...input })).toEqual({ receiptNo: 'FIRST' });
      expect(p.calls.at(-1)).toEqual({ what: 'intake.get', args: [base36('key-1')] });
    }
  });

  it('passes on any other failure, and a conflict whose record is gone', async () => {
    const { chatIntake, AppError } = await load();
    const other = new AppError('invalid', 'invalid_input', 'bad');
    let p = parts({ fail: other });
    await expect(chatIntake(p.intake as never, p.rental as never).register({ type: 'chat', ...input })).rejects.toBe(other);
    expect(p.calls.map((c) => c.what)).toEqual(['intake.register']);
    const plain = Object.assign(new Error('x'), { code: 'subscription_exists' });
    p = parts({ fail: plain });
    await expect(chatIntake(p.intake as never, p.rental as never).register({ type: 'chat', ...input })).rejects.toBe(plain);
    const exists = new AppError('conflict', 'subscription_exists', 'exists');
    p = parts({ fail: exists });
    await expect(chatIntake(p.intake as never, p.rental as never).register({ type: 'rental-ipa', ...input })).rejects.toBe(exists);
  });
});

describe('progress, counts and the upsell note', () => {
  it('tracks a receipt by its record’s status and label; an unknown status is its own label', async () => {
    const { chatIntake } = await load();
    const p = parts({
      receipts: { A: 'id-a', B: 'id-b', C: 'id-gone' },
      records: { 'id-a': { receiptNo: 'A', status: 'under_review' }, 'id-b': { receiptNo: 'B', status: 'archived' } },
    });
    const link = chatIntake(p.intake as never, p.rental as never);
    expect(await link.track('A')).toEqual({ status: 'under_review', label: '검토 중' });
    expect(await link.track('B')).toEqual({ status: 'archived', label: 'archived' });
    expect(await link.track('C')).toBeUndefined();
    p.calls.length = 0;
    expect(await link.track('Z')).toBeUndefined();
    expect(p.calls).toEqual([{ what: 'intake.byReceipt', args: ['Z'] }]);
  });

  it('counts every intake record', async () => {
    const { chatIntake } = await load();
    const p = parts();
    expect(await chatIntake(p.intake as never, p.rental as never).countReceipts()).toBe(42);
  });

  it('notes the upsell answer on the record, keeping its other extensions; an unknown receipt is left alone', async () => {
    const { chatIntake } = await load();
    const p = parts({ receipts: { A: 'id-a' }, records: { 'id-a': { receiptNo: 'A', status: 'pending', ext: { referral: 'X' } } } });
    const link = chatIntake(p.intake as never, p.rental as never);
    await link.recordUpsell('A', { code: 31, accepted: true });
    expect(p.calls.at(-1)).toEqual({ what: 'intake.modify', args: ['id-a', { receiptNo: 'A', status: 'pending', ext: { referral: 'X', upsell: { code: 31, accepted: true } } }] });
    p.calls.length = 0;
    await link.recordUpsell('Z', { code: 31, accepted: false });
    expect(p.calls.map((c) => c.what)).toEqual(['intake.byReceipt']);
  });
});

describe('mail', () => {
  it('queues a mail through the mail module’s writes, stamped with the clock at the call', async () => {
    const { chatMail } = await load();
    const { mailWrites } = await import('../../src/mail/mailer.js');
    let t = 1_000;
    const mail = chatMail(() => t);
    const msg = { to: 'a@b.io', subject: 's', text: 't' };
    t = 5_000;
    expect(mail.writes('m1', msg)).toEqual(mailWrites('m1', msg, 5_000));
    expect(mail.writes('m1', msg)).not.toEqual(mailWrites('m1', msg, 1_000));
  });
});
