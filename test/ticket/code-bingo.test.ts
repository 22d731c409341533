import { describe, expect, it } from 'vitest';
import {
  BINGO_HEADER,
  FREE,
  THEMES,
  generateCard,
  generateCards,
  seededRng,
  theme,
} from '../../src/ticket/bingo.js';
import { CODE_ALPHABET, CODE_BITS, codeInText, generateCode, parseCode } from '../../src/ticket/code.js';

describe('ticket codes', () => {
  it('are TK- and 8 characters of an alphabet without look-alikes', () => {
    expect(CODE_ALPHABET).toHaveLength(31);
    for (const c of '01ILO') expect(CODE_ALPHABET).not.toContain(c);
    expect(CODE_BITS).toBeCloseTo(39.6, 1);
    const seen = new Set<string>();
    const counts = new Map<string, number>();
    for (let i = 0; i < 5000; i++) {
      const code = generateCode();
      expect(code).toMatch(/^TK-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$/);
      seen.add(code);
      for (const ch of code.slice(3)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    expect(seen.size).toBe(5000);
    // every symbol is used, none grossly over-represented (40000 draws, 1290 expected each)
    expect(counts.size).toBe(31);
    for (const n of counts.values()) expect(n).toBeGreaterThan(1000);
  });

  it('normalise what people type and what cameras read', () => {
    expect(parseCode('TK-ABCD2345')).toBe('TK-ABCD2345');
    expect(parseCode(' tk-abcd2345 ')).toBe('TK-ABCD2345');
    expect(parseCode('abcd2345')).toBe('TK-ABCD2345');
    expect(parseCode('TKABCD2345')).toBe('TK-ABCD2345');
    expect(parseCode('TK-ABCD 2345')).toBe('TK-ABCD2345');
    for (const bad of ['', 'TK-', 'TK-ABCD234', 'TK-ABCD23456', 'TK-ABCD234O', 'TK-ABCD2341', 'XX-ABCD2345', 'TK_ABCD2345', 'x'.repeat(100)]) {
      expect(parseCode(bad), bad).toBeUndefined();
    }
    expect(codeInText('https://example.kr/mticket/TK-ABCD2345')).toBe('TK-ABCD2345');
    expect(codeInText('nothing here')).toBeUndefined();
  });
});

describe('bingo cards', () => {
  it('every theme has at least 25 distinct items (5 per column pool)', () => {
    expect(THEMES.length).toBeGreaterThanOrEqual(4);
    expect(new Set(THEMES.map((t) => t.kind))).toEqual(new Set(['emoji', 'text']));
    for (const t of THEMES) {
      expect(new Set(t.items).size, t.id).toBe(t.items.length);
      expect(t.items.length, t.id).toBeGreaterThanOrEqual(25);
      for (const item of t.items) expect(item.trim(), t.id).toBe(item);
    }
  });

  it('are 5x5 under B I N G O with a FREE centre, distinct cells, each column from its own pool', () => {
    const rng = seededRng(7);
    for (const t of THEMES) {
      for (let n = 0; n < 20; n++) {
        const card = generateCard(t, 1, rng);
        expect(card.header).toEqual([...BINGO_HEADER]);
        expect(card.cells).toHaveLength(5);
        for (const row of card.cells) expect(row).toHaveLength(5);
        expect(card.cells[2]![2]).toBe(FREE);
        const items = card.cells.flat().filter((c) => c !== FREE);
        expect(new Set(items).size).toBe(24);
        for (let c = 0; c < 5; c++) {
          for (let r = 0; r < 5; r++) {
            if (r === 2 && c === 2) continue;
            expect(t.items.indexOf(card.cells[r]![c]!) % 5).toBe(c);
          }
        }
      }
    }
  });

  it('are reproducible with a seed, themed as asked, numbered', () => {
    const a = generateCards(2, seededRng(42), 'korean-food');
    const b = generateCards(2, seededRng(42), 'korean-food');
    expect(a).toEqual(b);
    expect(a.map((c) => c.no)).toEqual([1, 2]);
    expect(a.every((c) => c.theme === 'korean-food' && c.kind === 'text')).toBe(true);
    expect(a[0]!.cells).not.toEqual(a[1]!.cells);
    expect(theme('animals')?.kind).toBe('emoji');
  });
});
