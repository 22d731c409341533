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

/**
 * sfc32 (Small Fast Counting), period about 2^127. The four state words live in an Int32Array: every
 * state value is an int32, and typed storage keeps the optimised code from deoptimising when a word
 * leaves the small-integer range.
 */
export class Rng {
  private readonly s = new Int32Array(4);

  constructor(seed: number) {
    const s = this.s;
    const a = splitmix32(seed);
    const b = splitmix32(a ^ 0x5bd1e995);
    s[0] = a;
    s[1] = b;
    s[2] = splitmix32(b ^ 0x1b873593);
    s[3] = 1;
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const s = this.s;
    const a = s[0]!;
    const b = s[1]!;
    const c = s[2]!;
    const d = s[3]!;
    const t = (((a + b) | 0) + d) | 0;
    s[3] = (d + 1) | 0;
    s[0] = b ^ (b >>> 9);
    s[1] = (c + (c << 3)) | 0;
    s[2] = (((c << 21) | (c >>> 11)) + t) | 0;
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
