import { describe, expect, it, vi } from 'vitest';

// Free text people name things with (src/text.ts): trimmed, bounded, and refused when it carries
// control characters (C0, DEL, C1, NUL), lone surrogates, or bidirectional overrides and isolates
// (U+202A-U+202E, U+2066-U+2069). Each range is tried at both ends and just outside. The module is
// loaded afresh in each test, so a change to its load-time patterns fails every test that reads them.
const load = () => {
  vi.resetModules();
  return import('../../src/text.js');
};

const CONTROL = 'must not contain control characters or bidirectional overrides';
const SURROGATE = 'must not contain lone surrogates';
const ch = (code: number) => String.fromCharCode(code);

describe('unsafeTextReason', () => {
  it('refuses C0 controls, DEL and C1 controls, at both ends of each range', async () => {
    const { unsafeTextReason } = await load();
    for (const code of [0x00, 0x01, 0x09, 0x0a, 0x1f, 0x7f, 0x80, 0x9f]) expect(unsafeTextReason(`a${ch(code)}b`), code.toString(16)).toBe(CONTROL);
    for (const code of [0x20, 0x7e, 0xa0, 0xa1]) expect(unsafeTextReason(`a${ch(code)}b`), code.toString(16)).toBeUndefined();
  });

  it('refuses bidirectional overrides and isolates, and not their neighbours', async () => {
    const { unsafeTextReason } = await load();
    for (const code of [0x202a, 0x202c, 0x202e, 0x2066, 0x2068, 0x2069]) expect(unsafeTextReason(`${ch(code)}abc`), code.toString(16)).toBe(CONTROL);
    for (const code of [0x2029, 0x202f, 0x2065, 0x206a, 0x200f]) expect(unsafeTextReason(`${ch(code)}abc`), code.toString(16)).toBeUndefined();
  });

  it('refuses a lone surrogate, high or low, anywhere; a pair is one character', async () => {
    const { unsafeTextReason } = await load();
    expect(unsafeTextReason('😀 좋아요')).toBeUndefined();
    expect(unsafeTextReason('\ud800\udc00')).toBeUndefined();
    expect(unsafeTextReason('\udbff\udfff')).toBeUndefined();
    for (const s of ['\ud800', 'a\ud800b', 'ab\udbff', '\udc00', 'a\udfffb', '\udc00\ud800', '😀\ud83d', '\ude00😀']) expect(unsafeTextReason(s), JSON.stringify(s)).toBe(SURROGATE);
    for (const s of ['\ud7ff', '\ue000', 'a\uffffb']) expect(unsafeTextReason(s), JSON.stringify(s)).toBeUndefined();
    // a control character is named first
    expect(unsafeTextReason('\ud800\u0000')).toBe(CONTROL);
  });

  it('passes ordinary text', async () => {
    const { unsafeTextReason } = await load();
    for (const s of ['', 'Grand Hall', '서울 공연장', 'Ｆｕｌｌ', 'مرحبا', 'a\u200db']) expect(unsafeTextReason(s)).toBeUndefined();
  });
});

describe('label: a one-line name of 1..max characters after trimming', () => {
  it('trims, and accepts 1 and max characters', async () => {
    const { label } = await load();
    const l = label(5);
    expect(l.parse('  a  ')).toBe('a');
    expect(l.parse(' 가나다라마 ')).toBe('가나다라마');
  });

  it('refuses empty, over max, and unsafe text with its reason', async () => {
    const { label } = await load();
    const l = label(5);
    const issues = (v: unknown) => l.safeParse(v).error?.issues.map((i) => [i.code, i.message]);
    expect(issues('')).toEqual([['too_small', 'must not be empty']]);
    expect(issues('   ')).toEqual([['too_small', 'must not be empty']]);
    expect(issues('abcdef')).toEqual([['too_big', 'must be at most 5 characters']]);
    expect(issues('a\nb')).toEqual([['custom', CONTROL]]);
    expect(issues('a\tb')).toEqual([['custom', CONTROL]]);
    expect(issues('a\ud800')).toEqual([['custom', SURROGATE]]);
    expect(l.safeParse(5).success).toBe(false);
  });
});

describe('note: longer text that may span lines', () => {
  it('keeps line breaks and tabs, not trimmed', async () => {
    const { note } = await load();
    expect(note(10).parse(' a\r\nb\tc ')).toBe(' a\r\nb\tc ');
    expect(note(3).parse('')).toBe('');
  });

  it('refuses other control characters, overrides, lone surrogates and over max', async () => {
    const { note } = await load();
    const issues = (v: unknown) => note(5).safeParse(v).error?.issues.map((i) => [i.code, i.message]);
    expect(issues('a\u0000b')).toEqual([['custom', CONTROL]]);
    expect(issues('a\u000bb')).toEqual([['custom', CONTROL]]);
    expect(issues('a\u202eb')).toEqual([['custom', CONTROL]]);
    expect(issues('a\udc00')).toEqual([['custom', SURROGATE]]);
    expect(issues('abcdef')).toEqual([['too_big', 'must be at most 5 characters']]);
    expect(issues('abcde')).toBeUndefined();
  });
});
