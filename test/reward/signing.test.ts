import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import {
  generateMemberKeys,
  publicKeyOf,
  registrationHash,
  registrationPayload,
  signWork,
  verifyWork,
  verifyWorkRequest,
  workMessage,
  WorkSignatureGuard,
  exchangeMessage,
  verifyMessage,
} from '../../src/reward/signing.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { until } from '../support/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/src/reward/cli.js');
const SOURCES = ['src/reward/cli.ts', 'src/reward/signing.ts'].map((p) => join(ROOT, p));
const BUILT = ['dist/src/reward/cli.js', 'dist/src/reward/signing.js'].map((p) => join(ROOT, p));

async function appError(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected an AppError');
}

describe('Ed25519 member keys and work signatures', () => {
  const keys = generateMemberKeys();
  const fields = { id: 'm_42', kc: 27, v: 150, ts: 1_780_000_000_123 };

  it('keys have the documented formats', () => {
    expect(keys.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(keys.publicKey, 'base64url')).toHaveLength(32);
    const der = Buffer.from(keys.privateKey, 'base64url');
    expect(der).toHaveLength(48); // PKCS#8 DER of an Ed25519 key
    expect(der.subarray(0, 2).toString('hex')).toBe('302e');
    expect(publicKeyOf(keys.privateKey)).toBe(keys.publicKey);
  });

  it('signs the exact canonical work message', () => {
    expect(workMessage(fields)).toBe('maru-work/1\nm_42\n27\n150\n1780000000123');
    expect(() => workMessage({ ...fields, id: 'a\nb' })).toThrow();
    expect(() => workMessage({ ...fields, kc: 1.5 })).toThrow();
  });

  it('round-trips; any tampered field, signature or key fails without throwing', () => {
    const sig = signWork(keys.privateKey, fields);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(verifyWork(keys.publicKey, fields, sig)).toBe(true);
    expect(verifyWork(keys.publicKey, { ...fields, id: 'm_43' }, sig)).toBe(false);
    expect(verifyWork(keys.publicKey, { ...fields, kc: 28 }, sig)).toBe(false);
    expect(verifyWork(keys.publicKey, { ...fields, v: 200 }, sig)).toBe(false);
    expect(verifyWork(keys.publicKey, { ...fields, ts: fields.ts + 1 }, sig)).toBe(false);
    const flipped = (sig[10] === 'A' ? 'B' : 'A') + '';
    expect(verifyWork(keys.publicKey, fields, sig.slice(0, 10) + flipped + sig.slice(11))).toBe(false);
    expect(verifyWork(generateMemberKeys().publicKey, fields, sig)).toBe(false);
    for (const badKey of ['', 'short', '!'.repeat(43), keys.privateKey]) expect(verifyWork(badKey, fields, sig)).toBe(false);
    for (const badSig of ['', 'x', sig.slice(0, 85), `${sig}A`, `${sig.slice(0, 85)}=`]) {
      expect(verifyWork(keys.publicKey, fields, badSig)).toBe(false);
    }
    expect(verifyWork(keys.publicKey, { ...fields, id: 'a\nb' }, sig)).toBe(false);
    expect(() => signWork('not-a-key', fields)).toThrow(/PKCS#8/);
  });

  it('registration hash: sha256 of the canonical payload with sorted keys', () => {
    const reg = { zone: 'seoul-1', name: '김마루', lang: 'ko', country: 'KR', nonce: 'n1' };
    const payload = registrationPayload(reg);
    expect(payload).toBe('{"country":"KR","lang":"ko","name":"김마루","nonce":"n1","zone":"seoul-1"}');
    expect(registrationHash(reg)).toBe(createHash('sha256').update(payload, 'utf8').digest('hex'));
    expect(registrationHash({ nonce: 'n1', country: 'KR', zone: 'seoul-1', lang: 'ko', name: '김마루' })).toBe(registrationHash(reg));
    const withKey = registrationHash({ ...reg, public_key: keys.publicKey });
    expect(withKey).not.toBe(registrationHash(reg));
    expect(registrationHash({ ...reg, nonce: 'n2' })).not.toBe(registrationHash(reg));
  });
});

describe('verifyWorkRequest and WorkSignatureGuard', () => {
  const keys = generateMemberKeys();
  const now = 1_780_000_000_000;
  const work = { id: 'm_7', kc: 3, v: 120 };
  let dir: string;
  let store: Store;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'maru-sig-'));
    store = await openLmdbStore({ path: join(dir, 'store') });
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const neverUsed = async () => false;

  it('refuses missing, keyless, malformed, expired and invalid signatures with the documented codes', async () => {
    const sig = signWork(keys.privateKey, { ...work, ts: now });
    const base = { publicKey: keys.publicKey, ...work, ts: now, sig, now, usedSignature: neverUsed };
    for (const missing of [{ sig: undefined }, { ts: undefined }, { sig: '' }, { ts: null }]) {
      const e = await appError(verifyWorkRequest({ ...base, ...missing }));
      expect([e.status, e.code]).toEqual([401, 'signature_required']);
    }
    const noKey = await appError(verifyWorkRequest({ ...base, publicKey: null }));
    expect([noKey.status, noKey.code]).toEqual([403, 'no_member_key']);
    const badTs = await appError(verifyWorkRequest({ ...base, ts: '12abc' }));
    expect([badTs.status, badTs.code]).toEqual([401, 'invalid_signature']);
    for (const skew of [5 * 60_000 + 1, -(5 * 60_000 + 1)]) {
      const e = await appError(verifyWorkRequest({ ...base, now: now + skew }));
      expect([e.status, e.code]).toEqual([401, 'signature_expired']);
    }
    // Exactly 5 minutes is still accepted; the ts may come as query text.
    await expect(verifyWorkRequest({ ...base, now: now + 5 * 60_000, ts: String(now) })).resolves.toBe(now);
    const tampered = await appError(verifyWorkRequest({ ...base, kc: 4 }));
    expect([tampered.status, tampered.code]).toEqual([401, 'invalid_signature']);
    const garbage = await appError(verifyWorkRequest({ ...base, sig: 'garbage' }));
    expect(garbage.code).toBe('invalid_signature');
    const otherKey = await appError(verifyWorkRequest({ ...base, publicKey: generateMemberKeys().publicKey }));
    expect(otherKey.code).toBe('invalid_signature');
  });

  it('the guard accepts a fresh signature once and answers 409 signature_replayed after (store-backed)', async () => {
    const clock = new ManualClock(now);
    const guard = new WorkSignatureGuard(store, clock);
    const sig = signWork(keys.privateKey, { ...work, ts: now - 1000 });
    const req = { publicKey: keys.publicKey, ...work, ts: now - 1000, sig };
    await expect(guard.check(req)).resolves.toBe(now - 1000);
    const replay = await appError(guard.check(req));
    expect([replay.status, replay.code]).toEqual([409, 'signature_replayed']);
    // A second guard on the same store (another process on the same Redis) refuses it too.
    const replay2 = await appError(new WorkSignatureGuard(store, clock).check(req));
    expect(replay2.code).toBe('signature_replayed');
    // An invalid signature is not recorded: fixing it afterwards still works.
    const sig2 = signWork(keys.privateKey, { ...work, ts: now });
    await appError(guard.check({ ...req, ts: now, sig: sig2, kc: 99 }));
    await expect(guard.check({ ...req, ts: now, sig: sig2 })).resolves.toBe(now);
    // Past the acceptance window the answer is expiry, whatever the replay set says.
    clock.advance(6 * 60_000);
    expect((await appError(guard.check(req))).code).toBe('signature_expired');
  });

  it('the replay record lives for its TTL', async () => {
    const clock = new ManualClock(now);
    const guard = new WorkSignatureGuard(store, clock, { replayTtlMs: 1000 });
    const sig = signWork(keys.privateKey, { ...work, id: 'm_ttl', ts: now });
    const req = { publicKey: keys.publicKey, ...work, id: 'm_ttl', ts: now, sig };
    await guard.check(req);
    expect((await appError(guard.check(req))).code).toBe('signature_replayed');
    // The TTL is the store's (real time): wait for the record to go, not for a fixed time.
    const accepted = await until('the replay record to expire', () => guard.check(req).then((t) => t === now, () => false), 10_000, 50);
    expect(accepted).toBe(true);
  });
});

describe('reward CLI as a child process', () => {
  beforeAll(() => {
    const fresh = () =>
      BUILT.every((b) => existsSync(b)) &&
      Math.min(...BUILT.map((b) => statSync(b).mtimeMs)) >= Math.max(...SOURCES.map((s) => statSync(s).mtimeMs));
    if (!fresh()) {
      try {
        execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'pipe' });
      } catch {
        // tsc emits even when another file of the tree does not type-check yet; freshness decides.
      }
    }
    if (!fresh()) throw new Error(`could not build ${CLI}`);
  }, 120_000);

  function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolvePromise) => {
      execFile(process.execPath, [CLI, ...args], { cwd: ROOT }, (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolvePromise({ code, stdout, stderr });
      });
    });
  }

  it('sign-exchange signs the exchange message that the hub verifies; a bad amount is a usage error', async () => {
    const keys = JSON.parse((await run('keygen')).stdout) as { publicKey: string; privateKey: string };
    const r = await run('sign-exchange', '--id', 'm_9', '--amt', '12.5', '--ts', '1780000000000', '--key', keys.privateKey);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { ts: number; sig: string; exchange: string; message: string };
    expect(out.message).toBe('maru-exchange/1\nm_9\n12.5\n1780000000000');
    expect(verifyMessage(keys.publicKey, exchangeMessage({ id: 'm_9', amt: '12.5', ts: 1780000000000 }), out.sig)).toBe(true);
    expect(verifyMessage(keys.publicKey, exchangeMessage({ id: 'm_9', amt: '12.6', ts: 1780000000000 }), out.sig)).toBe(false);
    expect(out.exchange).toBe(`/exchange?id=m_9&amt=12.5&ts=1780000000000&sig=${out.sig}`);
    const bad = await run('sign-exchange', '--id', 'm_9', '--amt', '1e3', '--key', keys.privateKey);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/amt must be a decimal number/);
  });

  it('keygen -> sign-work -> verify-work, with exit codes', async () => {
    const kg = await run('keygen');
    expect(kg.code).toBe(0);
    const keys = JSON.parse(kg.stdout) as { publicKey: string; privateKey: string };
    expect(publicKeyOf(keys.privateKey)).toBe(keys.publicKey);

    const before = Date.now();
    const sw = await run('sign-work', '--id', 'm_1', '--kc', '27', '--v', '150', '--key', keys.privateKey);
    expect(sw.code).toBe(0);
    const signed = JSON.parse(sw.stdout) as { ts: number; sig: string; query: string; work: string };
    expect(signed.ts).toBeGreaterThanOrEqual(before);
    expect(signed.ts).toBeLessThanOrEqual(Date.now());
    expect(signed.query).toBe(`ts=${signed.ts}&sig=${signed.sig}`);
    expect(signed.work).toBe(`/work?id=m_1&kc=27&v=150&ts=${signed.ts}&sig=${signed.sig}`);
    expect(verifyWork(keys.publicKey, { id: 'm_1', kc: 27, v: 150, ts: signed.ts }, signed.sig)).toBe(true);

    const ok = await run('verify-work', '--id', 'm_1', '--kc', '27', '--v', '150', '--ts', String(signed.ts), '--sig', signed.sig, '--public-key', keys.publicKey);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ valid: true });
    const bad = await run('verify-work', '--id', 'm_1', '--kc', '28', '--v', '150', '--ts', String(signed.ts), '--sig', signed.sig, '--public-key', keys.publicKey);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toEqual({ valid: false });

    const fixed = await run('sign-work', '--id', 'm_1', '--kc', '1', '--v', '100', '--ts', '1780000000000', '--key', keys.privateKey);
    expect(JSON.parse(fixed.stdout)).toMatchObject({ ts: 1780000000000, message: 'maru-work/1\nm_1\n1\n100\n1780000000000' });
  });

  it('takes a signature or key that begins with "-" as the value of its option', async () => {
    const keys = generateMemberKeys();
    let ts = 1780000000000;
    let sig = signWork(keys.privateKey, { id: 'm_1', kc: 27, v: 150, ts });
    while (!sig.startsWith('-')) sig = signWork(keys.privateKey, { id: 'm_1', kc: 27, v: 150, ts: ++ts });
    const ok = await run('verify-work', '--id', 'm_1', '--kc', '27', '--v', '150', '--ts', String(ts), '--sig', sig, '--public-key', keys.publicKey);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ valid: true });
    const missing = await run('verify-work', '--id', 'm_1', '--kc', '27', '--v', '150', '--ts', String(ts), '--public-key', keys.publicKey, '--sig');
    expect(missing.code).toBe(2);
  });

  it('register prints the registration hash and canonical payload', async () => {
    const r = await run('register', '--name', 'Maru', '--country', 'KR', '--lang', 'ko', '--zone', 'seoul-1', '--nonce', 'abc');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { hash: string; payload: string };
    const fields = { name: 'Maru', country: 'KR', lang: 'ko', zone: 'seoul-1', nonce: 'abc' };
    expect(out.hash).toBe(registrationHash(fields));
    expect(out.payload).toBe(registrationPayload(fields));
    const random = await run('register', '--name', 'Maru', '--country', 'KR', '--lang', 'ko', '--zone', 'seoul-1');
    expect((JSON.parse(random.stdout) as { hash: string }).hash).not.toBe(out.hash);
  });

  it('bad flags and commands: a clear error on stderr and exit code 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['frobnicate'], /unknown command "frobnicate"/],
      [['sign-work', '--id', 'm_1', '--kc', 'x', '--v', '1', '--key', 'k'], /--kc must be an integer/],
      [['sign-work', '--id', 'm_1', '--kc', '1', '--v', '1'], /--key is required/],
      [['sign-work', '--id', 'm_1', '--kc', '1', '--v', '1', '--key', 'nope'], /--key: private key/],
      [['sign-work', '--id', 'm_1', '--kc', '1', '--v', '1', '--key', 'k', '--bogus', '1'], /Unknown option '--bogus'/],
      [['register', '--name', 'N', '--country', 'Korea', '--lang', 'ko', '--zone', 'z'], /--country must be a two-letter code/],
      [['register', '--name', 'N', '--country', 'KR', '--lang', 'ko', '--zone', 'z', '--public-key', 'zzz'], /--public-key/],
      [['verify-work', '--id', 'm_1', '--kc', '1', '--v', '1', '--sig', 's', '--public-key', 'k'], /--ts is required/],
    ];
    for (const [args, message] of cases) {
      const r = await run(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
    const help = await run('help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/sign-work --id ID --kc N --v N \[--ts MS\] --key PRIVATE/);
  });
});
