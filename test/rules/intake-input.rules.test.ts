import { describe, expect, it, vi } from 'vitest';

// What an intake registration carries (src/intake/input.ts): a Korean phone number normalised to
// hyphenated digits, applicant text trimmed and bounded without control characters, an optional
// e-mail folded to lower case, and a 400 invalid_body naming every wrong field. The module is
// loaded afresh inside each test, so a change to its load-time schema fails tests (and every test
// covers the schema, so a mutation run tries each such change against all of them).
const load = () => {
  vi.resetModules();
  return import('../../src/intake/input.js');
};

const base = { type: 'consult', contactPhone: '010-1234-5678' };

/** The issues of a refused registration (field and message), or the parsed value. */
async function refused(raw: unknown): Promise<{ message: string; issues: { field: string; message: string }[] }> {
  const { parseIntakeInput } = await load();
  const { AppError } = await import('../../src/errors.js');
  let e: unknown;
  try {
    parseIntakeInput(raw);
  } catch (err) {
    e = err;
  }
  expect(e).toBeInstanceOf(AppError);
  const a = e as InstanceType<typeof AppError>;
  expect([a.kind, a.status, a.code]).toEqual(['invalid', 400, 'invalid_body']);
  return { message: a.message, issues: (a.details as { issues: { field: string; message: string }[] }).issues };
}

describe('normalisePhone', () => {
  it('takes mobile numbers of every carrier prefix, with 3 or 4 middle digits', async () => {
    const { normalisePhone } = await load();
    for (const p of ['010', '011', '016', '017', '018', '019']) expect(normalisePhone(`${p}12345678`)).toBe(`${p}-1234-5678`);
    expect(normalisePhone('0111234567')).toBe('011-123-4567');
    for (const p of ['012', '013', '014', '015']) expect(normalisePhone(`${p}12345678`)).toBeUndefined();
  });

  it('takes Seoul, the area codes 031-065, 070 and 050(2-8)', async () => {
    const { normalisePhone } = await load();
    expect(normalisePhone('021234567')).toBe('02-123-4567');
    expect(normalisePhone('0212345678')).toBe('02-1234-5678');
    expect(normalisePhone('0311234567')).toBe('031-123-4567');
    expect(normalisePhone('03512345678')).toBe('035-1234-5678');
    expect(normalisePhone('0641234567')).toBe('064-123-4567');
    expect(normalisePhone('0651234567')).toBe('065-123-4567');
    for (const bad of ['0301234567', '0361234567', '0661234567', '0711234567', '0091234567']) expect(normalisePhone(bad)).toBeUndefined();
    expect(normalisePhone('07012345678')).toBe('070-1234-5678');
    expect(normalisePhone('05012345678')).toBe('050-1234-5678');
    expect(normalisePhone('05021234567')).toBe('0502-123-4567');
    expect(normalisePhone('050812345678')).toBe('0508-1234-5678');
    expect(normalisePhone('05091234567')).toBe('050-9123-4567');
  });

  it('takes the nationwide numbers 15xx-18xx', async () => {
    const { normalisePhone } = await load();
    expect(normalisePhone('15881234')).toBe('1588-1234');
    expect(normalisePhone('1544-1234')).toBe('1544-1234');
    expect(normalisePhone('18991234')).toBe('1899-1234');
    for (const bad of ['14881234', '19881234', '1588123', '158812345', '25881234']) expect(normalisePhone(bad)).toBeUndefined();
  });

  it('drops spaces, hyphens, brackets and dots, and nothing else', async () => {
    const { normalisePhone } = await load();
    expect(normalisePhone(' 010 1234 5678 ')).toBe('010-1234-5678');
    expect(normalisePhone('010\t1234\t5678')).toBe('010-1234-5678');
    expect(normalisePhone('(02)123-4567')).toBe('02-123-4567');
    expect(normalisePhone('010.1234.5678')).toBe('010-1234-5678');
    expect(normalisePhone('010-1234-5678')).toBe('010-1234-5678');
    expect(normalisePhone('010/1234/5678')).toBeUndefined();
    expect(normalisePhone('010_1234_5678')).toBeUndefined();
    expect(normalisePhone('010-1234-567a')).toBeUndefined();
    expect(normalisePhone('a010-1234-5678')).toBeUndefined();
    expect(normalisePhone('010-1234-5678a')).toBeUndefined();
    expect(normalisePhone('')).toBeUndefined();
    expect(normalisePhone('90101234567')).toBeUndefined(); // a number inside a longer one
  });

  it('reads +82 as the leading 0, with or without it', async () => {
    const { normalisePhone } = await load();
    expect(normalisePhone('+82 10 1234 5678')).toBe('010-1234-5678');
    expect(normalisePhone('+821012345678')).toBe('010-1234-5678');
    expect(normalisePhone('+82 010 1234 5678')).toBe('010-1234-5678');
    expect(normalisePhone('+82-2-123-4567')).toBe('02-123-4567');
    expect(normalisePhone('+82 10 1030 5678')).toBe('010-1030-5678');
    expect(normalisePhone('82 10 1234 5678')).toBeUndefined();
    expect(normalisePhone('+81 10 1234 5678')).toBeUndefined();
  });
});

describe('parseIntakeInput', () => {
  it('fills the missing fields: empty text, a null e-mail, the normalised phone', async () => {
    const { parseIntakeInput } = await load();
    expect(parseIntakeInput({ type: 'chat', contactPhone: '+82 10 1234 5678' })).toEqual({
      type: 'chat',
      organization: '',
      department: '',
      contactName: '',
      contactPhone: '010-1234-5678',
      email: null,
      remarks: '',
    });
    const full = parseIntakeInput({
      type: 'rental-ipa',
      applicantType: 'government',
      organization: '  서울시청 ',
      department: null,
      contactName: '김민지',
      contactPhone: '02 123 4567',
      email: 'Min.Ji@Seoul.GO.kr',
      buildingType: ' 공공청사 ',
      remarks: '첫 줄\n둘째 줄\t탭',
    });
    expect(full).toEqual({
      type: 'rental-ipa',
      applicantType: 'government',
      organization: '서울시청',
      department: '',
      contactName: '김민지',
      contactPhone: '02-123-4567',
      email: 'min.ji@seoul.go.kr',
      buildingType: '공공청사',
      remarks: '첫 줄\n둘째 줄\t탭',
    });
    expect(parseIntakeInput({ ...base, email: '' }).email).toBeNull();
    expect(parseIntakeInput({ ...base, email: null }).email).toBeNull();
  });

  it('knows the intake and applicant types', async () => {
    const { INTAKE_TYPES, APPLICANT_TYPES, parseIntakeInput } = await load();
    expect(INTAKE_TYPES).toEqual(['rental-ipa', 'rental-db', 'chat', 'consult']);
    expect(APPLICANT_TYPES).toEqual(['government', 'business', 'individual']);
    for (const type of INTAKE_TYPES) expect(parseIntakeInput({ ...base, type }).type).toBe(type);
    for (const applicantType of APPLICANT_TYPES) expect(parseIntakeInput({ ...base, applicantType }).applicantType).toBe(applicantType);
    expect((await refused({ ...base, type: 'rental' })).issues).toEqual([{ field: 'type', message: 'must be one of rental-ipa, rental-db, chat, consult' }]);
    expect((await refused({ ...base, applicantType: 'school' })).issues).toEqual([
      { field: 'applicantType', message: 'must be one of government, business, individual' },
    ]);
  });

  it('bounds the text fields after trimming: 100 characters, remarks 2000, building type 40', async () => {
    const { parseIntakeInput } = await load();
    const ok = parseIntakeInput({ ...base, organization: ` ${'가'.repeat(100)} `, contactName: 'a'.repeat(100), department: 'b'.repeat(100), remarks: 'c'.repeat(2000), buildingType: 'd'.repeat(40) });
    expect(ok.organization).toBe('가'.repeat(100));
    for (const field of ['organization', 'department', 'contactName']) {
      expect((await refused({ ...base, [field]: 'x'.repeat(101) })).issues).toEqual([{ field, message: 'must be at most 100 characters' }]);
    }
    expect((await refused({ ...base, remarks: 'x'.repeat(2001) })).issues).toEqual([{ field: 'remarks', message: 'must be at most 2000 characters' }]);
    expect((await refused({ ...base, buildingType: 'x'.repeat(41) })).issues.map((i) => i.field)).toEqual(['buildingType']);
  });

  it('refuses control characters and bidirectional overrides; only remarks may span lines', async () => {
    const { parseIntakeInput } = await load();
    const control = 'must not contain control characters or bidirectional overrides';
    for (const field of ['organization', 'department', 'contactName']) {
      expect((await refused({ ...base, [field]: '서울\n시청' })).issues).toEqual([{ field, message: control }]);
      expect((await refused({ ...base, [field]: 'a\u202eb' })).issues).toEqual([{ field, message: control }]);
    }
    expect(parseIntakeInput({ ...base, remarks: 'a\r\nb\tc' }).remarks).toBe('a\r\nb\tc');
    expect((await refused({ ...base, remarks: 'a\u0000b' })).issues).toEqual([{ field: 'remarks', message: control }]);
    expect((await refused({ ...base, remarks: 'a\ud800b' })).issues).toEqual([{ field: 'remarks', message: 'must not contain lone surrogates' }]);
  });

  it('refuses a missing or wrong phone number, and one over 40 characters', async () => {
    const { parseIntakeInput } = await load();
    expect((await refused({ type: 'consult' })).issues).toEqual([{ field: 'contactPhone', message: 'is required' }]);
    const wrong = await refused({ ...base, contactPhone: '12345' });
    expect(wrong.issues).toEqual([{ field: 'contactPhone', message: 'must be a Korean phone number such as 010-1234-5678' }]);
    expect(wrong.message).toBe('contactPhone: must be a Korean phone number such as 010-1234-5678');
    expect(parseIntakeInput({ ...base, contactPhone: `010-1234-5678${' '.repeat(27)}` }).contactPhone).toBe('010-1234-5678');
    expect((await refused({ ...base, contactPhone: `010-1234-5678${' '.repeat(28)}` })).issues.map((i) => i.field)).toEqual(['contactPhone']);
  });

  it('refuses an e-mail that is not one, or over 254 characters', async () => {
    const { parseIntakeInput } = await load();
    expect((await refused({ ...base, email: 'not-mail' })).issues).toEqual([{ field: 'email', message: 'must be an e-mail address' }]);
    const long = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(58)}.kr`;
    expect(long).toHaveLength(254);
    expect(parseIntakeInput({ ...base, email: long }).email).toBe(long);
    const over = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(59)}.kr`;
    expect((await refused({ ...base, email: over })).issues.map((i) => i.field)).toEqual(['email']);
  });

  it('names every wrong field, unknown fields and a body that is not an object', async () => {
    const r = await refused({ type: 'x', contactPhone: '1', contactName: 'a\u0007' });
    expect(r.issues.map((i) => i.field)).toEqual(['type', 'contactName', 'contactPhone']);
    expect(r.message).toBe(`type: ${r.issues[0]!.message}`);
    const extra = await refused({ ...base, password: 'x' });
    expect(extra.issues).toHaveLength(1);
    expect(extra.issues[0]!.field).toBe('body');
    expect(extra.issues[0]!.message).toContain('password');
    expect((await refused('text')).issues[0]!.field).toBe('body');
  });

  it('gives the schema\'s own refusals the custom issue code (as the routes read it)', async () => {
    const { intakeInput, contactPhone } = await load();
    expect(contactPhone.safeParse('12345').error?.issues.map((i) => [i.code, i.message])).toEqual([
      ['custom', 'must be a Korean phone number such as 010-1234-5678'],
    ]);
    expect(intakeInput.safeParse({ ...base, contactName: 'a\u0007' }).error?.issues.map((i) => [i.code, i.path])).toEqual([['custom', ['contactName']]]);
  });
});
