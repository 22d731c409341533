import { describe, expect, it } from 'vitest';
import {
  BINGO_HEADER,
  BINGO_SIZE,
  CARDS_AT_BOOKING,
  FREE,
  MAX_CARDS,
  MIN_CARDS,
  THEMES,
  THEME_IDS,
  cryptoRng,
  generateCard,
  generateCards,
  hasCards,
  pickTheme,
  seededRng,
  theme,
  type Rng,
} from '../../src/ticket/bingo.js';

// Bingo cards (doc1): a 5x5 grid, header B I N G O, centre FREE; a ticket shows 1 to 4 cards,
// 2 are created at booking.

describe('bingo numbers of the document', () => {
  it('5x5, header B I N G O, FREE centre, 2 cards at booking, 1 to 4 per ticket', () => {
    expect(BINGO_SIZE).toBe(5);
    expect([...BINGO_HEADER]).toEqual(['B', 'I', 'N', 'G', 'O']);
    expect(FREE).toBe('FREE');
    expect(CARDS_AT_BOOKING).toBe(2);
    expect([MIN_CARDS, MAX_CARDS]).toEqual([1, 4]);
  });

  it('hasCards: 0 and 5 cards are refused, 1 to 4 kept', () => {
    const card = generateCard(THEMES[0]!, 1, seededRng(1));
    const n = (k: number) => Array.from({ length: k }, () => card);
    expect(hasCards(n(0))).toBe(false);
    expect(hasCards(n(1))).toBe(true);
    expect(hasCards(n(2))).toBe(true);
    expect(hasCards(n(4))).toBe(true);
    expect(hasCards(n(5))).toBe(false);
    expect(hasCards(null)).toBe(false);
    expect(hasCards('1234')).toBe(false);
    expect(hasCards({ length: 2 })).toBe(false);
  });
});

describe('themes', () => {
  it('ids are unique, looked up by id, and every item sits in its column pool', () => {
    expect(new Set(THEME_IDS).size).toBe(THEMES.length);
    expect(THEME_IDS).toEqual(THEMES.map((t) => t.id));
    for (const t of THEMES) expect(theme(t.id)).toBe(t);
    expect(theme('nope')).toBeUndefined();
    // emoji themes are split into graphemes, text themes on commas, blanks dropped
    expect(theme('animals')!.items[0]).toBe('🐶');
    expect(theme('animals')!.items.every((i) => i.trim() === i && i !== '')).toBe(true);
    expect(theme('korean-food')!.items.slice(0, 3)).toEqual(['김치', '비빔밥', '불고기']);
    expect(theme('stage')!.items).toContain('기타 솔로');
    expect(theme('music')!.items).toContain('🎟');
  });

  it('the six themes and their display names', () => {
    expect(THEMES.map((t) => [t.id, t.name, t.kind])).toEqual([
      ['animals', '동물 Animals', 'emoji'],
      ['food', '음식 Food', 'emoji'],
      ['music', '음악 Music', 'emoji'],
      ['sports', '스포츠 Sports', 'emoji'],
      ['korean-food', '한식 Korean food', 'text'],
      ['stage', '공연 Stage', 'text'],
    ]);
  });

  it('pickTheme draws with the rng over all themes', () => {
    expect(pickTheme(() => 0)).toBe(THEMES[0]);
    expect(pickTheme((n) => n - 1)).toBe(THEMES[THEMES.length - 1]);
    const seen = new Set<string>();
    const rng = seededRng(3);
    for (let i = 0; i < 200; i++) seen.add(pickTheme(rng).id);
    expect(seen.size).toBe(THEMES.length);
  });
});

describe('cards', () => {
  it('the seeded generator is mulberry32: reproducible values in [0, n)', () => {
    const r = seededRng(42);
    expect(Array.from({ length: 8 }, () => r(1000))).toEqual([601, 448, 852, 669, 174, 526, 273, 624]);
    const z = seededRng(0);
    expect(Array.from({ length: 4 }, () => z(2 ** 32))).toEqual([1144304738, 1416247, 958946056, 627933444]);
    const big = seededRng(-1);
    for (let i = 0; i < 1000; i++) {
      const v = big(7);
      expect(Number.isInteger(v) && v >= 0 && v < 7).toBe(true);
    }
    for (let i = 0; i < 100; i++) {
      const v = cryptoRng(3);
      expect(v >= 0 && v < 3).toBe(true);
    }
  });

  it('one reproducible card for a seed', () => {
    expect(generateCard(theme('korean-food')!, 1, seededRng(1)).cells).toEqual([
      ['부대찌개', '냉면', '만두', '떡볶이', '잡채'],
      ['라면', '족발', '삼계탕', '된장찌개', '김밥'],
      ['미역국', '비빔밥', 'FREE', '갈비', '김치찌개'],
      ['약과', '호떡', '보쌈', '파전', '떡국'],
      ['김치', '식혜', '삼겹살', '치킨', '빙수'],
    ]);
  });

  it('every item of a column pool is equally likely in every row (an unbiased shuffle)', () => {
    const th = theme('korean-food')!; // 28 items: pools of 6, 6, 6, 5, 5
    const rng = seededRng(2026);
    const cards = 6000;
    const counts = new Map<string, number>();
    for (let k = 0; k < cards; k++) {
      const card = generateCard(th, 1, rng);
      for (let r = 0; r < 5; r++) for (let c = 0; c < 5; c++) counts.set(`${r}:${c}:${card.cells[r]![c]}`, (counts.get(`${r}:${c}:${card.cells[r]![c]}`) ?? 0) + 1);
    }
    for (let c = 0; c < 5; c++) {
      const pool = th.items.filter((_, i) => i % 5 === c);
      for (let r = 0; r < 5; r++) {
        if (r === 2 && c === 2) continue;
        for (const item of pool) {
          const share = (counts.get(`${r}:${c}:${item}`) ?? 0) / cards;
          expect(Math.abs(share - 1 / pool.length), `${r}:${c}:${item}`).toBeLessThan(0.025);
        }
      }
    }
  });

  it('the last item of a 5-item pool can land in the first row (the shuffle reaches the end of the pool)', () => {
    const last: Rng = (n) => n - 1;
    const card = generateCard(theme('korean-food')!, 3, last);
    const pool3 = theme('korean-food')!.items.filter((_, i) => i % 5 === 3);
    expect(pool3).toHaveLength(5);
    expect(card.cells[0]![3]).toBe(pool3[4]);
    expect(card.no).toBe(3);
    expect(card.cells[2]![2]).toBe(FREE);
  });

  it('generateCards numbers from firstNo, keeps one theme, picks one when none or an unknown one is given', () => {
    const cards = generateCards(3, seededRng(5), 'stage', 2);
    expect(cards.map((c) => c.no)).toEqual([2, 3, 4]);
    expect(new Set(cards.map((c) => c.theme))).toEqual(new Set(['stage']));
    const firstTheme: Rng = (n) => (n === THEMES.length ? 0 : 0);
    expect(generateCards(1, firstTheme)[0]!.theme).toBe(THEMES[0]!.id);
    expect(generateCards(1, firstTheme, 'unknown-theme')[0]!.theme).toBe(THEMES[0]!.id);
    expect(generateCards(1, firstTheme, '')[0]!.theme).toBe(THEMES[0]!.id);
    const lastTheme: Rng = (n) => (n === THEMES.length ? n - 1 : 0);
    expect(generateCards(2, lastTheme)[1]!.theme).toBe(THEMES[THEMES.length - 1]!.id);
    expect(generateCards(2, seededRng(9)).map((c) => c.no)).toEqual([1, 2]);
    expect(generateCards(0, seededRng(9), 'stage')).toEqual([]);
  });
});
