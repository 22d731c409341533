import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, verify } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal } from '../support/refusal.js';

// Member identity of the reward plan (src/reward/signing.ts; docs/peers.md "Member signatures"):
// base64url without padding everywhere: a public key is the raw 32-byte Ed25519 key (43
// characters), a private key the PKCS#8 DER (48 bytes, 64 characters), a signature the raw 64 bytes
// (86 characters); a text that is not the canonical encoding of its bytes is refused. The signed
// messages are exactly `maru-work/1\n{id}\n{kc}\n{v}\n{ts}` and `maru-exchange/1\n{id}\n{amt}\n{ts}`.
// A signed request is checked in order: 401 signature_required, 403 no_member_key, 401
// invalid_signature (ts not an integer), 401 signature_expired (|now - ts| > 5 minutes: exactly 5
// is taken), 401 invalid_signature, 409 signature_replayed; a valid signature is remembered under
// `reward:worksig:{sig}` (set-if-absent) for 11 minutes, longer than the whole acceptance window. The
// registration hash is the hex SHA-256 of the canonical JSON of the registration fields. The module
// builds its pattern when it loads, so it is loaded afresh in each test.
const load = async () => {
  vi.resetModules();
  return import('../../src/reward/signing.js');
};

const T = 1_780_000_000_000;
const MIN = 60_000;
const keyPair = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { publicKey: publicKey.export({ format: 'jwk' }).x as string, privateKey: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64url'), keyObject: privateKey };
};
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
/** The same bytes with other unused low bits in the last character: not the canonical text. */
const nonCanonical = (text: string) => {
  const last = text.at(-1)!;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const other = alphabet[alphabet.indexOf(last) + 1]!;
  expect(Buffer.from(text.slice(0, -1) + other, 'base64url')).toEqual(Buffer.from(text, 'base64url'));
  return text.slice(0, -1) + other;
};

const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
afterEach(() => {
  vi.useRealTimers();
});
async function openStore() {
  const store = await openLmdbStore({ path: tempDir('reward-signing-rules') });
  stores.push(store);
  return store;
}

describe('constants', () => {
  it('the message prefixes, the 5-minute skew and the replay memory longer than the 10-minute window', async () => {
    const m = await load();
    expect(m.WORK_MESSAGE_PREFIX).toBe('maru-work/1');
    expect(m.EXCHANGE_MESSAGE_PREFIX).toBe('maru-exchange/1');
    expect(m.WORK_SIGNATURE_MAX_SKEW_MS).toBe(300_000);
    expect(m.WORK_SIGNATURE_REPLAY_TTL_MS).toBe(660_000);
  });
});

describe('keys', () => {
  it('a generated pair: 43-character raw public key, 64-character PKCS#8 DER private key of the same pair', async () => {
    const { generateMemberKeys, publicKeyOf, importPrivateKey, importPublicKey } = await load();
    const keys = generateMemberKeys();
    expect(Object.keys(keys).sort()).toEqual(['privateKey', 'publicKey']);
    expect(keys.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(keys.publicKey, 'base64url')).toHaveLength(32);
    expect(keys.privateKey).toMatch(/^[A-Za-z0-9_-]{64}$/);
    const der = Buffer.from(keys.privateKey, 'base64url');
    expect(der).toHaveLength(48);
    const priv = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    expect(priv.asymmetricKeyType).toBe('ed25519');
    expect(createPublicKey(priv).export({ format: 'jwk' }).x).toBe(keys.publicKey);
    expect(publicKeyOf(keys.privateKey)).toBe(keys.publicKey);
    expect(importPrivateKey(keys.privateKey).asymmetricKeyType).toBe('ed25519');
    expect(importPrivateKey(keys.privateKey).type).toBe('private');
    const pub = importPublicKey(keys.publicKey)!;
    expect([pub.type, pub.asymmetricKeyType]).toEqual(['public', 'ed25519']);
    expect(generateMemberKeys().publicKey).not.toBe(keys.publicKey);
  });

  it('a public key must be the canonical base64url of exactly 32 bytes', async () => {
    const { importPublicKey, isPublicKey } = await load();
    const { publicKey } = keyPair();
    expect(isPublicKey(publicKey)).toBe(true);
    const bad = [
      '',
      nonCanonical(publicKey),
      `${publicKey}=`,
      `${publicKey}A`,
      publicKey.slice(0, 42),
      randomBytes(31).toString('base64url'),
      randomBytes(33).toString('base64url'),
      Buffer.from(publicKey, 'base64url').toString('base64'),
      ` ${publicKey}`,
      `${publicKey}\n`,
      '!'.repeat(43),
    ];
    for (const k of bad) {
      expect(importPublicKey(k), k).toBeUndefined();
      expect(isPublicKey(k), k).toBe(false);
    }
    for (const k of [undefined, null, 43, {}, Buffer.from(publicKey, 'base64url')]) expect(isPublicKey(k)).toBe(false);
  });

  it('a private key must be the canonical base64url of a PKCS#8 DER Ed25519 key', async () => {
    const { importPrivateKey, publicKeyOf, signMessage } = await load();
    const { privateKey, publicKey } = keyPair();
    const malformed = 'private key must be base64url of a PKCS#8 DER Ed25519 key';
    for (const k of ['', 'not-a-key', `${privateKey}=`, `${privateKey}A`, publicKey, randomBytes(48).toString('base64url')]) {
      expect(() => importPrivateKey(k), k).toThrow(new TypeError(malformed));
      expect(() => publicKeyOf(k), k).toThrow(new TypeError(malformed));
      expect(() => signMessage(k, 'x'), k).toThrow(new TypeError(malformed));
    }
    for (const k of [undefined, 7, null]) expect(() => importPrivateKey(k as unknown as string)).toThrow(new TypeError(malformed));
    // well-formed PKCS#8 of another kind of key
    for (const type of ['x25519', 'ed448'] as const) {
      const other = generateKeyPairSync(type as 'x25519').privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64url');
      expect(() => importPrivateKey(other)).toThrow(new TypeError('private key is not an Ed25519 key'));
    }
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64url');
    expect(() => importPrivateKey(ec)).toThrow(new TypeError('private key is not an Ed25519 key'));
  });

  it('a key export without its x is an error, not a key', async () => {
    // Node's Ed25519 JWK always has x; the check stands against a runtime that would not give it
    vi.doMock('node:crypto', async (importOriginal) => {
      const real = await importOriginal<typeof import('node:crypto')>();
      const noX = { export: () => ({ kty: 'OKP', crv: 'Ed25519' }) };
      return {
        ...real,
        generateKeyPairSync: (type: 'ed25519') => ({ ...real.generateKeyPairSync(type), publicKey: noX }),
        createPublicKey: (key: Parameters<typeof real.createPublicKey>[0]) => (key instanceof real.KeyObject ? noX : real.createPublicKey(key)),
      };
    });
    try {
      const { generateMemberKeys, publicKeyOf } = await load();
      expect(() => generateMemberKeys()).toThrow(new Error('Ed25519 key export failed'));
      expect(() => publicKeyOf(keyPair().privateKey)).toThrow(new Error('Ed25519 key export failed'));
    } finally {
      vi.doUnmock('node:crypto');
    }
  });

  it('a registration nonce is base64url of 16 random bytes', async () => {
    const { registrationNonce } = await load();
    const a = registrationNonce();
    expect(a).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(Buffer.from(a, 'base64url')).toHaveLength(16);
    expect(registrationNonce()).not.toBe(a);
  });
});

describe('the registration hash', () => {
  const reg = { zone: 'seoul-1', name: '김마루', lang: 'ko', country: 'KR', nonce: 'n1' };

  it('is the hex SHA-256 of the canonical JSON of name, country, lang, zone, nonce (sorted keys)', async () => {
    const { registrationPayload, registrationHash } = await load();
    const payload = '{"country":"KR","lang":"ko","name":"김마루","nonce":"n1","zone":"seoul-1"}';
    expect(registrationPayload(reg)).toBe(payload);
    expect(registrationHash(reg)).toBe(sha256(payload));
    expect(registrationHash(reg)).toMatch(/^[0-9a-f]{64}$/);
    // fields outside the five (and the key) are not part of it
    expect(registrationPayload({ ...reg, extra: 'x' } as typeof reg)).toBe(payload);
  });

  it('includes a public key when one is given, and not an empty one', async () => {
    const { registrationPayload, registrationHash } = await load();
    const { publicKey } = keyPair();
    const payload = `{"country":"KR","lang":"ko","name":"김마루","nonce":"n1","public_key":"${publicKey}","zone":"seoul-1"}`;
    expect(registrationPayload({ ...reg, public_key: publicKey })).toBe(payload);
    expect(registrationHash({ ...reg, public_key: publicKey })).toBe(sha256(payload));
    expect(registrationPayload({ ...reg, public_key: '' })).toBe(registrationPayload(reg));
    expect(registrationPayload({ ...reg, public_key: undefined })).toBe(registrationPayload(reg));
  });

  it('every field changes it', async () => {
    const { registrationHash } = await load();
    const base = registrationHash(reg);
    for (const k of ['zone', 'name', 'lang', 'country', 'nonce'] as const) expect(registrationHash({ ...reg, [k]: `${reg[k]}x` }), k).not.toBe(base);
  });
});

describe('the work message', () => {
  const fields = { id: 'm_42', kc: 27, v: 150, ts: T + 123 };

  it('is exactly maru-work/1, id, kc, v and ts on their own lines', async () => {
    const { workMessage } = await load();
    expect(workMessage(fields)).toBe('maru-work/1\nm_42\n27\n150\n1780000000123');
    expect(workMessage({ id: 'x', kc: 0, v: -1, ts: 0 })).toBe('maru-work/1\nx\n0\n-1\n0');
    expect(workMessage({ ...fields, ts: Number.MAX_SAFE_INTEGER })).toBe(`maru-work/1\nm_42\n27\n150\n${Number.MAX_SAFE_INTEGER}`);
  });

  it('an id that is empty, not a text or holds a line break cannot be signed', async () => {
    const { workMessage } = await load();
    for (const id of ['', 'a\nb', 'a\rb', '\n', 'ab\r', 42]) {
      expect(() => workMessage({ ...fields, id: id as string }), JSON.stringify(id)).toThrow(new TypeError('work id must be a non-empty string without line breaks'));
    }
  });

  it('kc, v and ts must be safe integers', async () => {
    const { workMessage } = await load();
    const message = new TypeError('kc, v and ts must be integers');
    for (const k of ['kc', 'v', 'ts'] as const) {
      for (const bad of [1.5, Number.NaN, Infinity, 2 ** 53, '3']) {
        expect(() => workMessage({ ...fields, [k]: bad }), `${k}=${String(bad)}`).toThrow(message);
      }
    }
  });
});

describe('the exchange message', () => {
  const fields = { id: 'm_9', amt: '12.5', ts: T };

  it('is exactly maru-exchange/1, id, the amount as sent and ts on their own lines', async () => {
    const { exchangeMessage } = await load();
    expect(exchangeMessage(fields)).toBe('maru-exchange/1\nm_9\n12.5\n1780000000000');
    expect(exchangeMessage({ ...fields, amt: '012.50' })).toBe('maru-exchange/1\nm_9\n012.50\n1780000000000');
    expect(exchangeMessage({ ...fields, amt: '123456789012345' })).toBe('maru-exchange/1\nm_9\n123456789012345\n1780000000000');
    expect(exchangeMessage({ ...fields, amt: '0' })).toBe('maru-exchange/1\nm_9\n0\n1780000000000');
  });

  it('refuses an id that is empty, not a text or holds a line break', async () => {
    const { exchangeMessage } = await load();
    for (const id of ['', 'a\nb', 'a\rb', 7]) {
      expect(() => exchangeMessage({ ...fields, id: id as string })).toThrow(new TypeError('exchange id must be a non-empty string without line breaks'));
    }
  });

  it('the amount is 1 to 15 digits, optionally a point and more digits, as text', async () => {
    const { exchangeMessage } = await load();
    for (const amt of ['', '1e3', '1.', '.5', '-1', '+1', ' 1', '1 ', '1\n', '1.2.3', '1234567890123456', '1,5', 12.5]) {
      expect(() => exchangeMessage({ ...fields, amt: amt as string }), JSON.stringify(amt)).toThrow(new TypeError('amt must be a decimal number as text'));
    }
  });

  it('ts must be a safe integer', async () => {
    const { exchangeMessage } = await load();
    for (const ts of [1.5, 2 ** 53, Number.NaN, '1']) expect(() => exchangeMessage({ ...fields, ts: ts as number })).toThrow(new TypeError('ts must be an integer'));
  });
});

describe('signatures', () => {
  it('an Ed25519 signature of the UTF-8 bytes, 86 base64url characters, that verifies against the pair', async () => {
    const { signMessage, verifyMessage } = await load();
    const { privateKey, publicKey, keyObject } = keyPair();
    const message = 'maru-work/1\n회원\n1\n100\n0';
    const sig = signMessage(privateKey, message);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(sig).toBe(sign(null, Buffer.from(message, 'utf8'), keyObject).toString('base64url'));
    expect(verify(null, Buffer.from(message, 'utf8'), createPublicKey(keyObject), Buffer.from(sig, 'base64url'))).toBe(true);
    expect(verifyMessage(publicKey, message, sig)).toBe(true);
    expect(verifyMessage(publicKey, `${message} `, sig)).toBe(false);
    expect(verifyMessage(keyPair().publicKey, message, sig)).toBe(false);
  });

  it('a malformed key or signature is not valid, and nothing throws', async () => {
    const { signMessage, verifyMessage } = await load();
    const { privateKey, publicKey } = keyPair();
    const sig = signMessage(privateKey, 'm');
    for (const s of ['', 'x', sig.slice(0, 85), `${sig}A`, `${sig}=`, nonCanonical(sig), randomBytes(66).toString('base64url'), undefined, null, 7]) {
      expect(verifyMessage(publicKey, 'm', s as string), String(s)).toBe(false);
    }
    for (const k of ['', nonCanonical(publicKey), privateKey, undefined, 7]) expect(verifyMessage(k as string, 'm', sig), String(k)).toBe(false);
    // a message that is not text
    for (const message of [undefined, 7, null]) expect(verifyMessage(publicKey, message as unknown as string, sig)).toBe(false);
  });

  it('signWork and verifyWork sign and check the work message; a tampered field fails', async () => {
    const { signWork, verifyWork, workMessage, signMessage } = await load();
    const { privateKey, publicKey } = keyPair();
    const fields = { id: 'm_42', kc: 27, v: 150, ts: T };
    const sig = signWork(privateKey, fields);
    expect(sig).toBe(signMessage(privateKey, workMessage(fields)));
    expect(verifyWork(publicKey, fields, sig)).toBe(true);
    for (const f of [{ id: 'm_43' }, { kc: 26 }, { v: 151 }, { ts: T + 1 }]) expect(verifyWork(publicKey, { ...fields, ...f }, sig)).toBe(false);
    // fields that cannot be signed: false, not a throw
    expect(verifyWork(publicKey, { ...fields, id: 'a\nb' }, sig)).toBe(false);
    expect(() => signWork(privateKey, { ...fields, kc: 1.5 })).toThrow(TypeError);
  });
});

describe('a signed request', () => {
  const work = { id: 'm_7', kc: 3, v: 120 };
  const setup = async () => {
    const m = await load();
    const keys = keyPair();
    const sig = m.signWork(keys.privateKey, { ...work, ts: T });
    const used: string[] = [];
    const base = {
      publicKey: keys.publicKey as string | null | undefined,
      ...work,
      ts: T as number | string | null | undefined,
      sig: sig as string | null | undefined,
      now: T,
      usedSignature: async (s: string) => {
        used.push(s);
        return false;
      },
    };
    return { ...m, keys, sig, used, base };
  };

  it('resolves with ts and records the signature as used, last', async () => {
    const { verifyWorkRequest, base, used, sig } = await setup();
    await expect(verifyWorkRequest(base)).resolves.toBe(T);
    expect(used).toEqual([sig]);
  });

  it('without sig or ts: 401 signature_required, before anything else', async () => {
    const { verifyWorkRequest, base, used } = await setup();
    const want = { status: 401, code: 'signature_required', message: 'this route needs ts and sig: an Ed25519 signature of the work' };
    for (const missing of [{ sig: undefined }, { sig: null }, { sig: '' }, { ts: undefined }, { ts: null }, { ts: '' }]) {
      expect(await refusal(verifyWorkRequest({ ...base, publicKey: null, ...missing })), JSON.stringify(missing)).toEqual(want);
    }
    expect(used).toEqual([]);
  });

  it('a member without a key: 403 no_member_key, before the ts is read', async () => {
    const { verifyWorkRequest, base } = await setup();
    for (const publicKey of [undefined, null, '']) {
      expect(await refusal(verifyWorkRequest({ ...base, publicKey, ts: 'x' }))).toEqual({ status: 403, code: 'no_member_key', message: 'the member registered no public key, so its work cannot be signed' });
    }
  });

  it('ts must be an integer: a number, or 1 to 16 digits of text', async () => {
    const { verifyWorkRequest, base, signWork, keys } = await setup();
    const want = { status: 401, code: 'invalid_signature', message: 'ts must be an integer number of milliseconds' };
    for (const ts of ['12abc', ` ${T}`, `${T} `, `${T}\n`, `+${T}`, '-1', '1.5', '1e3', '12345678901234567', 1.5, Number.NaN, 2 ** 53]) {
      expect(await refusal(verifyWorkRequest({ ...base, ts })), String(ts)).toEqual(want);
    }
    // text of digits is read as a number (a query string), up to 16 digits
    await expect(verifyWorkRequest({ ...base, ts: String(T) })).resolves.toBe(T);
    await expect(verifyWorkRequest({ ...base, ts: `000${T}` })).resolves.toBe(T);
    const big = 9_007_199_254_740_991; // 16 digits, the largest safe integer
    const sig = signWork(keys.privateKey, { ...work, ts: big });
    await expect(verifyWorkRequest({ ...base, sig, ts: String(big), now: big })).resolves.toBe(big);
    // a number is taken as it is, a negative one too; as text only digits are read
    const early = signWork(keys.privateKey, { ...work, ts: -1 });
    await expect(verifyWorkRequest({ ...base, sig: early, ts: -1, now: 0 })).resolves.toBe(-1);
    expect(await refusal(verifyWorkRequest({ ...base, sig: early, ts: '-1', now: 0 }))).toEqual(want);
    const over = 9_999_999_999_999_999; // 16 digits, not safe
    expect(await refusal(verifyWorkRequest({ ...base, ts: String(over), now: over }))).toEqual(want);
  });

  it('5 minutes off either way is taken; one millisecond more is 401 signature_expired', async () => {
    const { verifyWorkRequest, base, used } = await setup();
    for (const now of [T + 5 * MIN, T - 5 * MIN]) await expect(verifyWorkRequest({ ...base, now })).resolves.toBe(T);
    for (const now of [T + 5 * MIN + 1, T - 5 * MIN - 1]) {
      expect(await refusal(verifyWorkRequest({ ...base, now }), { details: true })).toEqual({
        status: 401,
        code: 'signature_expired',
        message: 'the signature is older (or newer) than 5 minutes',
        details: { ts: T, now, max_skew_ms: 300_000 },
      });
    }
    expect(used).toHaveLength(2);
  });

  it('another window when asked (maxSkewMs), on both sides of it', async () => {
    const { verifyWorkRequest, base } = await setup();
    await expect(verifyWorkRequest({ ...base, now: T + 1000, maxSkewMs: 1000 })).resolves.toBe(T);
    await expect(verifyWorkRequest({ ...base, now: T - 1000, maxSkewMs: 1000 })).resolves.toBe(T);
    const e = await refusal(verifyWorkRequest({ ...base, now: T + 1001, maxSkewMs: 1000 }), { details: true });
    expect([e.code, e.details]).toEqual(['signature_expired', { ts: T, now: T + 1001, max_skew_ms: 1000 }]);
    expect((await refusal(verifyWorkRequest({ ...base, now: T - 1001, maxSkewMs: 1000 }))).code).toBe('signature_expired');
  });

  it('an expired signature is refused as expired even when it does not verify', async () => {
    const { verifyWorkRequest, base } = await setup();
    expect((await refusal(verifyWorkRequest({ ...base, kc: 4, now: T + 6 * MIN }))).code).toBe('signature_expired');
  });

  it('a signature that does not match the work and the key: 401 invalid_signature, not recorded', async () => {
    const { verifyWorkRequest, base, used, sig } = await setup();
    const want = { status: 401, code: 'invalid_signature', message: 'the signature does not match the work and the member key' };
    for (const change of [{ kc: 4 }, { v: 121 }, { id: 'm_8' }, { ts: T + 1 }, { sig: 'garbage' }, { sig: nonCanonical(sig) }, { publicKey: keyPair().publicKey }, { publicKey: 'short' }]) {
      expect(await refusal(verifyWorkRequest({ ...base, ...change })), JSON.stringify(change)).toEqual(want);
    }
    expect(used).toEqual([]);
  });

  it('a signature seen before: 409 signature_replayed', async () => {
    const { verifyWorkRequest, base, sig } = await setup();
    const seen: string[] = [];
    const usedSignature = async (s: string) => {
      seen.push(s);
      return true;
    };
    expect(await refusal(verifyWorkRequest({ ...base, usedSignature }))).toEqual({ status: 409, code: 'signature_replayed', message: 'this signature was already used' });
    expect(seen).toEqual([sig]);
  });

  it('an exchange is checked the same way against its own message, with its own words', async () => {
    const { verifySignedRequest, signMessage, exchangeMessage, keys } = await setup();
    const sig = signMessage(keys.privateKey, exchangeMessage({ id: 'm_9', amt: '12.5', ts: T }));
    const input = { publicKey: keys.publicKey, ts: T, sig, now: T, usedSignature: async () => false, what: 'exchange', message: (ts: number) => exchangeMessage({ id: 'm_9', amt: '12.5', ts }) };
    await expect(verifySignedRequest(input)).resolves.toBe(T);
    expect((await refusal(verifySignedRequest({ ...input, sig: '' }))).message).toBe('this route needs ts and sig: an Ed25519 signature of the exchange');
    expect((await refusal(verifySignedRequest({ ...input, publicKey: null }))).message).toBe('the member registered no public key, so its exchange cannot be signed');
    const wrong = await refusal(verifySignedRequest({ ...input, message: (ts) => exchangeMessage({ id: 'm_9', amt: '12.6', ts }) }));
    expect(wrong).toEqual({ status: 401, code: 'invalid_signature', message: 'the signature does not match the exchange and the member key' });
  });
});

describe('the store-backed guard', () => {
  const work = { id: 'm_7', kc: 3, v: 120 };
  const setup = async (opts?: { maxSkewMs?: number; replayTtlMs?: number }) => {
    const m = await load();
    const store = await openStore();
    const clock = new ManualClock(T);
    const keys = keyPair();
    const guard = new m.WorkSignatureGuard(store, clock, opts);
    const signed = (ts: number, id = work.id) => ({ publicKey: keys.publicKey, ...work, id, ts, sig: m.signWork(keys.privateKey, { ...work, id, ts }) });
    return { ...m, store, clock, keys, guard, signed };
  };

  it('takes a fresh signature once and remembers it under reward:worksig:{sig} with the id and the hub time', async () => {
    const { guard, signed, store, clock } = await setup();
    clock.advance(2000);
    const req = signed(T);
    await expect(guard.check(req)).resolves.toBe(T);
    expect(await store.get(`reward:worksig:${req.sig}`)).toEqual({ id: 'm_7', at: T + 2000 });
    expect(await refusal(guard.check(req))).toEqual({ status: 409, code: 'signature_replayed', message: 'this signature was already used' });
    // the record is not overwritten by the refused replay
    clock.advance(1000);
    await refusal(guard.check(req));
    expect(await store.get(`reward:worksig:${req.sig}`)).toEqual({ id: 'm_7', at: T + 2000 });
  });

  it('refuses at the hub clock: 5 minutes off is taken, one millisecond more is expired', async () => {
    const { guard, signed, clock } = await setup();
    clock.set(T + 5 * MIN);
    await expect(guard.check(signed(T))).resolves.toBe(T);
    clock.set(T - 5 * MIN);
    await expect(guard.check(signed(T, 'm_8'))).resolves.toBe(T);
    clock.set(T + 5 * MIN + 1);
    expect((await refusal(guard.check(signed(T, 'm_9')))).code).toBe('signature_expired');
    clock.set(T - 5 * MIN - 1);
    expect((await refusal(guard.check(signed(T, 'm_9')))).code).toBe('signature_expired');
  });

  it('its own skew window when given', async () => {
    const { guard, signed, clock } = await setup({ maxSkewMs: 1000 });
    clock.set(T + 1000);
    await expect(guard.check(signed(T))).resolves.toBe(T);
    clock.set(T + 1001);
    expect((await refusal(guard.check(signed(T, 'm_8')))).code).toBe('signature_expired');
  });

  it('a refused signature is not remembered', async () => {
    const { guard, signed, store } = await setup();
    const req = signed(T);
    await refusal(guard.check({ ...req, kc: 99 }));
    expect(await store.get(`reward:worksig:${req.sig}`)).toBeUndefined();
    await expect(guard.check(req)).resolves.toBe(T);
  });

  it('a second guard on the same store refuses the replay too', async () => {
    const { guard, signed, store, clock, WorkSignatureGuard } = await setup();
    const req = signed(T);
    await guard.check(req);
    expect((await refusal(new WorkSignatureGuard(store, clock).check(req))).code).toBe('signature_replayed');
  });

  it('checks an exchange against its message, in the same replay memory', async () => {
    const { guard, store, keys, signMessage, exchangeMessage } = await setup();
    const sig = signMessage(keys.privateKey, exchangeMessage({ id: 'm_9', amt: '12.5', ts: T }));
    const req = { publicKey: keys.publicKey, id: 'm_9', amt: '12.5', ts: T, sig };
    expect(await refusal(guard.checkExchange({ ...req, amt: '12.6' }))).toEqual({ status: 401, code: 'invalid_signature', message: 'the signature does not match the exchange and the member key' });
    await expect(guard.checkExchange(req)).resolves.toBe(T);
    expect(await store.get(`reward:worksig:${sig}`)).toEqual({ id: 'm_9', at: T });
    expect((await refusal(guard.checkExchange(req))).code).toBe('signature_replayed');
    // the same signature offered as work is refused by the same memory only if it verified, which it does not
    expect((await refusal(guard.check({ publicKey: keys.publicKey, ...work, ts: T, sig }))).code).toBe('invalid_signature');
  });

  it('the replay record lives 11 minutes: a replay 1 ms before is refused, at 11 minutes it is gone', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T);
    const { guard, signed, store } = await setup();
    const req = signed(T);
    await guard.check(req);
    vi.setSystemTime(T + 11 * MIN - 1);
    expect(await store.get(`reward:worksig:${req.sig}`)).toEqual({ id: 'm_7', at: T });
    expect((await refusal(guard.check(req))).code).toBe('signature_replayed');
    vi.setSystemTime(T + 11 * MIN);
    expect(await store.get(`reward:worksig:${req.sig}`)).toBeUndefined();
  });

  it('a signature first used at the start of its window is still refused at its very end (10 minutes later)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T);
    const { guard, signed, clock } = await setup();
    const req = signed(T + 5 * MIN);
    await expect(guard.check(req)).resolves.toBe(T + 5 * MIN); // the hub clock at ts - 5 minutes
    clock.advance(10 * MIN); // now ts + 5 minutes: still inside the window
    vi.setSystemTime(T + 10 * MIN);
    expect((await refusal(guard.check(req))).code).toBe('signature_replayed');
  });

  it('its own replay memory when given, on both sides of it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T);
    const { guard, signed } = await setup({ replayTtlMs: 1000 });
    const req = signed(T);
    await guard.check(req);
    vi.setSystemTime(T + 999);
    expect((await refusal(guard.check(req))).code).toBe('signature_replayed');
    vi.setSystemTime(T + 1000);
    await expect(guard.check(req)).resolves.toBe(T);
  });
});
