/**
 * Seeded randomness that gives the same numbers on every machine: 32-bit integer arithmetic
 * (sfc32 seeded through splitmix32) and only +, -, *, / and sqrt on doubles, which IEEE 754 rounds
 * identically everywhere (JavaScript never fuses multiply-add).
 */

export function splitmix32(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  let z = x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** FNV-1a of a string, 32 bits. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const INV_2_32 = 1 / 4294967296;
const SQRT3 = Math.sqrt(3);

/** sfc32 (Small Fast Counting), period about 2^127. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d = 1;

  constructor(seed: number) {
    this.a = splitmix32(seed);
    this.b = splitmix32(this.a ^ 0x5bd1e995);
    this.c = splitmix32(this.b ^ 0x1b873593);
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  uniform(): number {
    return this.u32() * INV_2_32;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.uniform() * n);
  }

  /**
   * Approximately standard normal: the sum of four uniforms, centred and scaled to unit variance
   * (Irwin-Hall; bounded at +/-3.46, no transcendental functions, so bit-identical everywhere).
   */
  normal(): number {
    return (this.uniform() + this.uniform() + this.uniform() + this.uniform() - 2) * SQRT3;
  }
}
