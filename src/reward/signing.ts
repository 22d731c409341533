import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign as cryptoSign,
  verify as cryptoVerify,
  type KeyObject,
} from 'node:crypto';
import { canonicalJson, sha256Hex } from '../canonical.js';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { Store } from '../store/port.js';

/**
 * Member identity for the reward plan: Ed25519 keys, registration hashes and work signatures.
 *
 * Formats (all text is base64url without padding, RFC 4648 section 5):
 * - public key: the raw 32-byte Ed25519 public key (the `x` of its JWK), 43 characters;
 * - private key: the PKCS#8 DER encoding of the private key (48 bytes for Ed25519), 64 characters;
 * - signature: the raw 64-byte Ed25519 signature, 86 characters.
 *
 * The signed message of one unit of work is the exact string
 *   maru-work/1\n{id}\n{kc}\n{v}\n{ts}
 * with kc and v as decimal integers and ts the signing instant in Unix milliseconds.
 *
 * The signed message of an exchange (/exchange with REWARD_SIGNING=required) is
 *   maru-exchange/1\n{id}\n{amt}\n{ts}
 * with amt exactly as sent (the decimal text of the RU amount).
 */

export const WORK_MESSAGE_PREFIX = 'maru-work/1';
export const EXCHANGE_MESSAGE_PREFIX = 'maru-exchange/1';
/** A signature older or newer than this (relative to the hub clock) is refused. */
export const WORK_SIGNATURE_MAX_SKEW_MS = 5 * 60_000;
/**
 * How long a used signature is remembered: longer than the whole acceptance window, which runs
 * from 5 minutes before ts to 5 minutes after it, both ends included (a signature first used at
 * the window's start can be offered again 10 minutes later, at its end), with a minute to spare.
 */
export const WORK_SIGNATURE_REPLAY_TTL_MS = 11 * 60_000;

const B64URL = /^[A-Za-z0-9_-]+$/;
const PUBLIC_KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;

export interface MemberKeys {
  /** base64url of the raw 32-byte Ed25519 public key. */
  publicKey: string;
  /** base64url of the PKCS#8 DER private key. Keep it secret. */
  privateKey: string;
}

export interface WorkFields {
  id: string;
  kc: number;
  v: number;
  /** Unix milliseconds. */
  ts: number;
}

export interface RegistrationFields {
  name: string;
  country: string;
  lang: string;
  zone: string;
  public_key?: string;
  nonce: string;
}


export function generateMemberKeys(): MemberKeys {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('Ed25519 key export failed');
  const der = privateKey.export({ type: 'pkcs8', format: 'der' });
  return { publicKey: jwk.x, privateKey: der.toString('base64url') };
}

/** A fresh random nonce for a registration (base64url of 16 random bytes). */
export function registrationNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** The canonical payload of a registration (what registrationHash hashes). */
export function registrationPayload(fields: RegistrationFields): string {
  const payload: Record<string, string> = {
    name: fields.name,
    country: fields.country,
    lang: fields.lang,
    zone: fields.zone,
    nonce: fields.nonce,
  };
  if (fields.public_key !== undefined && fields.public_key !== '') payload.public_key = fields.public_key;
  return canonicalJson(payload);
}

/** Hex SHA-256 of the canonical JSON of the registration fields (sorted keys). */
export function registrationHash(fields: RegistrationFields): string {
  return sha256Hex(registrationPayload(fields));
}

function isInt(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n);
}

/** The exact string that is signed for one unit of work. Throws on fields that cannot be signed. */
export function workMessage(fields: WorkFields): string {
  const { id, kc, v, ts } = fields;
  if (typeof id !== 'string' || id.length === 0 || /[\r\n]/.test(id)) {
    throw new TypeError('work id must be a non-empty string without line breaks');
  }
  if (!isInt(kc) || !isInt(v) || !isInt(ts)) throw new TypeError('kc, v and ts must be integers');
  return `${WORK_MESSAGE_PREFIX}\n${id}\n${kc}\n${v}\n${ts}`;
}

function decodeB64url(text: unknown, bytes?: number): Buffer | undefined {
  if (typeof text !== 'string' || !B64URL.test(text)) return undefined;
  const buf = Buffer.from(text, 'base64url');
  if (buf.toString('base64url') !== text) return undefined; // non-canonical encoding
  if (bytes !== undefined && buf.length !== bytes) return undefined;
  return buf;
}

/** The public KeyObject for a base64url raw Ed25519 key, or undefined when malformed. */
export function importPublicKey(publicKey: string): KeyObject | undefined {
  if (!decodeB64url(publicKey, PUBLIC_KEY_BYTES)) return undefined;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });
  } catch {
    return undefined;
  }
}

/** Whether a string is a well-formed member public key. */
export function isPublicKey(publicKey: unknown): publicKey is string {
  return typeof publicKey === 'string' && importPublicKey(publicKey) !== undefined;
}

/** The private KeyObject for a base64url PKCS#8 DER key; throws on a malformed key. */
export function importPrivateKey(privateKey: string): KeyObject {
  const der = decodeB64url(privateKey);
  if (!der) throw new TypeError('private key must be base64url of a PKCS#8 DER Ed25519 key');
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } catch {
    throw new TypeError('private key must be base64url of a PKCS#8 DER Ed25519 key');
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new TypeError('private key is not an Ed25519 key');
  return key;
}

/** The public key (base64url raw) that belongs to a private key. */
export function publicKeyOf(privateKey: string): string {
  const jwk = createPublicKey(importPrivateKey(privateKey)).export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('Ed25519 key export failed');
  return jwk.x;
}

export interface ExchangeFields {
  id: string;
  /** The RU amount as its decimal text, exactly as sent. */
  amt: string;
  ts: number;
}

/** The exact string that is signed for one exchange. Throws on fields that cannot be signed. */
export function exchangeMessage(fields: ExchangeFields): string {
  const { id, amt, ts } = fields;
  if (typeof id !== 'string' || id.length === 0 || /[\r\n]/.test(id)) {
    throw new TypeError('exchange id must be a non-empty string without line breaks');
  }
  if (typeof amt !== 'string' || !/^\d{1,15}(\.\d+)?$/.test(amt)) throw new TypeError('amt must be a decimal number as text');
  if (!isInt(ts)) throw new TypeError('ts must be an integer');
  return `${EXCHANGE_MESSAGE_PREFIX}\n${id}\n${amt}\n${ts}`;
}

/** base64url Ed25519 signature of a message. Throws on a malformed key. */
export function signMessage(privateKey: string, message: string): string {
  return cryptoSign(null, Buffer.from(message, 'utf8'), importPrivateKey(privateKey)).toString('base64url');
}

/** base64url Ed25519 signature of workMessage(fields). Throws on a malformed key or fields. */
export function signWork(privateKey: string, fields: WorkFields): string {
  return signMessage(privateKey, workMessage(fields));
}

/** Whether sig is a valid signature of the fields by publicKey. False on anything malformed; never throws. */
export function verifyWork(publicKey: string, fields: WorkFields, sig: string): boolean {
  try {
    return verifyMessage(publicKey, workMessage(fields), sig);
  } catch {
    return false;
  }
}

/** Whether sig is a valid signature of the message by publicKey. False on anything malformed; never throws. */
export function verifyMessage(publicKey: string, message: string, sig: string): boolean {
  try {
    const key = importPublicKey(publicKey);
    const signature = decodeB64url(sig, SIGNATURE_BYTES);
    if (!key || !signature) return false;
    return cryptoVerify(null, Buffer.from(message, 'utf8'), key, signature);
  } catch {
    return false;
  }
}

export interface WorkRequest {
  /** The member's registered public key; null/undefined when the member registered none. */
  publicKey?: string | null;
  id: string;
  kc: number;
  v: number;
  /** As received (query strings give text); must be integer milliseconds. */
  ts?: number | string | null;
  sig?: string | null;
}

export interface VerifyWorkRequestInput extends WorkRequest {
  /** Hub clock, Unix milliseconds. */
  now: number;
  /**
   * Records the signature as used and tells whether it had been used before. Called only for a
   * signature that is otherwise valid, last.
   */
  usedSignature: (sig: string) => Promise<boolean>;
  maxSkewMs?: number;
}

/**
 * Checks a signed /work request, in this order, and throws the first failure:
 * 401 signature_required (sig or ts missing), 403 no_member_key (member registered no key),
 * 401 invalid_signature (ts not an integer, or the signature does not verify),
 * 401 signature_expired (|now - ts| > 5 minutes), 409 signature_replayed (signature seen before).
 * Resolves with the accepted ts.
 */
export function verifyWorkRequest(input: VerifyWorkRequestInput): Promise<number> {
  const { id, kc, v } = input;
  return verifySignedRequest({ ...input, what: 'work', message: (ts) => workMessage({ id, kc, v, ts }) });
}

export interface SignedRequestInput {
  publicKey?: string | null;
  ts?: number | string | null;
  sig?: string | null;
  now: number;
  usedSignature: (sig: string) => Promise<boolean>;
  maxSkewMs?: number;
  /** What was signed, for messages: 'work', 'exchange'. */
  what: string;
  /** The signed message for the accepted ts. */
  message: (ts: number) => string;
}

/** The checks of verifyWorkRequest, for any signed message. */
export async function verifySignedRequest(input: SignedRequestInput): Promise<number> {
  const { publicKey, sig, now, what } = input;
  const maxSkew = input.maxSkewMs ?? WORK_SIGNATURE_MAX_SKEW_MS;
  const rawTs = input.ts;
  if (sig === undefined || sig === null || sig === '' || rawTs === undefined || rawTs === null || rawTs === '') {
    throw new AppError('unauthorized', 'signature_required', `this route needs ts and sig: an Ed25519 signature of the ${what}`);
  }
  if (publicKey === undefined || publicKey === null || publicKey === '') {
    throw new AppError('forbidden', 'no_member_key', `the member registered no public key, so its ${what} cannot be signed`);
  }
  const ts = typeof rawTs === 'number' ? rawTs : /^\d{1,16}$/.test(rawTs) ? Number(rawTs) : Number.NaN;
  if (!Number.isSafeInteger(ts)) {
    throw new AppError('unauthorized', 'invalid_signature', 'ts must be an integer number of milliseconds');
  }
  if (Math.abs(now - ts) > maxSkew) {
    throw new AppError('unauthorized', 'signature_expired', 'the signature is older (or newer) than 5 minutes', {
      ts,
      now,
      max_skew_ms: maxSkew,
    });
  }
  if (!verifyMessage(publicKey, input.message(ts), sig)) {
    throw new AppError('unauthorized', 'invalid_signature', `the signature does not match the ${what} and the member key`);
  }
  if (await input.usedSignature(sig)) {
    throw new AppError('conflict', 'signature_replayed', 'this signature was already used');
  }
  return ts;
}

/**
 * The replay-protected check used by the /work route. Used signatures are remembered in the store
 * under `reward:worksig:{sig}` for 11 minutes with set-if-absent, so with Redis two hub processes
 * also refuse each other's replays.
 */
export class WorkSignatureGuard {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly opts: { maxSkewMs?: number; replayTtlMs?: number } = {},
  ) {}

  /** Throws AppError (401/403/409) as verifyWorkRequest does; resolves with the accepted ts. */
  check(req: WorkRequest): Promise<number> {
    return verifyWorkRequest({ ...req, ...this.context(req.id) });
  }

  /** The same checks for a signed exchange (exchangeMessage); one replay memory for both kinds. */
  checkExchange(req: { publicKey?: string | null; id: string; amt: string; ts?: number | string | null; sig?: string | null }): Promise<number> {
    return verifySignedRequest({
      ...req,
      ...this.context(req.id),
      what: 'exchange',
      message: (ts) => exchangeMessage({ id: req.id, amt: req.amt, ts }),
    });
  }

  private context(id: string) {
    const now = this.clock.now();
    return {
      now,
      maxSkewMs: this.opts.maxSkewMs,
      usedSignature: async (sig: string) => {
        const fresh = await this.store.set(
          `reward:worksig:${sig}`,
          { id, at: now },
          { ifAbsent: true, ttlMs: this.opts.replayTtlMs ?? WORK_SIGNATURE_REPLAY_TTL_MS },
        );
        return !fresh;
      },
    };
  }
}
