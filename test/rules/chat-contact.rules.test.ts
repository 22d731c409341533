import { describe, expect, it, vi } from 'vitest';

// The contact fields the conversation collects (src/chat/contact.ts): phones after NFKC by the
// intake's rule, hyphenated; e-mail with one @, a dotted domain (lower-cased), a local part of at
// most 64 characters without leading, trailing or double dots, 254 characters in all; names of 1 to
// 40 letters, spaces, dots, hyphens and apostrophes, spacing collapsed; and the masks of a name and
// a phone. The module builds its patterns at load: each test imports it afresh.
const load = async () => {
  vi.resetModules();
  return import('../../src/chat/contact.js');
};

describe('phones', () => {
  it('are hyphenated after NFKC and trimming, by the intake’s rule', async () => {
    const { normalisePhone } = await load();
    expect(normalisePhone('01012345678')).toBe('010-1234-5678');
    expect(normalisePhone('０１０－１２３４－５６７８')).toBe('010-1234-5678');
    expect(normalisePhone('  010 1234 5678 ')).toBe('010-1234-5678');
    expect(normalisePhone('+82 10-1234-5678')).toBe('010-1234-5678');
    expect(normalisePhone('\u3000010-1234-5678\u3000')).toBe('010-1234-5678');
    expect(normalisePhone('02-123-4567')).toBe('02-123-4567');
    expect(normalisePhone('010-12')).toBeUndefined();
    expect(normalisePhone('전화 없음')).toBeUndefined();
  });
});

describe('e-mail addresses', () => {
  it('are taken trimmed and NFKC-folded, with the domain lower-cased and the local part as given', async () => {
    const { normaliseEmail } = await load();
    expect(normaliseEmail(' Kim.S+tag@Example.CO.KR ')).toBe('Kim.S+tag@example.co.kr');
    expect(normaliseEmail('ｋｉｍ＠ｅｘａｍｐｌｅ．ｃｏｍ')).toBe('kim@example.com');
    expect(normaliseEmail("a!#$%&'*+/=?^_`{|}~-@x-y.io")).toBe("a!#$%&'*+/=?^_`{|}~-@x-y.io");
  });

  it('need one @ and a dotted domain of labels that neither start nor end with a hyphen', async () => {
    const { normaliseEmail } = await load();
    for (const bad of ['kim', 'kim@', '@example.com', 'kim@example', 'a@b@example.com', 'kim @example.com', 'kim@exa mple.com', 'kim@-x.com', 'kim@x-.com', 'kim@x..com', 'kim@.x.com', 'kim@x.com.', '김@example.com', 'kim@예시.com', 'kim@x_y.com', '']) {
      expect(normaliseEmail(bad), bad).toBeUndefined();
    }
    expect(normaliseEmail(`a@${'b'.repeat(63)}.com`)).toBe(`a@${'b'.repeat(63)}.com`);
    expect(normaliseEmail(`a@${'b'.repeat(64)}.com`)).toBeUndefined();
    expect(normaliseEmail('a@b.c')).toBe('a@b.c');
    expect(normaliseEmail('a@b1-2c.d')).toBe('a@b1-2c.d');
  });

  it('keep the local part to 64 characters without leading, trailing or doubled dots', async () => {
    const { normaliseEmail } = await load();
    expect(normaliseEmail(`${'a'.repeat(64)}@x.io`)).toBe(`${'a'.repeat(64)}@x.io`);
    expect(normaliseEmail(`${'a'.repeat(65)}@x.io`)).toBeUndefined();
    expect(normaliseEmail('.kim@x.io')).toBeUndefined();
    expect(normaliseEmail('kim.@x.io')).toBeUndefined();
    expect(normaliseEmail('k..im@x.io')).toBeUndefined();
    expect(normaliseEmail('k.i.m@x.io')).toBe('k.i.m@x.io');
  });

  it('are at most 254 characters in all', async () => {
    const { normaliseEmail } = await load();
    const domain = (n: number) => `${Array.from({ length: Math.ceil(n / 50) }, () => 'd'.repeat(49)).join('.')}`.slice(0, n);
    const at = (total: number) => {
      const local = 'l'.repeat(60);
      let d = domain(total - local.length - 1 - 3);
      if (d.endsWith('.')) d = `${d.slice(0, -1)}e`;
      return `${local}@${d}.io`;
    };
    expect(at(254)).toHaveLength(254);
    expect(normaliseEmail(at(254))).toBe(at(254));
    expect(at(255)).toHaveLength(255);
    expect(normaliseEmail(at(255))).toBeUndefined();
    // the length is of the trimmed text
    expect(normaliseEmail(`  ${at(254)}  `)).toBe(at(254));
  });
});

describe('names', () => {
  it('are 1 to 40 letters of any script, spaces, dots, hyphens and apostrophes, starting with a letter', async () => {
    const { normaliseName } = await load();
    expect(normaliseName('  홍길동 ')).toBe('홍길동');
    expect(normaliseName('Mary  Jane\tO’Neil'.replace('’', "'"))).toBe("Mary Jane O'Neil");
    expect(normaliseName('J. R.-R. Tolkien')).toBe('J. R.-R. Tolkien');
    expect(normaliseName('Ｋｉｍ')).toBe('Kim');
    expect(normaliseName('김')).toBe('김');
    expect(normaliseName('홍길동\n 김')).toBe('홍길동 김');
    expect(normaliseName('José')).toBe('José');
    expect(normaliseName('Jose\u0301')).toBe('José'); // NFKC composes
    expect(normaliseName('가'.repeat(40))).toBe('가'.repeat(40));
    for (const bad of ['', '   ', '가'.repeat(41), '.kim', "'kim", '-kim', ' 1kim', 'kim1', 'kim!', 'kim_lee']) {
      expect(normaliseName(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });
});

describe('masks', () => {
  it('hide a name but its first and last letters (a two-letter name keeps its first, one letter none)', async () => {
    const { maskName } = await load();
    expect(maskName('홍길동')).toBe('홍*동');
    expect(maskName('김철')).toBe('김*');
    expect(maskName('김')).toBe('*');
    expect(maskName('')).toBe('*');
    expect(maskName('Alexander')).toBe('A*******r');
    expect(maskName('남궁민수')).toBe('남**수');
    expect(maskName('😀ab😀')).toBe('😀**😀');
  });

  it('hide the middle part of a hyphenated phone, or all digits but the last four', async () => {
    const { maskPhone } = await load();
    expect(maskPhone('010-1234-5678')).toBe('010-****-5678');
    expect(maskPhone('02-123-4567')).toBe('02-***-4567');
    expect(maskPhone('1588-1234')).toBe('****-1234');
    expect(maskPhone('01012345678')).toBe('*******5678');
    expect(maskPhone('+82-10-1234-5678')).toBe('+**-**-****-5678');
  });
});
