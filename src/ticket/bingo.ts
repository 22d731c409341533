import { randomInt } from 'node:crypto';

/**
 * Bingo cards: a 5x5 grid under the header B I N G O with a FREE centre. Every cell carries one item
 * of a content theme (emoji or text). As in 75-ball bingo, each column draws from its own pool: item
 * i of a theme belongs to column i mod 5, so a caller can announce "B — 🐯" and only the B column can
 * hold it. A card never repeats an item.
 */
export const BINGO_HEADER = ['B', 'I', 'N', 'G', 'O'] as const;
export const BINGO_SIZE = 5;
export const FREE = 'FREE';
export const CARDS_AT_BOOKING = 2;
export const MIN_CARDS = 1;
export const MAX_CARDS = 4;

export { THEME_IDS, THEMES, theme, type Theme, type ThemeKind } from './themes.js';
import { THEMES, theme, type Theme, type ThemeKind } from './themes.js';

export interface BingoCard {
  /** 1-based position on the ticket. */
  no: number;
  theme: string;
  kind: ThemeKind;
  header: string[];
  /** cells[row][column]; cells[2][2] is "FREE". */
  cells: string[][];
}

/** Uniform integer in [0, n). */
export type Rng = (n: number) => number;

/** Default randomness: crypto (unbiased). Cards guard nothing, but a guessable card spoils the game. */
export const cryptoRng: Rng = (n) => randomInt(n);

/** A seeded generator (mulberry32) for reproducible cards in tests and benches. */
export function seededRng(seed: number): Rng {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    const f = ((x ^ (x >>> 14)) >>> 0) / 4294967296;
    return Math.floor(f * n);
  };
}

export function pickTheme(rng: Rng): Theme {
  return THEMES[rng(THEMES.length)]!;
}

/** One card of `th`: column c holds 5 (4 in N) distinct items from the pool of items i ≡ c (mod 5). */
export function generateCard(th: Theme, no: number, rng: Rng): BingoCard {
  const cells: string[][] = Array.from({ length: BINGO_SIZE }, () => new Array<string>(BINGO_SIZE).fill(''));
  for (let c = 0; c < BINGO_SIZE; c++) {
    const pool = th.items.filter((_, i) => i % BINGO_SIZE === c);
    // partial Fisher-Yates: the first 5 of a shuffled pool
    for (let i = 0; i < BINGO_SIZE; i++) {
      const j = i + rng(pool.length - i);
      [pool[i], pool[j]] = [pool[j]!, pool[i]!];
    }
    for (let r = 0; r < BINGO_SIZE; r++) cells[r]![c] = pool[r]!;
  }
  cells[2]![2] = FREE;
  return { no, theme: th.id, kind: th.kind, header: [...BINGO_HEADER], cells };
}

/** `count` cards numbered from `firstNo`, all of one theme (given, or drawn with rng). */
export function generateCards(count: number, rng: Rng, themeId?: string, firstNo = 1): BingoCard[] {
  const th = (themeId && theme(themeId)) || pickTheme(rng);
  return Array.from({ length: count }, (_, i) => generateCard(th, firstNo + i, rng));
}

/** Whether a stored value is a valid list of 1 to 4 cards (the lazy migration fills anything else). */
export function hasCards(v: unknown): v is BingoCard[] {
  return Array.isArray(v) && v.length >= MIN_CARDS && v.length <= MAX_CARDS;
}
