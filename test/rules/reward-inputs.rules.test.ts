import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';

// The reward service's input rules (src/reward/inputs.ts; document 3): a member id of 1 to 64
// characters, kc a whole number of units from 1 to 27, v a whole percent from 100 to 200, an amount
// above 0 with at most 2 decimals, a display name of 1 to 64 code points (NFC, trimmed) without
// control characters, a country of two upper-case letters and a language of two lower-case ones, an
// Ed25519 public key as base64url of its 32 raw bytes; a refusal is a 400 naming the first field.
// The schemas are built when the module loads, so it is loaded afresh in each test.
const load = async () => {
  vi.resetModules();
  return { ...(await import('../../src/reward/inputs.js')), AppError: (await import('../../src/errors.js')).AppError };
};

const refusal = (f: () => unknown): { status: number; code: string; message: string; details: unknown } => {
  try {
    f();
  } catch (e) {
    const a = e as { status: number; code: string; message: string; details: unknown };
    return { status: a.status, code: a.code, message: a.message, details: a.details };
  }
  throw new Error('expected a refusal');
};

const publicKey = () => {
  const der = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
  return der.subarray(der.length - 32).toString('base64url');
};

describe('work', () => {
  it('kc is 1 to 27 whole units: 0 and 28 refused, 1 and 27 taken', async () => {
    const { parseInput, workSchema } = await load();
    expect(parseInput(workSchema, { id: 'm_1', kc: 1, v: 100 })).toEqual({ id: 'm_1', kc: 1, v: 100 });
    expect(parseInput(workSchema, { id: 'm_1', kc: 27, v: 200 })).toEqual({ id: 'm_1', kc: 27, v: 200 });
    for (const kc of [0, 28, 1.5, '3']) {
      const r = refusal(() => parseInput(workSchema, { id: 'm_1', kc, v: 100 }));
      expect([r.status, r.code], String(kc)).toEqual([400, 'invalid_kc']);
      expect(r.message.startsWith('kc: ')).toBe(true);
    }
  });

  it('v is a whole percent from 100 to 200: 99 and 201 refused', async () => {
    const { parseInput, workSchema } = await load();
    for (const v of [99, 201, 150.5]) expect(refusal(() => parseInput(workSchema, { id: 'm_1', kc: 1, v })).code, String(v)).toBe('invalid_v');
    expect(parseInput(workSchema, { id: 'm_1', kc: 3, v: 150 }).v).toBe(150);
  });

  it('the member id is 1 to 64 characters', async () => {
    const { parseInput, workSchema, memberIdSchema } = await load();
    expect(parseInput(memberIdSchema, 'x'.repeat(64))).toBe('x'.repeat(64));
    for (const id of ['', 'x'.repeat(65), 7]) expect(refusal(() => parseInput(workSchema, { id, kc: 1, v: 100 })).code).toBe('invalid_id');
  });

  it('names the first failing field and lists every issue', async () => {
    const { parseInput, workSchema } = await load();
    const r = refusal(() => parseInput(workSchema, { id: '', kc: 0, v: 100 }));
    expect(r.code).toBe('invalid_id');
    expect(r.details).toEqual({
      field: 'id',
      issues: [
        { path: 'id', message: expect.any(String) },
        { path: 'kc', message: expect.any(String) },
      ],
    });
    expect(r.message).toBe(`id: ${(r.details as { issues: { message: string }[] }).issues[0]!.message}`);
    // not an object at all: the input itself
    expect(refusal(() => parseInput(workSchema, 'nope'))).toMatchObject({ status: 400, code: 'invalid_input', details: { field: 'input' } });
  });
});

describe('exchange amounts', () => {
  it('above 0 with at most 2 decimals, as a number or a decimal string, in hundredths', async () => {
    const { parseInput, exchangeSchema } = await load();
    expect(parseInput(exchangeSchema, { id: 'm_1', amt: 0.01 })).toEqual({ id: 'm_1', amt: 1 });
    expect(parseInput(exchangeSchema, { id: 'm_1', amt: '12.5' }).amt).toBe(1250);
    expect(parseInput(exchangeSchema, { id: 'm_1', amt: ' 3 ' }).amt).toBe(300);
    for (const amt of [0, '0.00', -1, 0.001, '1.234', 'abc', null, Number.NaN]) {
      const r = refusal(() => parseInput(exchangeSchema, { id: 'm_1', amt }));
      expect(r.code, String(amt)).toBe('invalid_amount');
      expect(r.status).toBe(400);
    }
    expect(refusal(() => parseInput(exchangeSchema, { id: 'm_1', amt: 0 })).message).toBe('amt: must be a number above 0 with at most 2 decimals');
  });
});

describe('display names', () => {
  it('1 to 64 code points after NFC and trimming', async () => {
    const { parseInput, displayName } = await load();
    expect(parseInput(displayName, '  김철수  ')).toBe('김철수');
    expect(parseInput(displayName, ' A ')).toBe('A');
    // decomposed Hangul is composed: 3 code points, not 6
    expect(parseInput(displayName, '\u1100\u1161\u11a8'.repeat(64))).toBe('각'.repeat(64));
    // 64 astral characters (two UTF-16 units each) are 64 code points
    expect(parseInput(displayName, '😀'.repeat(64))).toBe('😀'.repeat(64));
    expect(refusal(() => parseInput(displayName, '😀'.repeat(65))).message).toBe('input: must be 1 to 64 characters');
    expect(refusal(() => parseInput(displayName, '   ')).message).toBe('input: must be 1 to 64 characters');
    expect(refusal(() => parseInput(displayName, '')).message).toBe('input: must be 1 to 64 characters');
  });

  it('refuses control characters, lone surrogates and bidirectional overrides', async () => {
    const { parseInput, displayName } = await load();
    for (const bad of ['a\u0000b', 'a\u202eb', 'a\ud800b', 'a\nb']) {
      expect(refusal(() => parseInput(displayName, bad)).message, JSON.stringify(bad)).toBe(
        'input: must not contain control characters, lone surrogates or bidirectional overrides',
      );
    }
  });
});

describe('culture zones and members', () => {
  it('a country is two upper-case letters, a language two lower-case ones', async () => {
    const { parseInput, cultureSchema } = await load();
    expect(parseInput(cultureSchema, { country: 'KR', lang: 'ko', name: ' 서울 ' })).toEqual({ country: 'KR', lang: 'ko', name: '서울' });
    for (const country of ['kr', 'KOR', 'K', 'xKR', 'KRx']) expect(refusal(() => parseInput(cultureSchema, { country, lang: 'ko', name: 'n' })).code, country).toBe('invalid_country');
    expect(refusal(() => parseInput(cultureSchema, { country: 'kr', lang: 'ko', name: 'n' })).message).toBe('country: ISO 3166-1 alpha-2, upper case');
    for (const lang of ['KO', 'kor', 'k', 'xko', 'kox']) expect(refusal(() => parseInput(cultureSchema, { country: 'KR', lang, name: 'n' })).code, lang).toBe('invalid_lang');
    expect(refusal(() => parseInput(cultureSchema, { country: 'KR', lang: 'KO', name: 'n' })).message).toBe('lang: ISO 639-1, lower case');
    expect(refusal(() => parseInput(cultureSchema, { country: 'KR', lang: 'ko', name: '' })).code).toBe('invalid_name');
  });

  it('a member has a name, a zone of 1 to 200 characters and perhaps an Ed25519 public key', async () => {
    const { parseInput, createMemberSchema } = await load();
    const key = publicKey();
    expect(parseInput(createMemberSchema, { name: 'Lee', zone: 'z'.repeat(200), public_key: key })).toEqual({ name: 'Lee', zone: 'z'.repeat(200), public_key: key });
    expect(parseInput(createMemberSchema, { name: 'Lee', zone: 'z' })).toEqual({ name: 'Lee', zone: 'z' });
    for (const zone of ['', 'z'.repeat(201)]) expect(refusal(() => parseInput(createMemberSchema, { name: 'Lee', zone })).code).toBe('invalid_zone');
    for (const public_key of [key.slice(1), 'A'.repeat(513), 'not a key'])
      expect(refusal(() => parseInput(createMemberSchema, { name: 'Lee', zone: 'z', public_key })).code).toBe('invalid_public_key');
    expect(refusal(() => parseInput(createMemberSchema, { name: 'Lee', zone: 'z', public_key: 'not a key' })).message).toBe(
      'public_key: must be an Ed25519 public key: base64url of its 32 raw bytes',
    );
  });
});
