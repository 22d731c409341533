/**
 * The index walks of RFC 9162 proof verification (2.1.3.2 inclusion, 2.1.4.2 consistency), apart from
 * hashing: which side each path element joins on. Pure (no Node, no WebCrypto), so the hub
 * (src/payment/merkle.ts, node:crypto) and the /wallet page (web/wallet/merkle.ts, WebCrypto) fold the
 * same steps with their own SHA-256.
 */

/**
 * For an inclusion proof of leaf `index` in a tree of `size` leaves with a path of `length` hashes:
 * for each path element, true when it is the left sibling (node = H(1 || p || r)), false when the
 * right one (node = H(1 || r || p)). null when no valid path has that length.
 */
export function inclusionSides(index: number, size: number, length: number): boolean[] | null {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return null;
  let fn = index;
  let sn = size - 1;
  const sides: boolean[] = [];
  for (let i = 0; i < length; i++) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      sides.push(true);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sides.push(false);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? sides : null;
}

export interface ConsistencyWalk {
  /** The first tree's root is the seed (first is a power of two): prepend it to the path. */
  seedIsFirstRoot: boolean;
  /**
   * For each path element after the seed: true when it joins both running roots on the left
   * (fr = H(1 || p || fr), sr = H(1 || p || sr)), false when it joins only the second on the right
   * (sr = H(1 || sr || p)).
   */
  steps: boolean[];
}

/**
 * The walk of a consistency proof from a tree of `first` leaves to one of `second` leaves with a path
 * of `length` hashes (0 < first < second). null when no valid proof has that length.
 */
export function consistencyWalk(first: number, second: number, length: number): ConsistencyWalk | null {
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(second) || first <= 0 || second <= first) return null;
  const seedIsFirstRoot = (first & (first - 1)) === 0;
  const total = seedIsFirstRoot ? length + 1 : length;
  if (total === 0) return null;
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  const steps: boolean[] = [];
  for (let i = 1; i < total; i++) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      steps.push(true);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      steps.push(false);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? { seedIsFirstRoot, steps } : null;
}
