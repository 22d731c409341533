import { describe, expect, it } from 'vitest';
import { MAX_PASSWORD, MIN_PASSWORD, hashPassword, verifyPassword } from '../../src/auth/passwords.js';

// Passwords (docs/auth.md): argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), 8 to 256
// characters; an unknown account is verified against a decoy, and never matches.

describe('passwords', () => {
  it('are hashed with argon2id, m=19456, t=2, p=1', async () => {
    const h = await hashPassword('correct horse');
    expect(h).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await hashPassword('correct horse')).not.toBe(h); // salted
  });

  it('verify the right password only', async () => {
    const h = await hashPassword('correct horse');
    expect(await verifyPassword(h, 'correct horse')).toBe(true);
    expect(await verifyPassword(h, 'correct hors')).toBe(false);
    expect(await verifyPassword(h, '')).toBe(false);
  });

  it('never verify for an unknown account or a damaged hash', async () => {
    expect(await verifyPassword(undefined, 'anything')).toBe(false);
    expect(await verifyPassword(undefined, '')).toBe(false);
    expect(await verifyPassword('not a hash', 'x')).toBe(false);
  });

  it('are 8 to 256 characters', () => {
    expect(MIN_PASSWORD).toBe(8);
    expect(MAX_PASSWORD).toBe(256);
  });
});
