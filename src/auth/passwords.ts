import { hash, verify } from '@node-rs/argon2';

/**
 * Password hashing: argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane). The PHC string
 * keeps the parameters, so a later change of them still verifies old hashes.
 */
const OWASP = { algorithm: 2 /* Argon2id */, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const MIN_PASSWORD = 8;
export const MAX_PASSWORD = 256;

export function hashPassword(password: string): Promise<string> {
  return hash(password, OWASP);
}

/** A hash of nothing anyone knows: verified against when the account does not exist, so timing does not tell. */
let decoy: Promise<string> | undefined;

/** Verifies in constant time (argon2's own comparison); an unknown account costs the same. */
export async function verifyPassword(stored: string | undefined, password: string): Promise<boolean> {
  const target = stored ?? (await (decoy ??= hashPassword(`decoy-${Math.random()}`)));
  try {
    const ok = await verify(target, password);
    return ok && stored !== undefined;
  } catch {
    return false;
  }
}
