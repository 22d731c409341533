import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CODE_ALPHABET, CODE_BITS, CODE_LENGTH, CODE_PREFIX, codeInText, generateCode, isCode, parseCode } from '../../src/ticket/code.js';

// Ticket code: "TK-" followed by eight characters (doc1, Resources). The alphabet leaves out the
// look-alikes 0/O and 1/I/L.
const symbol = fc.constantFrom(...CODE_ALPHABET);
const body = fc.array(symbol, { minLength: 8, maxLength: 8 }).map((a) => a.join(''));
const code = body.map((b) => `TK-${b}`);

describe('ticket code constants', () => {
  it('TK- and eight symbols of 31, about 39.6 bits', () => {
    expect(CODE_PREFIX).toBe('TK-');
    expect(CODE_LENGTH).toBe(8);
    expect(CODE_ALPHABET).toBe('23456789ABCDEFGHJKMNPQRSTUVWXYZ');
    expect(CODE_BITS).toBe(39.6);
  });
});

describe('isCode', () => {
  it('accepts exactly TK- and 8 symbols: 7 and 9 are refused', () => {
    expect(isCode('TK-ABCD2345')).toBe(true);
    expect(isCode('TK-ABCD234')).toBe(false);
    expect(isCode('TK-ABCD23456')).toBe(false);
    expect(isCode('tk-abcd2345')).toBe(false);
    expect(isCode('xTK-ABCD2345')).toBe(false);
    expect(isCode('TK-ABCD2340')).toBe(false);
  });
  it('every generated code is a code', () => {
    for (let i = 0; i < 50; i++) expect(isCode(generateCode())).toBe(true);
  });
});

describe('parseCode', () => {
  it('round-trips: a canonical code parses to itself, in any case and with spaces', () => {
    fc.assert(
      fc.property(code, fc.integer({ min: 0, max: 11 }), (c, cut) => {
        expect(parseCode(c)).toBe(c);
        expect(parseCode(c.toLowerCase())).toBe(c);
        expect(parseCode(`  ${c.slice(0, cut)} ${c.slice(cut)}\t`)).toBe(c);
        expect(parseCode(`\n${c}\n`)).toBe(c);
      }),
    );
  });

  it('is idempotent: parsing a parsed value gives the same value', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (s) => {
        const once = parseCode(s);
        if (once !== undefined) expect(parseCode(once)).toBe(once);
      }),
    );
  });

  it('adds the prefix to the 8 bare characters and to "TK" without hyphen', () => {
    fc.assert(
      fc.property(body, (b) => {
        expect(parseCode(b)).toBe(`TK-${b}`);
        expect(parseCode(`TK${b}`)).toBe(`TK-${b}`);
        expect(parseCode(`tk ${b.toLowerCase()}`)).toBe(`TK-${b}`);
      }),
    );
  });

  it('never takes the last 8 characters of some other 10-character input', () => {
    fc.assert(
      fc.property(body, fc.constantFrom('XX', 'TX', 'KT', 'T-', '-K', 'AB', '22'), (b, head) => {
        expect(parseCode(`${head}${b}`)).toBeUndefined();
      }),
    );
    expect(parseCode('ZKABCD2345')).toBeUndefined();
    expect(parseCode('ATKABCD234')).toBeUndefined();
  });

  it('refuses 7 and 9 characters, with or without prefix', () => {
    fc.assert(
      fc.property(body, symbol, (b, extra) => {
        expect(parseCode(b.slice(1))).toBeUndefined();
        expect(parseCode(b + extra)).toBeUndefined();
        expect(parseCode(`TK-${b.slice(1)}`)).toBeUndefined();
        expect(parseCode(`TK-${b}${extra}`)).toBeUndefined();
        expect(parseCode(`TK${b.slice(1)}`)).toBeUndefined();
        expect(parseCode(`TK${b}${extra}`)).toBeUndefined();
      }),
    );
  });

  it('refuses look-alike and foreign characters anywhere', () => {
    fc.assert(
      fc.property(body, fc.integer({ min: 0, max: 7 }), fc.constantFrom('0', '1', 'I', 'L', 'O', '-', '_', '가', '!'), (b, at, bad) => {
        const s = b.slice(0, at) + bad + b.slice(at + 1);
        expect(parseCode(`TK-${s}`)).toBeUndefined();
        expect(parseCode(s)).toBeUndefined();
      }),
    );
  });

  it('whatever it returns is a canonical code', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 16 }), code, body), (s) => {
        const out = parseCode(s);
        if (out !== undefined) expect(isCode(out)).toBe(true);
      }),
    );
  });

  it('input length: 64 characters are read, 65 refused', () => {
    const c = 'TK-ABCD2345';
    const pad = (n: number) => ' '.repeat(n - c.length) + c;
    expect(parseCode(pad(63))).toBe(c);
    expect(parseCode(pad(64))).toBe(c);
    expect(parseCode(pad(65))).toBeUndefined();
    expect(parseCode(42 as unknown as string)).toBeUndefined();
    expect(parseCode(undefined as unknown as string)).toBeUndefined();
  });

  it('8 characters starting with TK are a bare code, not a prefixed 6', () => {
    expect(parseCode('TKABCD23')).toBe('TK-TKABCD23');
    expect(parseCode('tk2345AB')).toBe('TK-TK2345AB');
    expect(parseCode('TKABCD234')).toBeUndefined();
  });

  it('inner runs of several spaces are dropped', () => {
    expect(parseCode('TK-AB  CD  2345')).toBe('TK-ABCD2345');
    expect(parseCode('AB  CD \t 2345')).toBe('TK-ABCD2345');
  });
});

describe('codeInText', () => {
  it('finds a code inside a URL or text, upper-casing it', () => {
    fc.assert(
      fc.property(code, fc.constantFrom('https://maru.example/mticket/', 'code: ', ''), fc.constantFrom('', ' ', '?x=1', '/'), (c, before, after) => {
        expect(codeInText(`${before}${c}${after}`)).toBe(c);
        expect(codeInText(`${before}${c.toLowerCase()}${after}`)).toBe(c);
      }),
    );
  });
  it('refuses a code followed by a ninth symbol, or too short', () => {
    expect(codeInText('TK-ABCD23456')).toBeUndefined();
    expect(codeInText('TK-ABCD234')).toBeUndefined();
    expect(codeInText('TK-ABCD234O')).toBeUndefined();
    expect(codeInText('ABCD2345')).toBeUndefined();
  });
});
