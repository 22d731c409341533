import { afterEach, describe, expect, it, vi } from 'vitest';

// Passwords (docs/auth.md): argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), 8 to 256
// characters; an unknown account is verified against a decoy, and never matches.
//
// argon2 is the real one, watched: the decoy's work (a hash made once per process, of a random text,
// then a verification against it) is what keeps an unknown account as slow as a known one.
const argon = vi.hoisted(() => ({ hash: [] as string[], verify: [] as [string, string][], forceVerify: undefined as boolean | undefined }));
vi.mock('@node-rs/argon2', async (importOriginal) => {
  const real = await importOriginal<typeof import('@node-rs/argon2')>();
  return {
    ...real,
    hash: async (password: string, opts: Parameters<typeof real.hash>[1]) => {
      argon.hash.push(password);
      return real.hash(password, opts);
    },
    verify: async (target: string, password: string) => {
      argon.verify.push([target, password]);
      const ok = await real.verify(target, password);
      return argon.forceVerify ?? ok;
    },
  };
});

const load = async () => {
  vi.resetModules();
  argon.hash.length = 0;
  argon.verify.length = 0;
  return import('../../src/auth/passwords.js');
};
afterEach(() => {
  argon.forceVerify = undefined;
});

describe('passwords', () => {
  it('are hashed with argon2id, m=19456, t=2, p=1', async () => {
    const { hashPassword } = await load();
    const h = await hashPassword('correct horse');
    expect(h).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await hashPassword('correct horse')).not.toBe(h); // salted
  });

  it('verify the right password only', async () => {
    const { hashPassword, verifyPassword } = await load();
    const h = await hashPassword('correct horse');
    expect(await verifyPassword(h, 'correct horse')).toBe(true);
    expect(await verifyPassword(h, 'correct hors')).toBe(false);
    expect(await verifyPassword(h, '')).toBe(false);
  });

  it('never verify for an unknown account or a damaged hash', async () => {
    const { verifyPassword } = await load();
    expect(await verifyPassword(undefined, 'anything')).toBe(false);
    expect(await verifyPassword(undefined, '')).toBe(false);
    expect(await verifyPassword('not a hash', 'x')).toBe(false);
  });

  it('an unknown account costs a real verification, against a decoy hashed once per process', async () => {
    const { verifyPassword } = await load();
    await verifyPassword(undefined, 'first');
    await verifyPassword(undefined, 'second');
    expect(argon.hash).toHaveLength(1);
    const decoy = argon.verify[0]![0];
    expect(decoy).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(argon.verify).toEqual([
      [decoy, 'first'],
      [decoy, 'second'],
    ]);
  });

  it('the decoy is of a random text: another process hashes another one, never the empty text', async () => {
    await (await load()).verifyPassword(undefined, 'x');
    const [first] = argon.hash;
    await (await load()).verifyPassword(undefined, 'x');
    const [second] = argon.hash;
    expect(first).toMatch(/^decoy-0\.\d+/);
    expect(second).not.toBe(first);
  });

  it('an unknown account is refused even if its decoy verified', async () => {
    const { hashPassword, verifyPassword } = await load();
    argon.forceVerify = true;
    expect(await verifyPassword(undefined, 'anything')).toBe(false);
    expect(await verifyPassword(await hashPassword('pw'), 'pw')).toBe(true);
  });

  it('are 8 to 256 characters', async () => {
    const { MAX_PASSWORD, MIN_PASSWORD } = await load();
    expect(MIN_PASSWORD).toBe(8);
    expect(MAX_PASSWORD).toBe(256);
  });
});
